"""Defaults on a real-looking suite: only leaks worth fixing fail; the rest is listed."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("numpy")
pytest.importorskip("torch")

MUST_HOLD = """
import gc
import sys
import weakref

import numpy
import pytest
import torch


def test_raises_as_excinfo_holds_an_array():
    activations = numpy.zeros(4096)
    with pytest.raises(ValueError) as excinfo:
        raise ValueError("bad shape")
    assert "bad shape" in str(excinfo.value)


def test_warns_holds_an_array():
    activations = numpy.zeros(4096)
    with pytest.warns(UserWarning) as record:
        import warnings
        warnings.warn("careful", UserWarning)
    assert len(record) == 1


def test_cycle_of_meta_tensors():
    graph = {"weights": [torch.empty(1024, 1024, device="meta")]}
    graph["self"] = graph


def test_own_collection_frees_the_cycle():
    payload = object()
    before = sys.getrefcount(payload)
    holder = [payload]
    holder.append(holder)
    probe = weakref.ref(type("Node", (), {})())
    node = type("Node", (), {})()
    node.self = node
    node_ref = weakref.ref(node)
    del holder, node
    gc.collect()
    assert sys.getrefcount(payload) == before
    assert node_ref() is None
    assert probe() is None


def test_recursive_closure_leaks_activations():
    activations = [torch.zeros(256, 256)]

    def keep_activation(value):
        activations.append(value)
        return keep_activation

    keep_activation(torch.ones(16))
"""


def test_only_the_real_leak_fails(pytester: pytest.Pytester) -> None:
    """pytest.raises/warns, meta tensors and a test's own gc.collect() pass; the closure fails."""
    pytester.makepyfile(test_must_hold=MUST_HOLD)
    result = pytester.runpytest_subprocess(
        "--whyalive", "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Leak found in the call of *::test_recursive_closure_leaks_activations:",
            "*recursive-closure*",
            "*Fix:*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= whyalive =*",
            "1 cycle signature left heavy objects in cyclic garbage:",
            "  * recursive-closure: 256.1 KiB in 1 test (failing)",
            "      test_must_hold.py::test_recursive_closure_leaks_activations [[]call[]]: *",
        ]
    )
    said = " ".join(result.stdout.str().split())  # the summary wraps to the terminal
    assert re.search(
        r"\w+ pytest-idiom: \S+ KiB in 1 test \(listed, not failing: pytest idiom, dies with "
        r"the test\) test_must_hold\.py::test_raises_as_excinfo_holds_an_array ",
        said,
    ), said
    assert re.search(
        r"\w+ self-containing-container: 0 B in 1 test \(listed, not failing: holds 0 bytes\) "
        r"test_must_hold\.py::test_cycle_of_meta_tensors ",
        said,
    ), said
    assert "@py_assert" not in result.stdout.str()
    assert "._excinfo" not in result.stdout.str()


OWN_COLLECTION = """
import gc
import weakref

import torch


def run_stage():
    activations = [torch.zeros(128, 128)]

    def keep_activation(value):
        activations.append(value)
        return keep_activation

    keep_activation(1)
    return weakref.ref(activations[0])


def test_leak_collected_by_the_test_itself():
    alive = run_stage()
    gc.collect()
    assert alive() is None
"""


def test_own_collection_frees_and_still_reports(pytester: pytest.Pytester) -> None:
    """A leak the test collects itself is freed by its gc.collect() and still fails the test."""
    pytester.makepyfile(test_own=OWN_COLLECTION)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Leak found in the call of test_own.py::test_leak_collected_by_the_test_itself:",
            "*recursive nested function [[]recursive-closure[]]: 2 objects, 64.0 KiB*",
        ]
    )
    assert "assert alive() is None" not in result.stdout.str()


THIRD_PARTY = """
import numpy

SOURCE = '''
def make(size):
    def again():
        return again, held
    held = [numpy.zeros(size)]
    again()
'''
namespace = {"numpy": numpy}
exec(compile(SOURCE, "/opt/venv/lib/python3/site-packages/fakepkg/graph.py", "exec"), namespace)


def test_cycle_made_inside_a_package():
    namespace["make"](512)
"""


@pytest.mark.parametrize(
    ("policy", "failed"), [(None, 0), ("report", 0), ("ignore", 0), ("fail", 1)]
)
def test_third_party_policy(pytester: pytest.Pytester, policy: str | None, failed: int) -> None:
    """A cycle whose code is all inside site-packages is attributed and follows the policy."""
    pytester.makepyfile(test_pkg=THIRD_PARTY)
    args = ["--whyalive", "-p", "no:cacheprovider"]
    if policy == "ignore":
        pytester.makeini("[pytest]\nwhyalive_third_party = ignore\n")
    elif policy is not None:
        args.append(f"--whyalive-third-party={policy}")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1 - failed, failed=failed)
    out = result.stdout.str()
    if policy == "ignore":
        assert "= whyalive =" not in out
    elif failed:
        result.stdout.fnmatch_lines(["*recursive-closure: 4.0 KiB in 1 test (failing)"])
    else:
        said = " ".join(result.stdout.str().split())  # the summary wraps to the terminal
        assert re.search(
            r"recursive-closure: 4\.0 KiB in 1 test \(listed, not failing: made inside "
            r"fakepkg/graph\.py:\d+, not in your code\)",
            said,
        ), said


def test_bad_third_party_policy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """An unknown ini value is one clear line and pytest's usage-error exit code."""
    pytester.makeini("[pytest]\nwhyalive_third_party = sometimes\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--whyalive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*whyalive_third_party must be 'fail', 'report' or 'ignore'*"])


def test_check_leaks_does_not_raise_for_zero_byte_cycles() -> None:
    """A cycle holding only meta tensors is reported by check_leaks but does not raise."""
    import torch

    from whyalive import check_leaks

    with check_leaks() as check:
        graph: dict[str, object] = {"weights": [torch.empty(64, 64, device="meta")]}
        graph["self"] = graph
        del graph
    assert check.report is not None
    (cycle,) = check.report.cycles
    assert cycle.total_bytes == 0
    assert cycle.heavy_count == 1
