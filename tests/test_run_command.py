"""`whyalive run`: programs run as __main__ with their own argv; exit codes 0, 1 and 2."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from capabilities import needs_fork
from scenarios import counts_said
from whyalive.cli import main
from whyalive.report import Report

pytest.importorskip("numpy")

LEAKY = """
import sys
import numpy

print("argv", sys.argv, __name__)


def train_step():
    activation_cache = {"activations": numpy.zeros(1000)}
    activation_cache["self"] = activation_cache


train_step()
if "--boom" in sys.argv:
    raise RuntimeError("boom from the program")
"""


def write(tmp_path: Path, name: str, source: str) -> str:
    """Write a program into tmp_path and return its path as a string."""
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return str(path)


def test_leaking_script_exits_1_with_explanation_and_its_own_argv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script that leaks runs as __main__ with its argv, and the report names its dict."""
    script = write(tmp_path, "train.py", LEAKY)
    assert main(["run", script, "--lr", "3"]) == 1
    out, err = capsys.readouterr()
    assert f"argv [{script!r}, '--lr', '3'] __main__" in out
    assert "self-containing-container" in err
    assert "['activations']" in err
    # Plain dicts carry no line: the headline says so rather than ending on "train.py:".
    assert "alive at train.py (line not known): 7.8 KiB on cpu." in " ".join(err.split())


CLOSURE = """
import numpy


def train_step():
    activations = [numpy.zeros(1000)]

    def keep(value):
        activations.append(value)
        return keep

    keep(1)


train_step()
"""


def test_a_runs_headline_names_the_line_that_made_its_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whyalive run train.py`: the headline ends on `at train.py:LINE`, the cut's line."""
    script = write(tmp_path, "train.py", CLOSURE)
    assert main(["run", script]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "keeps 1 array alive at train.py:8: 7.8 KiB on cpu." in err


ATTRIBUTE_LOOP = """
import numpy


class Node:
    pass


def step():
    a = Node()
    b = Node()
    a.other = b
    b.other = a
    a.data = numpy.zeros(1000)


for _ in range(3):
    step()
"""


@pytest.mark.whyalive_skip  # the gc monitor and the plugin's bracket would both claim the leak
@pytest.mark.parametrize(
    ("mode", "headline"),
    [
        ("--on-exit", "keep 3 arrays alive at prog.py:12: 23.4 KiB on cpu."),
        (
            "--every-step",
            "kept 3 arrays alive over the run of prog.py, made at prog.py:12: 23.4 KiB on cpu, "
            "summed over the run.",
        ),
    ],
)
def test_a_runs_headline_names_the_line_of_a_loop_of_the_programs_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, headline: str
) -> None:
    """A loop through attributes of the program's own class (`a.other = b`): the program runs
    as the `__main__` module, so its class's file is read and the line found, in both modes
    (the cut names it too); a `-m` run finds it the same way."""
    script = write(tmp_path, "prog.py", ATTRIBUTE_LOOP)
    assert main(["run", mode, script]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert headline in err
    assert "made at prog.py:12: `a.other = b`" in err
    assert "line not known" not in err


def test_a_module_runs_headline_names_the_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whyalive run -m loops`: the module's file stands for `__main__` in the analysis."""
    (tmp_path / "loops.py").write_text(ATTRIBUTE_LOOP, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    main_module = sys.modules["__main__"]
    assert main(["run", "-m", "loops"]) == 1
    assert sys.modules["__main__"] is main_module  # put back after the run
    err = " ".join(capsys.readouterr().err.split())
    assert "alive at loops.py:12 (in a run of module loops): 23.4 KiB on cpu." in err


FREED_AS_IT_RUNS = """
import gc
import weakref
import numpy


class Step:
    pass


alive = []
for _ in range(50):
    step = Step()
    step.me = step
    step.activations = numpy.zeros(100_000)
    alive.append(weakref.ref(step.activations))
    del step
    gc.collect()
    # The program's own collection frees the cycle, as it would without whyalive.
    print("still alive:", sum(ref() is not None for ref in alive))
"""


def test_a_programs_own_collections_free_its_garbage_while_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A long program is not made to hold every cycle it ever made until it exits: each of
    its collections frees what it found (analysed on the spot), and all are reported."""
    script = write(tmp_path, "loop.py", FREED_AS_IT_RUNS)
    assert main(["run", script]) == 1
    out, err = capsys.readouterr()
    assert out.split("\n")[-2] == "still alive: 0"
    assert set(out.split("\n")[:-1]) == {"still alive: 0"}
    assert "50 reference cycles (1 signature) keep 50 arrays alive" in " ".join(err.split())


def test_clean_script_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script that makes no cycles holding heavy objects exits 0."""
    script = write(tmp_path, "clean.py", "import numpy\nx = [numpy.zeros(10)]\n")
    assert main(["run", script]) == 0
    assert "no cyclic garbage holding heavy objects was captured" in capsys.readouterr().err


def test_program_exception_is_printed_after_the_report_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The program's own exception comes after the report, traceback without whyalive frames."""
    script = write(tmp_path, "boom.py", LEAKY)
    assert main(["run", script, "--boom"]) == 1
    err = capsys.readouterr().err
    assert err.index("self-containing-container") < err.index("Traceback (most recent call last)")
    assert err.rstrip().endswith("RuntimeError: boom from the program")
    assert "run_command.py" not in err


@pytest.mark.parametrize("status", ["2", "3", "'no data'"])
def test_failing_exit_status_of_a_program_maps_to_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str
) -> None:
    """`sys.exit(3)` is the program failing: exit 1 (3 means "Graphviz missing"), said in text."""
    script = write(tmp_path, "exits.py", f"import sys\nsys.exit({status})\n")
    assert main(["run", script]) == 1
    err = capsys.readouterr().err
    assert "the program exited with status" in err


@pytest.mark.parametrize("status", ["0", "None"])
def test_successful_exit_of_a_clean_program_is_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str
) -> None:
    """`sys.exit(0)` and `sys.exit()` in a program that leaks nothing exit 0."""
    script = write(tmp_path, "exits.py", f"import sys\nsys.exit({status})\n")
    assert main(["run", script]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no_such_script.py"], "cannot open script 'no_such_script.py'"),
        (["run"], "run needs a script"),
        (["run", "-m", "no_such_module_whyalive"], "no module named 'no_such_module_whyalive'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing script or module is one clear line on stderr and exit code 2."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_syntax_error_in_script_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script that does not compile is a usage error naming its line, not a traceback."""
    script = write(tmp_path, "broken.py", "x = 1\ndef f(:\n")
    assert main(["run", script]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "syntax error at line 2" in err


def test_unknown_option_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An option `run` does not know (before the script) is exit code 2 with one line."""
    with pytest.raises(SystemExit) as stop:
        main(["run", "--bogus", "x.py"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_module_runs_as_main_and_json_report_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run -m pkg.mod -o leak.json` runs the module as __main__ and writes a loadable report."""
    package = tmp_path / "leakpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "job.py").write_text(LEAKY)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    out_file = tmp_path / "leak.json"
    assert main(["run", "-o", str(out_file), "-m", "leakpkg.job", "--flag"]) == 1
    out, err = capsys.readouterr()
    assert "'--flag'] __main__" in out
    assert f"Wrote {out_file}" in err  # as `whyalive render` says it
    report = Report.load(out_file)
    assert report.total_bytes == 8000
    assert report.cycles[0].pattern == "self-containing-container"
    sys.modules.pop("leakpkg", None)


def test_output_with_unknown_suffix_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o report.xyz` fails before the program runs, naming the known suffixes."""
    script = write(tmp_path, "train.py", LEAKY)
    assert main(["run", "-o", str(tmp_path / "report.xyz"), script]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "cannot tell the format" in err


@pytest.mark.whyalive_skip  # the gc monitor and the plugin's bracket would both claim the leak
def test_every_step_finds_the_leak_while_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--every-step uses the gc monitor: the leak is reported and exit code is 1."""
    script = write(tmp_path, "train.py", LEAKY)
    assert main(["run", "--every-step", script]) == 1
    err = capsys.readouterr().err
    assert "self-containing-container" in err
    # A plain dict carries no line: the run is named without one.
    assert "kept 1 array alive over the run of train.py: 7.8 KiB on cpu, summed over the run." in (
        " ".join(err.split())
    )
    assert "over 0 step" not in err


@pytest.mark.whyalive_skip  # the gc monitor and the plugin's bracket would both claim the leak
@pytest.mark.parametrize("mode", ["--on-exit", "--every-step"])
def test_run_counts_agree_between_text_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    """`whyalive run -o report.json`: what the text says is what the JSON and HTML hold."""
    light = "\nfor _ in range(5):\n    light = []\n    light.append(light)\n"  # nothing heavy
    script = write(
        tmp_path,
        "train.py",
        LEAKY.replace("\ntrain_step()", "\n[train_step() for _ in 'abc']") + light,
    )
    out = tmp_path / "report.json"
    assert main(["run", mode, "-o", str(out), script]) == 1
    capsys.readouterr()
    said = counts_said(Report.load(out))
    assert (said.cycles, said.heavy, said.size) == (3, 3, "23.4 KiB")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["reported_cycle_count"] == 3
    assert data["light_cycle_count"] >= 4  # the last `light` is still alive at the end
    assert data["cycle_count"] >= data["light_cycle_count"] + 3


def test_binary_output_format_is_written(tmp_path: Path) -> None:
    """`-o leak.png` writes a real PNG (binary renderers go through render_bytes)."""
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed")
    script = write(tmp_path, "leaky.py", LEAKY)
    out_file = tmp_path / "leak.png"
    assert main(["run", "-o", str(out_file), script]) == 1
    assert out_file.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_os_exit_ends_the_process_without_a_report(tmp_path: Path) -> None:
    """`os._exit(5)` skips whyalive entirely: status 5, no report (as documented)."""
    script = write(tmp_path, "hard_exit.py", "import os\nos._exit(5)\n")
    done = subprocess.run(
        [sys.executable, "-m", "whyalive", "run", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 5
    assert "whyalive:" not in done.stderr


@pytest.mark.parametrize(("size", "code"), [("1MiB", 0), ("1 KB", 1), ("4096", 1)])
def test_min_bytes_takes_a_size_with_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: str, code: int
) -> None:
    """`--min-bytes 1MiB` hides the 7.8 KiB leak; `1 KB` and `4096` report it."""
    script = write(tmp_path, "train.py", LEAKY)
    assert main(["run", "--min-bytes", size, script]) == code
    capsys.readouterr()


def test_a_bad_min_bytes_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--min-bytes 1XB` is a usage error in one line, before the program runs."""
    script = write(tmp_path, "train.py", LEAKY)
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--min-bytes", "1XB", script])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "not a size: '1XB' (use 1048576, 1MB or 1.5 MiB" in err


def test_a_file_with_nul_bytes_is_a_usage_error_without_a_line_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nul.py"
    path.write_bytes(b"x = 1\x00\n")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "null bytes" in err
    assert "None" not in err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whyalive", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ctrl_c_in_the_program_exits_130_and_puts_everything_back(tmp_path: Path) -> None:
    """Interrupted (130, the documented code): one line, no traceback, no report."""
    script = write(tmp_path, "interrupted.py", LEAKY + "raise KeyboardInterrupt\n")
    done = _run("-o", str(tmp_path / "report.json"), script)
    assert done.returncode == 130
    assert done.stderr.strip().splitlines()[-1] == "whyalive: interrupted"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "report.json").exists()


FORKS = (
    LEAKY
    + """
import os

pid = os.fork()
if pid:
    os.waitpid(pid, 0)
"""
)


@needs_fork
def test_a_forking_program_is_reported_once_by_its_parent(tmp_path: Path) -> None:
    """The child returns into whyalive too: it reports nothing and writes no file."""
    output = tmp_path / "report.json"
    done = _run("-o", str(output), write(tmp_path, "forks.py", FORKS))
    assert done.returncode == 1
    assert done.stderr.count("self-containing-container") == 1
    assert done.stderr.count("Wrote ") == 1
    assert Report.load(output).found
