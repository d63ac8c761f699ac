"""Survivors held by a C/C++ owner whyalive cannot name: listed at defaults, never failed.

A tensor the block made that is still alive, whose C++ side has an owner no Python
object, autograd node or other tensor accounts for (here a TorchScript module's
attribute, set in C++), is listed in ``Report.held_natively`` with that note; objects a
real suite keeps in the ordinary ways (a module-level dict, a fixture, a running
function's local, a view and its base, a model's gradients after an optimizer step) are
reachable and never listed.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any

import pytest

from whyalive import check_leaks, find_leaks
from whyalive.report import Report
from whyalive.report.schema import validate_report

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.whyalive_skip  # the scripted module keeps what the tests give it

SIZE = 256 * 1024
"""Bytes of the tensors these tests make (float32[256, 256])."""


@pytest.fixture(scope="module")
def scripted() -> Any:
    """A TorchScript module: assigning its attribute stores the tensor in C++."""
    return torch.jit.script(torch.nn.Linear(256, 256))


def _give_to_cpp(scripted: Any) -> None:
    scripted.weight = torch.nn.Parameter(torch.randn(256, 256))


def test_a_tensor_only_cpp_holds_is_listed_not_failed(scripted: Any) -> None:
    with check_leaks() as check:  # passes: a listing fails nothing
        _give_to_cpp(scripted)
    report = check.report
    assert report is not None
    assert not report.found
    [held] = report.held_natively
    assert held.nbytes == SIZE
    assert held.description == "Parameter(float32[256, 256], cpu)"
    assert held.note is not None
    assert "held by a C/C++ owner outside Python" in held.note
    text = report.render("text")
    assert "Held by C/C++ owners whyalive cannot name (listed, not failing)" in text
    assert "Held by a C/C++ owner: Parameter(float32[256, 256], cpu), 256.0 KiB" in text
    assert "1 heavy object made in the block is held by a C/C++ owner" in " ".join(text.split())
    html = report.render("html")
    assert "Held by a C/C++ owner 1: Parameter(float32[256, 256], cpu)" in html
    data = report.to_dict()
    validate_report(data)
    assert Report.from_dict(data) == report
    assert data["held_natively"][0]["nbytes"] == SIZE


def test_the_listing_holds_nothing_and_respects_min_bytes(scripted: Any) -> None:
    with check_leaks(min_bytes=SIZE + 1) as check:
        _give_to_cpp(scripted)
    assert check.report is not None
    assert not check.report.held_natively
    with check_leaks() as check:
        pass
    assert check.report is not None
    assert not check.report.held_natively  # made before the block: not its survivor
    with check_leaks() as check:
        _give_to_cpp(scripted)
    assert check.report is not None
    assert check.report.held_natively
    listed = weakref.ref(scripted.weight)
    after_check = sys.getrefcount(scripted.weight)
    _give_to_cpp(scripted)  # the same, outside any check
    plain = sys.getrefcount(scripted.weight)  # outside the assert: its rewriting adds temporaries
    assert listed() is None  # replaced: nothing of whyalive's kept the listed one
    assert plain == after_check


def test_the_census_lists_it_once(scripted: Any) -> None:
    """With census=True the survivor is a still-alive object (failing), not listed twice."""
    with check_leaks(on_leak="ignore", census=True) as check:
        _give_to_cpp(scripted)
    report = check.report
    assert report is not None
    assert not report.held_natively
    assert [a.nbytes for a in report.alive] == [SIZE]


KEPT: dict[str, Any] = {}
MODEL = torch.nn.Linear(256, 256)
OPTIMIZER = torch.optim.SGD(MODEL.parameters(), lr=0.1)


def _kept_in_a_module_dict() -> None:
    KEPT["t"] = torch.randn(256, 256)


def _trained_global_model() -> None:
    OPTIMIZER.zero_grad(set_to_none=True)  # new gradients (C++ holds them), made here
    MODEL(torch.randn(8, 256)).sum().backward()
    OPTIMIZER.step()


def _view_kept_base_dropped() -> None:
    base = torch.randn(256, 256)
    KEPT["view"] = base.t()
    KEPT["again"] = [KEPT["view"]]


def _output_with_saved_view() -> None:
    w = torch.randn(256, 256, requires_grad=True)
    KEPT["out"] = (torch.randn(256, 256).t() * w).sum()


def _sparse_kept_after_reading_its_values() -> None:
    sparse = torch.randn(256, 256).to_sparse()
    sparse._values()  # the values' Python object stays with the sparse tensor
    KEPT["sparse"] = sparse


def _leaf_and_its_grad_kept() -> None:
    x = torch.randn(256, 256, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad is not None  # its Python object made, then dropped
    KEPT["leaf"] = x


ORDINARY = [
    _kept_in_a_module_dict,
    _trained_global_model,
    _view_kept_base_dropped,
    _output_with_saved_view,
    _sparse_kept_after_reading_its_values,
    _leaf_and_its_grad_kept,
]


@pytest.mark.parametrize("keep", ORDINARY, ids=lambda fn: fn.__name__.strip("_"))
def test_what_a_suite_keeps_the_ordinary_way_is_not_listed(keep: Any) -> None:
    for _ in range(2):  # the second time, what the first kept is old
        report = find_leaks(keep)
        assert not report.held_natively, [a.description for a in report.held_natively]
        assert not report.found
    KEPT.clear()


def test_a_running_function_s_local_is_not_listed() -> None:
    with check_leaks() as check:
        x = torch.randn(256, 256, requires_grad=True)
        y = (x * 2).sum()
        y.backward()
        grad = x.grad
    assert check.report is not None
    assert not check.report.held_natively
    assert grad is not None


def test_the_gradients_are_told_only_once_the_heap_is_unfrozen(scripted: Any) -> None:
    """A check inside another (the freeze still held) cannot rule out gradients: it lists
    nothing; the outer check lists the survivor once the heap is unfrozen."""
    with check_leaks() as outer:
        with check_leaks() as inner:
            _give_to_cpp(scripted)
        _trained_global_model()
    assert inner.report is not None
    assert not inner.report.held_natively
    assert outer.report is not None
    assert [a.nbytes for a in outer.report.held_natively] == [SIZE]


SUITE = """
import pytest
import torch

KEPT = {}
MODEL = torch.nn.Linear(64, 64)
OPTIMIZER = torch.optim.SGD(MODEL.parameters(), lr=0.1)
SCRIPTED = torch.jit.script(torch.nn.Linear(256, 256))


@pytest.fixture
def tensor():
    return torch.randn(256, 256)


def test_keeps_in_a_module_dict(tensor):
    KEPT["t"] = torch.randn(256, 256)
    KEPT["fixture"] = tensor


def test_trains_a_global_model():
    OPTIMIZER.zero_grad(set_to_none=True)
    MODEL(torch.randn(8, 64)).sum().backward()
    OPTIMIZER.step()


def test_gives_a_tensor_to_cpp():
    SCRIPTED.weight = torch.nn.Parameter(torch.randn(256, 256))
"""


def test_the_plugin_lists_it_in_the_summary_and_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kept=SUITE)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*1 heavy object in 1 test: held by C/C++ owners whyalive cannot name*",
            "*test_kept.py::test_gives_a_tensor_to_cpp [[]call[]]: Parameter(float32*",
        ]
    )
    assert "test_keeps_in_a_module_dict [" not in result.stdout.str()
    assert "test_trains_a_global_model [" not in result.stdout.str()


def test_nothing_is_listed_without_torch_state_left() -> None:
    gc.collect()
    with check_leaks() as check:
        pass
    assert check.report is not None
    assert not check.report.held_natively
