"""Frame locals are named exactly: the variable, never "one of" when the frame has finished."""

from __future__ import annotations

import pytest

from whyalive import find_leaks

numpy = pytest.importorskip("numpy")


def keep_error(flag: bool) -> int:
    """A frame with unbound locals before the array, kept by its own exception."""
    if flag:
        early = 1
        other = 2
        return early + other
    activations = numpy.zeros(1000)
    try:
        raise ValueError("stop")
    except ValueError as error:
        kept = error
    return int(activations.size) + len(kept.args)


def test_finished_frame_names_the_exact_local() -> None:
    """A garbage frame with unbound locals names `activations`, not "one of" several names."""
    report = find_leaks(keep_error, False)
    (cycle,) = report.cycles
    names = [edge.name for path in cycle.holder_paths for edge in path.edges]
    assert "local activations" in names
    assert not any("one of" in name for name in names)


ASSERTING = """
import numpy


def test_leak_with_asserts():
    sizes = [1, 2]
    assert len(sizes) == 2
    activations = numpy.zeros(512)
    try:
        raise ValueError("stop")
    except ValueError as error:
        kept = error
    assert kept.args == ("stop",)
"""


def test_assertion_temporaries_are_never_listed(pytester: pytest.Pytester) -> None:
    """pytest's rewritten asserts add @py_assert locals; reports never show them."""
    pytester.makepyfile(test_asserting=ASSERTING)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "@py_assert" not in out
    assert "local activations" in out
