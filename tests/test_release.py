"""The C helpers behind capture release and node selection, against their Python twins."""

from __future__ import annotations

import gc
import weakref
from array import array

import pytest

from capabilities import needs_c
from whyalive.capture import GarbageWatch
from whyalive.graph import core as graphcore

c_impl = graphcore.c_implementation()
py_impl = graphcore.python_implementation()


class Payload:
    pass


class Sub(int):
    pass


@needs_c
def test_marked_nodes_match_python_twin() -> None:
    """Subclasses count, exact and inherited types are found, order is node order."""
    assert c_impl is not None
    nodes: list[object] = [1, "a", Sub(3), 2.0, [], True, Payload(), {}]
    types = (int, list)
    expected = py_impl.build_graph(nodes, (), types)[3]
    assert expected == [0, 2, 4, 5]
    assert c_impl.build_graph(nodes, (), types)[3] == expected


IMPLS = [pytest.param(c_impl, id="c", marks=needs_c), pytest.param(py_impl, id="python")]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("start", [0, 2, 5, 9, -3])
def test_take_tail_moves_references_without_leaking(
    impl: graphcore.GraphImplementation, start: int
) -> None:
    """The tail comes back in order, the head stays, every object is freed afterwards."""
    items: list[object] = [Payload() for _ in range(5)]
    refs = [weakref.ref(item) for item in items]
    identity = id(items)
    expected_tail = items[max(0, start) :]
    expected_head = items[: max(0, start)]
    tail = impl.take_tail(items, start)
    assert id(items) == identity
    assert tail == expected_tail
    assert items == expected_head
    items.append(Payload())  # the shortened list still works
    items.extend(tail)
    del tail, expected_tail, expected_head, items
    assert all(ref() is None for ref in refs)


class Node:
    other: object = None


class Linked(list):  # type: ignore[type-arg]
    __slots__ = ("__weakref__",)


def _saved_pair() -> list[object]:
    """Two lists that refer to each other and that only the returned list holds (lists: an
    instance on 3.10 refers through a ``__dict__`` a collection would save as well)."""
    first = Linked()
    second = Linked([first])
    first.append(second)
    return [first, second]


@pytest.mark.parametrize("impl", IMPLS)
def test_saved_start_finds_the_tail_nothing_outside_holds(
    impl: graphcore.GraphImplementation,
) -> None:
    """Held from outside, reached from such an object, untracked, or the list itself: the
    user's. The longest tail of the window made only of the rest is what a collection saved."""
    live: list[object] = ["the user's"]
    holder = [[]]  # holder[0] is reached only from holder, which a local holds
    items: list[object] = [live, *_saved_pair(), 12345678901, holder[0], *_saved_pair()]
    assert impl.saved_start(items, 0, len(items)) == 5
    assert impl.saved_start(items, 0, 3) == 1  # the window's end bounds the tail
    assert impl.saved_start(items, 5, len(items)) == 5
    assert impl.saved_start(items, 0, 5) == 5  # ends in the user's: nothing is saved
    items.append(items)
    assert impl.saved_start(items, 5, len(items)) == len(items)
    only_ours = [*_saved_pair(), *_saved_pair()]
    assert impl.saved_start(only_ours, 0, len(only_ours)) == 0
    assert impl.saved_start(only_ours, -5, 2**70) == 0  # clamped
    assert impl.saved_start(only_ours, 9, 2) == 2
    refs = [weakref.ref(item) for item in items[1:3]]
    del items, only_ours, live, holder
    gc.collect()
    assert all(ref() is None for ref in refs)


class AppendsOnDel:
    """Its finalizer appends ``mine[0]`` to gc.garbage; it refers to itself."""

    def __init__(self, mine: list[object]) -> None:
        self.me = self
        self.mine = mine

    def __del__(self) -> None:
        gc.garbage.append(self.mine[0])


@pytest.mark.whyalive_skip  # saves a collection of its own with DEBUG_SAVEALL
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("generation", [0, 2])
def test_saved_start_after_a_real_collection(
    impl: graphcore.GraphImplementation, generation: int
) -> None:
    """A live list made last before the collection lies, in the collector's list, just
    before what it saves; a finalizer appends it, and a freed weakref makes "collected"
    count one more than was saved: it is still the user's."""
    registry: weakref.WeakValueDictionary[str, Node] = weakref.WeakValueDictionary()
    mine: list[object] = [None]
    start = len(gc.garbage)
    debug, enabled = gc.get_debug(), gc.isenabled()
    info: dict[str, int] = {}

    def stop(phase: str, data: dict[str, int]) -> None:
        if phase == "stop":
            info.update(data)

    gc.collect()  # the garbage of earlier tests (and its weakrefs) is not this collection's
    gc.disable()
    try:
        AppendsOnDel(mine)
        node = Node()
        node.other = node
        registry["node"] = node
        del node
        mine[0] = ["the user's, made last"]
        gc.callbacks.append(stop)
        gc.set_debug(debug | gc.DEBUG_SAVEALL)
        gc.collect(generation)
        gc.set_debug(debug)
        gc.callbacks.remove(stop)
        end = len(gc.garbage)
        assert gc.garbage[start] is mine[0]
        assert info["collected"] == end - start  # one weakref freed: the count is no length
        assert impl.saved_start(gc.garbage, end - info["collected"], end) == start + 1
        assert impl.saved_start(gc.garbage, start + 1, end) == start + 1
    finally:
        gc.set_debug(debug)
        if stop in gc.callbacks:
            gc.callbacks.remove(stop)
        for item in gc.garbage[start:]:
            if isinstance(item, (Node, AppendsOnDel)):
                item.__dict__.clear()
        del gc.garbage[start:]
        if enabled:
            gc.enable()
    assert mine[0] == ["the user's, made last"]


@needs_c
def test_saved_start_rejects_bad_arguments() -> None:
    assert c_impl is not None
    with pytest.raises(TypeError):
        c_impl.saved_start((1, 2), 0, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c_impl.saved_start([1, 2], "0", 2)  # type: ignore[arg-type]


@needs_c
def test_take_tail_rejects_bad_arguments() -> None:
    assert c_impl is not None
    with pytest.raises(TypeError):
        c_impl.take_tail((1, 2), 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c_impl.take_tail([1, 2], "0")  # type: ignore[arg-type]
    assert c_impl.take_tail([1, 2], 2**70) == py_impl.take_tail([1, 2], 2**70) == []


@needs_c
@pytest.mark.whyalive_skip  # runs finalizers of its own cyclic garbage on purpose
@pytest.mark.parametrize("start", [0, 3])
def test_take_tail_holds_off_collections_that_resize_the_list(start: int) -> None:
    """A finalizer that clears the list cannot run between reading its size and splitting it."""
    assert c_impl is not None
    items: list[object] = [Payload() for _ in range(40)]
    expected = items[start:]

    class ClearsOnDel:
        def __del__(self) -> None:
            items.clear()

    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    try:
        gc.disable()
        cycle: list[object] = [ClearsOnDel()]
        cycle.append(cycle)
        del cycle
        # Empty the list free list, so that take_tail's new list is a real GC allocation.
        spare = [[] for _ in range(200)]
        gc.set_threshold(1, 1, 1)  # the next GC allocation would collect, and run __del__
        gc.enable()
        tail = c_impl.take_tail(items, start)
        assert tail == expected
        del spare
    finally:
        gc.set_threshold(*thresholds)
        if not enabled:
            gc.disable()
        gc.collect()


@pytest.mark.parametrize("impl", IMPLS)
def test_cycle_candidates_keeps_cycles_that_reach_a_seed(
    impl: graphcore.GraphImplementation,
) -> None:
    """0 <-> 1 -> 2 -> 3 (self-edge) <- 4 <-> 5, and 6 alone: who is a candidate for which seeds."""
    edges = {0: [1], 1: [0, 2], 2: [3], 3: [3], 4: [3, 5], 5: [4], 6: []}
    offsets = array("q", [0])
    targets = array("q")
    for node in range(7):
        targets.extend(edges[node])
        offsets.append(len(targets))
    comp, count, everything = impl.cycle_candidates(offsets, targets, None)
    assert count == 3
    assert everything.tolist() == [0, 1, 3, 4, 5]
    assert comp.tolist() == impl.find_components(offsets, targets)[0].tolist()
    assert impl.cycle_candidates(offsets, targets, [2])[2].tolist() == [0, 1]
    assert impl.cycle_candidates(offsets, targets, iter([3]))[2].tolist() == [0, 1, 3, 4, 5]
    assert impl.cycle_candidates(offsets, targets, [5, 6])[2].tolist() == [4, 5]
    assert impl.cycle_candidates(offsets, targets, [])[1] == 3
    assert impl.cycle_candidates(offsets, targets, [])[2].tolist() == []
    with pytest.raises(IndexError):
        impl.cycle_candidates(offsets, targets, [7])


def test_release_frees_captured_cycles_without_a_collection() -> None:
    """Released garbage is freed at once (tp_clear in C, a collection in Python)."""
    watch = GarbageWatch()
    watch.begin()
    try:
        holder: list[object] = [Payload()]
        holder.append(holder)
        del holder
        captured = watch.end()
        # The collection that saved the garbage cleared older weakrefs: take one now.
        (payload,) = [o for o in captured.objects if type(o) is Payload]
        ref = weakref.ref(payload)
        del payload
        captured.release()
        assert ref() is None
    finally:
        watch.finish()


@needs_c
def test_clear_objects_survives_objects_without_tp_clear() -> None:
    """Objects whose type has no tp_clear (str, int) are skipped, the rest cleared."""
    assert c_impl is not None
    assert c_impl.clear_objects is not None
    holder: list[object] = ["text", 5]
    holder.append(holder)
    objects: list[object] = [holder, "text", 7]
    c_impl.clear_objects(objects)
    assert holder == []
    assert objects == []  # emptied first: its references were ours to drop
    gc.collect()


@needs_c
def test_clear_objects_frees_a_ring_and_clears_what_live_code_holds() -> None:
    """A ring's links are freed by reference counting once the first is cleared (the
    others are only in the list by then); an object live code also holds is cleared
    in place, and what it held is freed."""
    assert c_impl is not None
    assert c_impl.clear_objects is not None
    gc.disable()
    try:
        ring = [Payload() for _ in range(1000)]
        for link, following in zip(ring, ring[1:] + ring[:1], strict=True):
            link.next = following  # type: ignore[attr-defined]
        refs = [weakref.ref(link) for link in ring]
        kept: list[object] = [ring[500]]
        held = Payload()
        kept.append(kept)  # a list in a cycle with itself, also held by this test
        kept.append(held)
        held_ref = weakref.ref(held)
        del held
        objects: list[object] = list(ring)
        objects.append(kept)
        ring.clear()
        del link, following
        c_impl.clear_objects(objects)
        assert objects == []
        assert kept == []  # cleared, though it stays alive
        assert held_ref() is None
        assert [ref() is None for ref in refs].count(False) == 0
    finally:
        gc.enable()


@needs_c
def test_big_arrays_are_reused_while_the_scratch_is_held() -> None:
    """While an analysis holds the scratch, the C core's freed big arrays are kept and
    cut into its next ones (no fresh pages); all are unmapped when it lets go."""
    from whyalive.graph import _fastgraph  # type: ignore[attr-defined]

    assert c_impl is not None
    assert _fastgraph.scratch_pieces() == (0, 0)
    gc.disable()
    try:
        # Lists, so every node is in the loop on every Python (3.13 leaves a materialized
        # instance dict outside it): a table of 3 MiB, a mapped array.
        ring: list[list[object]] = [[] for _ in range(200_000)]
        for link, following in zip(ring, ring[1:] + ring[:1], strict=True):
            link.append(following)
        objects: list[object] = list(ring)
        expected = py_impl.cycle_candidates(*py_impl.build_graph(objects, (), (), False)[1:3], None)
        with graphcore.scratch_held():
            nodes, offsets, targets, _ = c_impl.build_graph(objects, (), (), False)
            count, kept = _fastgraph.scratch_pieces()
            assert count >= 1
            assert kept >= 3 << 20  # the build's table, kept
            for _ in range(3):
                component_of, cycles, members = c_impl.cycle_candidates(offsets, targets, None)
                assert component_of.tolist() == expected[0].tolist()
                assert (cycles, members.tolist()) == (expected[1], expected[2].tolist())
                del component_of, members
                # Every array of the search was cut from the pieces and went back to them
                # (less the pages a shrunk one gave back): a fresh mapping would have
                # added its pages.
                assert kept - (64 << 10) < _fastgraph.scratch_pieces()[1] <= kept
        assert _fastgraph.scratch_pieces() == (0, 0)
        del nodes, offsets, targets
    finally:
        gc.enable()
    # An analysis leaves nothing kept.
    analyze_objects([[1], [2]])
    assert _fastgraph.scratch_pieces() == (0, 0)


def analyze_objects(objects: list[object]) -> None:
    from whyalive.report.pipeline import analyze

    analyze(objects)


@needs_c
def test_kept_big_arrays_never_raise_the_peak_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reusing freed arrays holds no more memory at its peak than freeing them at once
    (what is kept goes before any fresh array is mapped): an analysis's peak, as a memory
    profile sees it, is the same with the scratch held."""
    import contextlib
    import tracemalloc

    from whyalive.capture import GarbageWatch
    from whyalive.report import pipeline

    peaks = []
    for held in (graphcore.scratch_held, contextlib.nullcontext):
        monkeypatch.setattr(pipeline, "scratch_held", held)
        watch = GarbageWatch()
        watch.begin()
        ring = [Payload() for _ in range(500_000)]
        for link, following in zip(ring, ring[1:] + ring[:1], strict=True):
            link.next = following  # type: ignore[attr-defined]
        ring[0].payload = bytearray(1 << 20)  # type: ignore[attr-defined]
        del ring, link, following
        captured = watch.end()
        tracemalloc.start()
        try:
            report = pipeline.analyze(captured.objects)
            assert report.cycles[0].pattern == "linked-structure"  # every stage ran
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
            captured.release()
            watch.finish()
    assert peaks[0] <= peaks[1] * 1.01  # a kept piece under the size that maps afresh
