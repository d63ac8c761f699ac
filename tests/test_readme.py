"""The README says what is true: its demo sample is the real output, its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from whyalive.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
# A file name and line (`demo.py:36`) is where the demo's code sits today; a path before it
# would be this machine's.
_PATH = re.compile(r"(?:/[^\s:`]+/)(\w+\.py)")


def _sample() -> str:
    """The fenced block that follows the README's sentence about `whyalive demo`."""
    text = README.read_text(encoding="utf-8")
    start = text.index("the whole output of\n`whyalive demo` in a 100-column terminal")
    block = re.search(r"```\n(.*?)```\n", text[start:], re.S)
    assert block is not None, "the README lost its demo sample"
    return block.group(1)


def test_the_readme_sample_is_the_real_demo_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`whyalive demo` at 100 columns prints exactly the README's sample (paths aside)."""
    pytest.importorskip("torch")  # the sample is the torch backend's, as the demo picks it
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["demo"]) == 1
    out = capsys.readouterr().out
    assert _PATH.sub(r"\1", out) == _PATH.sub(r"\1", _sample())


def test_the_readme_states_how_long_setup_takes() -> None:
    """The two first commands say how long they take on a fresh machine."""
    head = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        line = next(line for line in head.splitlines() if script in line)
        assert re.search(r"\d+ min", line), line


def test_the_readme_and_test_sh_give_one_time_for_the_full_suite() -> None:
    """The time test.sh announces for the Python 3.11 suite is the README's."""
    script = (README.parent / "scripts" / "test.sh").read_text(encoding="utf-8")
    said = re.search(r'say "full suite on Python 3\.11 \(.*?about ([\d.]+ min)', script)
    assert said is not None
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert f"full suite on Python 3.11 (about {said.group(1)})" in readme
