"""Alike arrays: the arrays that one list, tuple or dict of the garbage alone holds, and that own
their memory, are one node (the biggest of them) that stands for them all
(whyalive.graph.garbage.AlikeRun).

Both cores fold the same arrays into the same runs; a report reads as it does with every
array a node of its own (counts, bytes, places, descriptions), and everything is freed.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from capabilities import needs_numpy, numpy
from whyalive import check_leaks
from whyalive.graph import core as graphcore
from whyalive.graph import garbage
from whyalive.graph.twin_alike import ALIKE_MIN
from whyalive.report import Report

pytestmark = needs_numpy

PY = graphcore.python_implementation()
C = graphcore.c_implementation()
IMPLS = [PY] if C is None else [PY, C]


class Holder:
    """Keeps what it holds in a cycle with itself."""


def _build(impl: graphcore.GraphImplementation, objects: list[object]) -> tuple[Any, ...]:
    """The graph of ``objects`` with alike arrays folded, as plain values (dtypes by name)."""
    ndarray = numpy.ndarray
    runs: list[Any] = []
    given = len(objects)
    nodes, offsets, targets, marked = impl.build_graph(
        objects, (ndarray, tuple, dict), (ndarray,), True, ndarray, runs
    )
    kinds = [type(node).__name__ for node in nodes]
    del nodes[given:]
    said = [(*run[:4], tuple((str(d), *rest) for d, *rest in run[4])) for run in runs]
    return kinds, list(offsets), list(targets), marked, said


def _bits(positions: set[int]) -> bytes:
    """Bit ``i`` set for each position ``i``, little-endian, as the cores give them."""
    mask = sum(1 << position for position in positions)
    return mask.to_bytes((max(positions) + 8) // 8, "little")


def _alike(count: int) -> list[object]:
    return [numpy.zeros(4) for _ in range(count)]


def _with_strangers() -> list[object]:
    """Alike arrays among arrays that are not: a shared one, a view, one over a bytes
    object, a subclass's, one array twice, a scalar and a list."""
    items: list[object] = _alike(ALIKE_MIN + 10)
    twice = numpy.ones(3)
    items[5:5] = [
        numpy.arange(6),  # shared: the caller keeps it too
        numpy.arange(10)[2:],  # a view: its base holds the memory
        numpy.frombuffer(b"abcdefgh", dtype=numpy.uint8),  # over foreign memory
        numpy.zeros(4).view(numpy.recarray),  # a subclass
        twice,
        twice,
        3,
        [1, 2],
    ]
    return items


def _many_dtypes() -> list[object]:
    """Ten dtypes: the first eight seen are counted, arrays of the other two stay nodes."""
    names = ["f8", "f4", "i8", "i4", "i2", "i1", "u1", "u2", "c8", "b1"]
    return [numpy.zeros(index % 7, dtype=names[index % 10]) for index in range(2_000)]


# Each shape: the containers of the garbage, beside a Holder.
SHAPES: dict[str, Callable[[], list[Any]]] = {
    "list": lambda: [_alike(ALIKE_MIN + 1)],
    "tuple": lambda: [tuple(_alike(ALIKE_MIN + 1))],
    "too few": lambda: [_alike(ALIKE_MIN)],
    "strangers": lambda: [_with_strangers()],
    "many dtypes and shapes": lambda: [_many_dtypes()],
    "two lists": lambda: [_alike(600), _alike(700)],
    "dict": lambda: [dict(enumerate(_with_strangers()))],
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_both_cores_fold_the_same_arrays_into_the_same_runs(shape: str) -> None:
    """Same nodes, edges, marks and runs from the C core and its twin; each run counts the
    arrays that only their container holds, that own their memory, of its first 8 dtypes."""
    built = []
    for impl in IMPLS:
        containers = SHAPES[shape]()
        shared = containers[0][5]  # kept here too: never folded
        built.append(_build(impl, [Holder(), *containers]))
        del containers, shared
    assert all(found == built[0] for found in built), "the cores disagree"
    kinds, _, _, marked, runs = built[0]
    if shape == "too few":
        assert runs == []
        assert len(marked) == ALIKE_MIN
        return
    assert len(runs) == (2 if shape == "two lists" else 1)
    for node, _, count, positions, dtypes in runs:
        assert count >= ALIKE_MIN
        assert int.from_bytes(positions, "little").bit_count() == count
        assert count == sum(d[1] for d in dtypes)
        assert kinds[node] == "ndarray"  # one of the run's arrays is its node
    if shape in ("list", "tuple"):
        count = ALIKE_MIN  # all but the one kept here
        assert runs[0][2] == count
        assert runs[0][3] == _bits(set(range(count + 1)) - {5})
        assert runs[0][4] == (("float64", count, 4 * count, (4,)),)
    if shape == "dict":  # its values, as a list's items
        assert runs[0][2] == ALIKE_MIN + 10
        assert len(marked) == 1 + 4
    if shape == "strangers":
        # The ALIKE_MIN + 10 alike arrays; none of the strangers (the first kept here).
        [run] = runs
        count = ALIKE_MIN + 10
        assert run[2] == count
        assert run[3] == _bits(set(range(count + 8)) - set(range(5, 13)))
        assert run[4] == (("float64", count, 4 * count, (4,)),)
        # The run's node; the shared array, the view, the one over bytes, the one twice (a
        # subclass's array is tracked by the collector: outside this garbage, live).
        assert len(marked) == 1 + 4
    if shape == "many dtypes and shapes":
        [run] = runs
        assert len(run[4]) == 8
        assert run[2] == 1_600
        assert all(shape is None for *_, shape in run[4])  # shapes 0..6 in each dtype
        assert len(marked) == 1 + 400  # the run's node; the arrays of the last two dtypes


def test_an_array_kept_elsewhere_is_not_folded() -> None:
    """An array the caller also keeps (reference count 2) is a node of its own."""
    for impl in IMPLS:
        items = _alike(ALIKE_MIN + 1)
        kept = items[7]
        _, _, _, marked, runs = _build(impl, [Holder(), items])
        assert runs[0][2] == ALIKE_MIN
        assert len(marked) == 2
        del kept


def _leak(arrays: object) -> None:
    holder = Holder()
    holder.me = holder  # type: ignore[attr-defined]
    holder.arrays = arrays  # type: ignore[attr-defined]


def _report(make: Callable[[], list[object]], *, fold: bool, core: Any = None) -> Report:
    patch = pytest.MonkeyPatch()
    if not fold:
        patch.setattr(garbage, "alike_array_type", lambda resolver: None)
    if core is not None:
        patch.setattr(graphcore, "build_graph", core.build_graph)
        patch.setattr(graphcore, "array_head", core.array_head)
    try:
        with check_leaks(on_leak="ignore") as check:
            _leak(make())
        assert check.report is not None
        return check.report
    finally:
        patch.undo()


def _said(report: Report) -> tuple[Any, ...]:
    """What a report says of the heavy objects, apart from which one is shown as example."""
    [cycle] = report.cycles
    holds = [(h.where, h.count, h.kind, h.description, h.nbytes) for h in cycle.holds]
    return (
        holds,
        report.total_bytes,
        report.heavy_count,
        len(report.heavy_objects) + report.heavy_objects_unlisted,
        cycle.heavy_count,
        len(cycle.heavy) + cycle.heavy_unlisted,
        cycle.total_bytes,
        report.headline if hasattr(report, "headline") else None,
    )


MIXED: dict[str, Callable[[], Any]] = {
    "alike": lambda: _alike(3_000),
    "strangers": _with_strangers,
    "dtypes and shapes": _many_dtypes,
    "gaps": lambda: [numpy.zeros(2) if i % 3 else i for i in range(3_000)],
    "dict": lambda: {f"sample {i}": numpy.zeros(i % 5) for i in range(3_000)},
}


@pytest.mark.parametrize("core", IMPLS, ids=[impl.name for impl in IMPLS])
@pytest.mark.parametrize("shape", list(MIXED))
def test_a_report_says_what_it_says_without_folding(shape: str, core: Any) -> None:
    """Holdings (place, count, description, bytes), totals and counts are those of the report
    in which each array is a node; the bytes are the arrays' own, each counted once."""
    folded = _report(MIXED[shape], fold=True, core=core)
    plain = _report(MIXED[shape], fold=False, core=core)
    assert _said(folded) == _said(plain)
    made = MIXED[shape]()
    arrays = [
        a for a in (made.values() if type(made) is dict else made) if type(a) is numpy.ndarray
    ]
    if shape in ("alike", "dtypes and shapes", "dict"):
        assert folded.total_bytes == sum(a.nbytes for a in arrays)
        assert folded.heavy_count == len(arrays)
    text = folded.render("text", width=1000)
    if shape == "alike":
        assert "self.arrays[0..2999]: 3,000 arrays float64[4], 93.8 KiB" in text
    if shape == "gaps":
        assert "self.arrays[1, 2, 4, ...]: 2,000 arrays float64[2]" in text
    if shape == "dtypes and shapes":
        assert "arrays of several shapes" in text
    if shape in ("alike", "gaps"):
        assert len(folded.nodes) < 12  # one node for the arrays, not thousands


def test_every_array_is_freed_and_gc_state_restored() -> None:
    """The run's node, the arrays it stands for and their list die with the check."""
    garbage_before = list(gc.garbage)
    debug, enabled = gc.get_debug(), gc.isenabled()
    with check_leaks(on_leak="ignore") as check:
        arrays = _alike(2_000)
        watched = [weakref.ref(arrays[0]), weakref.ref(arrays[1]), weakref.ref(arrays[-1])]
        _leak(arrays)
        del arrays
    assert check.report is not None
    assert check.report.heavy_count == 2_000
    assert [ref() for ref in watched] == [None, None, None]
    assert gc.garbage == garbage_before
    assert (gc.get_debug(), gc.isenabled()) == (debug, enabled)


def test_recorded_allocation_sites_keep_every_array_a_node() -> None:
    """With allocation sites recorded, each array is told by its own site: nothing folds."""
    with check_leaks(on_leak="ignore", record_allocations=True) as check:
        _leak(_alike(1_000))
    assert check.report is not None
    assert check.report.heavy_count == 1_000
    assert len(check.report.heavy_objects) > 1


def test_a_numpy_whose_arrays_read_otherwise_folds_nothing() -> None:
    """The C core reads an array's head where NumPy keeps it; when a probe array reads
    otherwise (another layout), no array is folded."""
    if C is None:
        pytest.skip("the twin reads arrays through NumPy's descriptors")
    from whyalive.kinds import KindResolver

    resolver = KindResolver()
    assert garbage.alike_array_type(resolver) is numpy.ndarray
    assert garbage._reads_like_numpy(numpy, lambda array: (0, (), False, False, None)) is False
    assert garbage._reads_like_numpy(numpy, C.array_head) is True  # type: ignore[arg-type]


@pytest.mark.parametrize("impl", IMPLS, ids=[impl.name for impl in IMPLS])
def test_bad_folding_arguments_raise_the_same_errors(impl: graphcore.GraphImplementation) -> None:
    """Runs must be a list of their own; folded arrays must be of a followed type."""
    ndarray = numpy.ndarray
    objects: list[object] = [_alike(ALIKE_MIN)]
    with pytest.raises(TypeError, match="runs a list of its own"):
        impl.build_graph(objects, (ndarray,), (), False, ndarray, None)
    with pytest.raises(TypeError, match="runs a list of its own"):
        impl.build_graph(objects, (ndarray,), (), True, ndarray, objects)
    with pytest.raises(RuntimeError, match="no node"):
        impl.build_graph(objects, (), (), False, ndarray, [])


def test_dtypes_compare_by_equality_not_identity() -> None:
    """NumPy makes a new dtype object for each array of some dtypes (strings, datetimes):
    equal ones share a slot, so such arrays fold, and eight of them at the head of a list
    leave room for the arrays after them."""
    for impl in IMPLS:
        strings = [numpy.array([f"{index:03}"]) for index in range(600)]
        assert len({id(array.dtype) for array in strings}) > 1
        heads = (numpy.zeros(2, dtype="datetime64[s]") for _ in range(8))
        _, _, _, marked, runs = _build(impl, [Holder(), strings, [*heads, *_alike(600)]])
        assert [run[2] for run in runs] == [600, 608]
        assert [len(run[4]) for run in runs] == [1, 2]
        assert len(marked) == 2


def test_a_repeated_input_list_folds_once_and_the_cores_agree() -> None:
    """The garbage never repeats an object, but a caller's list may: both cores fold its
    first copy only."""
    built = []
    for impl in IMPLS:
        items = _alike(600)
        built.append(_build(impl, [Holder(), items, items]))
        del items
    assert all(found == built[0] for found in built)
    assert len(built[0][4]) == 1


def _ring_of_lists() -> None:
    """Two objects in a loop, each with a list of 600 arrays at the same attribute."""
    first, second = Holder(), Holder()
    first.next, second.next = second, first  # type: ignore[attr-defined]
    first.arrs = _alike(600)  # type: ignore[attr-defined]
    second.arrs = _alike(600)  # type: ignore[attr-defined]


def _big_among_small() -> list[object]:
    return [*_alike(600), *(numpy.zeros(1000) for _ in range(3))]


def test_places_and_examples_read_as_without_folding() -> None:
    """Lists at one place of a loop read as their union of indices, `self.arrs[0..599]`;
    a run's node is its biggest array, so the example path and the table show it."""
    reports = {}
    for fold in (True, False):
        patch = pytest.MonkeyPatch()
        if not fold:
            patch.setattr(garbage, "alike_array_type", lambda resolver: None)
        try:
            with check_leaks(on_leak="ignore") as ring:
                _ring_of_lists()
            with check_leaks(on_leak="ignore") as big:
                _leak(_big_among_small())
        finally:
            patch.undo()
        assert ring.report is not None
        assert big.report is not None
        reports[fold] = (ring.report, big.report)
    for report in reports[True]:
        assert _said(report) == _said(reports[False][reports[True].index(report)])
    [holding] = reports[True][0].cycles[0].holds
    assert (holding.where, holding.count) == ("self.arrs[0..599]", 1_200)
    big_report = reports[True][1]
    assert big_report.heavy_objects[0].description == "ndarray(float64[1000])"
    assert "(7.8 KiB)" in big_report.render("text", width=1000).split("for example:")[1]
