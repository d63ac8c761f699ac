"""Interfaces of the lint: `whyalive lint` (via command.run), flake8, SARIF, pre-commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lint_cli import run_lint
from whyalive.lint.sarif import to_sarif

ROOT = Path(__file__).parent.parent
SEED = (
    "def stage_backward(outputs):\n"
    "    kept = []\n"
    "    def extract(x):\n"
    "        for y in x:\n"
    "            extract(y)\n"
    "        kept.append(x)\n"
    "    extract(outputs)\n"
)
CLEAN = "def f(x):\n    return x\n"


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    """A file holding the seed's recursive closure."""
    path = tmp_path / "seed.py"
    path.write_text(SEED)
    return path


def test_clean_exit_zero(tmp_path: Path) -> None:
    """A clean file exits 0 and prints nothing."""
    (tmp_path / "ok.py").write_text(CLEAN)
    assert run_lint(str(tmp_path)) == (0, "", "")


def test_findings_exit_one_text(seed: Path) -> None:
    """Findings exit 1 and print `path:line:col: message` lines."""
    code, out, _ = run_lint(str(seed))
    assert code == 1
    assert out.startswith(f"{seed}:3:5: WAL101 nested function `extract` refers to itself")


def test_select_and_ignore_options(seed: Path) -> None:
    """--ignore drops a finding and --select limits the rules run."""
    assert run_lint(str(seed), "--ignore", "WAL101")[0] == 0
    assert run_lint(str(seed), "--select", "WAL2,WAL3")[0] == 0
    assert run_lint(str(seed), "--select", "WAL1")[0] == 1


def test_json_output(seed: Path) -> None:
    """--format json prints records with 1-based columns, the message without its code and
    the full capture list."""
    code, out, _ = run_lint(str(seed), "--format", "json")
    assert code == 1
    (record,) = json.loads(out)
    assert record == {
        "path": str(seed),
        "line": 3,
        "column": 5,
        "code": "WAL101",
        "message": record["message"],
        "captures": [{"name": "kept", "kind": "local", "heavy": True}],
        "fixable": True,
    }
    assert record["message"].startswith("nested function `extract` refers to itself")


def test_sarif_output(seed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--format sarif prints a SARIF 2.1.0 log: results point at known rules, paths are
    relative to %SRCROOT%, messages do not repeat the code, captures are properties."""
    monkeypatch.chdir(seed.parent)
    code, out, _ = run_lint(str(seed), "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "WAL101"
    location = result["locations"][0]["physicalLocation"]
    assert location["region"] == {"startLine": 3, "startColumn": 5}
    assert location["artifactLocation"] == {"uri": "seed.py", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == seed.parent.as_uri() + "/"
    assert not result["message"]["text"].startswith("WAL101")
    assert result["properties"]["captures"] == [{"name": "kept", "kind": "local", "heavy": True}]
    assert run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_sarif_input_errors_are_notifications(tmp_path: Path, seed: Path) -> None:
    """Unparsable files become tool execution notifications, not results, and mark the
    invocation unsuccessful."""
    (tmp_path / "broken.py").write_text("def f(:\n")
    code, out, _ = run_lint(str(tmp_path), "--format", "sarif")
    assert code == 2
    (run,) = json.loads(out)["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["WAL101"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["descriptor"] == {"id": "WAL003"}
    assert note["message"]["text"].startswith("syntax error: ")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("broken.py")
    notes = run["tool"]["driver"]["notifications"]
    assert "WAL003" in [n["id"] for n in notes]


def test_sarif_empty() -> None:
    """An empty run is still a valid SARIF log with no results."""
    assert to_sarif([])["runs"][0]["results"] == []


def test_explain() -> None:
    """--explain prints a rule's explanation; an unknown code is a usage error."""
    code, out, _ = run_lint("--explain", "WAL101")
    assert code == 0
    assert out.startswith("WAL101 recursive-closure")
    code, _, err = run_lint("--explain", "WAL777")
    assert code == 2
    assert "WAL777" in err


def test_no_paths_is_usage_error() -> None:
    """Running without paths or --explain exits 2."""
    assert run_lint()[0] == 2


def test_bad_input_reported_and_run_continues(tmp_path: Path, seed: Path) -> None:
    """Missing, non-UTF-8 and unparsable files are reported; other files are still linted."""
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    code, out, _ = run_lint(str(tmp_path / "missing.py"), str(tmp_path))
    assert code == 2
    lines = out.splitlines()
    assert any(line.startswith(f"{tmp_path / 'missing.py'}:1:1: WAL001") for line in lines)
    assert any(f"{tmp_path / 'latin.py'}:1:1: WAL002" in line for line in lines)
    assert any(f"{tmp_path / 'broken.py'}:1:" in line and "WAL003" in line for line in lines)
    assert any("WAL101" in line for line in lines)


def test_coding_cookie_honoured(tmp_path: Path) -> None:
    """A latin-1 coding cookie makes non-UTF-8 bytes valid source."""
    path = tmp_path / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xff'\n")
    assert run_lint(str(path))[0] == 0


def _flake8(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "flake8", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.fixture
def flake8_file(tmp_path: Path) -> Path:
    """A file with a WAL101 finding, a noqa'd one and an off-by-default WAL901 one."""
    path = tmp_path / "cases.py"
    path.write_text(
        SEED
        + "\n\ndef other(x):\n"
        + "    def walk(n):  # noqa: WAL101\n"
        + "        return walk(n) or x\n"
        + "    return walk(x)\n"
        + "\n\nclass A:\n"
        + "    def __init__(self):\n"
        + "        self.f = lambda x: x\n"
    )
    return path


def test_flake8_plugin_same_findings(flake8_file: Path) -> None:
    """flake8 --select WAL reports what whyalive lint reports, and both honour noqa."""
    codes = [
        line.split(" ")[1] for line in _flake8("--select", "WAL", str(flake8_file)).splitlines()
    ]
    assert codes == ["WAL101"]
    _, out, _ = run_lint(str(flake8_file))
    assert [line.split(" ")[1] for line in out.splitlines()] == codes


def test_flake8_off_by_default(flake8_file: Path) -> None:
    """WAL9xx runs in flake8 only when selected with at least four characters."""
    assert "WAL901" not in _flake8(str(flake8_file))
    assert "WAL901" in _flake8("--select", "WAL9", str(flake8_file))
    assert "WAL901" in _flake8("--extend-select", "WAL901", str(flake8_file))


def test_pre_commit_hook_file() -> None:
    """.pre-commit-hooks.yaml declares the whyalive-lint hook."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    for line in ("- id: whyalive-lint", "entry: whyalive lint", "language: python"):
        assert line in text
    assert "types: [python]" in text


def test_flake8_needs_e9_for_syntax_errors(tmp_path: Path) -> None:
    """flake8 --select WAL passes a file that does not parse; --select WAL,E9 reports it
    (the command docs/lint.md recommends)."""
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    assert _flake8("--select", "WAL", str(path)) == ""
    assert "E999" in _flake8("--select", "WAL,E9", str(path))
    assert "WAL003" in run_lint(str(path))[1]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_only_regular_files_are_read(tmp_path: Path, seed: Path) -> None:
    """A FIFO named *.py would block the lint forever and a *.py link to /dev/zero would
    eat all memory. Met in a directory, each is skipped with a note on stderr and the rest
    is linted (exit 1: findings); named on the command line, it is a WAL001 line (exit 2)."""
    pipe = tmp_path / "pipe.py"
    os.mkfifo(pipe)
    zero = tmp_path / "zero.py"
    if Path("/dev/zero").exists():
        zero.symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "whyalive", "lint", str(tmp_path), str(seed)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert any("WAL101" in line for line in lines)
    assert not any("WAL001" in line for line in lines)
    note = "whyalive lint: note: skipped {}: not a regular file (a FIFO, device or socket)"
    assert note.format(pipe) in done.stderr.splitlines()
    if zero.is_symlink():
        assert note.format(zero) in done.stderr.splitlines()
    for named in [pipe, zero] if zero.is_symlink() else [pipe]:
        done = subprocess.run(
            [sys.executable, "-m", "whyalive", "lint", str(named)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout.splitlines() == [
            f"{named}:1:1: WAL001 unreadable file: not a regular file (a FIFO, device or socket)"
        ]
