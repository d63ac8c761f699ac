"""Which graph core runs is never a secret: the build, the wheel, the first analysis, --version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from whyalive import find_leaks
from whyalive.cli import main
from whyalive.graph import core as graphcore

ROOT = Path(__file__).resolve().parent.parent


def _source_copy(tmp_path: Path) -> Path:
    """The files a build reads, copied, so parallel builds never share a build/ folder."""
    tree = tmp_path / "src-tree"
    tree.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(
        ROOT / "src",
        tree / "src",
        ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info"),
    )
    return tree


def _build_wheel(tree: Path, out: Path, **env: str) -> tuple[Path, str]:
    pytest.importorskip("setuptools")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(tree),
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "-v",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    return wheel, done.stdout + done.stderr


def test_a_build_without_a_compiler_warns_and_makes_a_pure_wheel(tmp_path: Path) -> None:
    """No C compiler: the build log warns, and the wheel is py3-none-any without the C core."""
    wheel, log = _build_wheel(_source_copy(tmp_path), tmp_path / "wheels", CC="false")
    assert wheel.name == "whyalive-0.1.0-py3-none-any.whl"
    assert "WARNING: whyalive: the C graph core (whyalive.graph._fastgraph) was not built" in log
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read("whyalive-0.1.0.dist-info/WHEEL").decode()
    assert not [n for n in names if n.endswith((".so", ".pyd"))]
    assert "whyalive/graph/twin.py" in names
    assert "Root-Is-Purelib: true" in metadata
    assert "Tag: py3-none-any" in metadata


def test_a_build_with_a_compiler_makes_a_wheel_for_this_interpreter(tmp_path: Path) -> None:
    """With a compiler the wheel carries the C core and is tagged for this interpreter."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    wheel, log = _build_wheel(_source_copy(tmp_path), tmp_path / "wheels")
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert wheel.name.startswith(f"whyalive-0.1.0-{tag}-{tag}")
    assert "was not built" not in log
    with zipfile.ZipFile(wheel) as archive:
        assert [n for n in archive.namelist() if n.startswith("whyalive/graph/_fastgraph")]


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=120,
    )


_TWO_CHECKS = """
import sys, warnings
sys.modules["whyalive.graph._fastgraph"] = None  # as if it had never been built
warnings.simplefilter("{action}")
import whyalive
def leak():
    box = [bytearray(1 << 20)]
    box.append(box)
for _ in range(2):
    report = whyalive.find_leaks(leak)
print(report.run.graph_core, len(report.cycles))
"""


def test_the_pure_python_core_is_announced_once_when_an_analysis_starts() -> None:
    """Without the C core, one PurePythonCoreWarning at the first analysis, not at import."""
    done = _run_python(_TWO_CHECKS.format(action="default"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "1"]
    assert done.stderr.count("PurePythonCoreWarning") == 1
    assert "the C graph core (whyalive.graph._fastgraph) is not built" in done.stderr


def test_warnings_as_errors_still_hear_of_the_pure_python_core_but_do_not_fail() -> None:
    """A suite that makes warnings errors gets the sentence on stderr and its checks run."""
    done = _run_python(_TWO_CHECKS.format(action="error"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "1"]
    assert done.stderr.count("the C graph core (whyalive.graph._fastgraph) is not built") == 1


def test_a_chosen_pure_python_core_is_not_warned_about() -> None:
    """WHYALIVE_PURE_PYTHON=1 is a choice: reports say so, no warning is raised."""
    code = _TWO_CHECKS.format(action="error").replace(
        'sys.modules["whyalive.graph._fastgraph"] = None  # as if it had never been built', ""
    )
    done = _run_python(code, WHYALIVE_PURE_PYTHON="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "1"]
    assert "not built" not in done.stderr


def test_version_and_report_name_the_graph_core(capsys: pytest.CaptureFixture[str]) -> None:
    """`whyalive --version` and every report's run metadata say which core runs."""
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    version = capsys.readouterr().out.strip()
    assert version == f"whyalive 0.1.0 ({graphcore.implementation_words()})"
    assert find_leaks(lambda: None).run.graph_core == graphcore.IMPLEMENTATION
    done = _run_python(
        "import sys; sys.modules['whyalive.graph._fastgraph'] = None\n"
        "from whyalive.cli import main; main(['--version'])"
    )
    assert done.stdout.strip() == (
        "whyalive 0.1.0 (pure-Python graph core: the C extension "
        + "whyalive.graph._fastgraph is not built)"
    )
