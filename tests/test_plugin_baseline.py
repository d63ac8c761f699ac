"""Adopting whyalive on a suite with known leaks: baseline files and the allow list."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("numpy")

KNOWN = """
import numpy


def make_cycle(n):
    holder = [numpy.zeros(n)]
    holder.append(holder)


def test_known_leak():
    make_cycle(128)


def test_clean():
    assert numpy.zeros(3).sum() == 0
"""

NEW = """

def test_new_leak():
    activations = [numpy.zeros(64)]

    def keep(value):
        activations.append(value)
        return keep

    keep(1)
"""


def test_update_baseline_then_baseline(pytester: pytest.Pytester) -> None:
    """The update run passes and writes the file; the baseline run passes; a new leak fails."""
    pytester.makepyfile(test_suite=KNOWN)
    args = ("--whyalive", "-p", "no:cacheprovider", "--whyalive-baseline=leaks.json")
    result = pytester.runpytest_subprocess(*args, "--whyalive-update-baseline")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["whyalive: wrote 1 cycle signature(s) to the baseline *leaks.json"]
    )
    data = json.loads((pytester.path / "leaks.json").read_text())
    ((signature, entry),) = data["signatures"].items()
    assert entry == {
        "pattern": "self-containing-container",
        "bytes": 1024,
        "tests": ["test_suite.py::test_known_leak"],
    }

    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2)
    said = " ".join(result.stdout.str().split())  # the summary wraps to the terminal
    assert (
        f"{signature} self-containing-container: 1.0 KiB in 1 test (listed, not failing: in the "
        "baseline) test_suite.py::test_known_leak"
    ) in said

    pytester.makepyfile(test_suite=KNOWN + NEW)
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_suite.py::test_new_leak*"])


def test_missing_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A baseline file that does not exist is one clear line, not a traceback."""
    pytester.makepyfile(test_suite=KNOWN)
    result = pytester.runpytest_subprocess("--whyalive", "--whyalive-baseline=nope.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nope.json does not exist: write it with --whyalive-update*"])
    assert "Traceback" not in result.stderr.str()


def test_allow_ini_list(pytester: pytest.Pytester) -> None:
    """Pattern names in the whyalive_allow ini list are not reported; others still fail."""
    pytester.makeini("[pytest]\nwhyalive = true\nwhyalive_allow =\n    self-containing-container\n")
    pytester.makepyfile(test_suite=KNOWN + NEW)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_suite.py::test_new_leak*"])
    assert "self-containing-container" not in result.stdout.str()
