"""Tests for whyalive.graph.core: both implementations against brute-force oracles."""

from __future__ import annotations

import functools
import gc
import itertools
import random
import sys
import threading
import tracemalloc
import weakref
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities import needs_c
from whyalive.graph import core as graphcore
from whyalive.graph.core import IMPLEMENTATION, GraphImplementation

PY = graphcore.python_implementation()
C = graphcore.c_implementation()
IMPLS = [PY] if C is None else [PY, C]
IMPL_IDS = [impl.name for impl in IMPLS]


Edges = list[tuple[int, int]]


# ---------------------------------------------------------------- helpers


@functools.cache
def _untracked_tuples() -> tuple[tuple[object, ...], ...]:
    """Tuples of atomic items, untracked by a collection (the only portable way)."""
    made = (
        (b"x" * 10, 5),
        (1, 2, 3),
        (b"ab",),
        (b"cd" * 3, "s" * 7, 10**30),
    )
    gc.collect()
    assert not any(gc.is_tracked(t) for t in made)
    return made


def csr(n: int, edges: Edges) -> tuple[array[int], array[int]]:
    """CSR arrays for n nodes, keeping the given edge order per source."""
    adj: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
    offsets = array("q", [0])
    targets = array("q")
    for out in adj:
        targets.extend(out)
        offsets.append(len(targets))
    return offsets, targets


def adjacency(offsets: Sequence[int], targets: Sequence[int]) -> list[list[int]]:
    off = list(offsets)
    tgt = list(targets)
    return [tgt[off[i] : off[i + 1]] for i in range(len(off) - 1)]


def closure(adj: list[list[int]]) -> list[set[int]]:
    """Nodes reachable from each node (itself included), by one DFS per node."""
    result = []
    for start in range(len(adj)):
        seen = {start}
        todo = [start]
        while todo:
            for w in adj[todo.pop()]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        result.append(seen)
    return result


def check_components(adj: list[list[int]], comp: Sequence[int], count: int, cyclic: bytes) -> None:
    reach = closure(adj)
    n = len(adj)
    assert sorted(set(comp)) == list(range(count))
    for u in range(n):
        for v in range(n):
            same = v in reach[u] and u in reach[v]
            assert (comp[u] == comp[v]) == same
    sizes = [0] * count
    for c in comp:
        sizes[c] += 1
    for c in range(count):
        members = [v for v in range(n) if comp[v] == c]
        expected = sizes[c] > 1 or any(v in adj[v] for v in members)
        assert cyclic[c] == expected
    # Documented order: reverse topological.
    for u in range(n):
        for v in adj[u]:
            assert comp[v] <= comp[u]


def run_all(
    impl: GraphImplementation, offsets: Any, targets: Any, seeds: list[int]
) -> tuple[list[int], int, bytes, bytes]:
    comp, count, cyclic = impl.find_components(offsets, targets)
    mask = impl.nodes_reaching(offsets, targets, seeds)
    assert comp.format == "q"
    assert cyclic.format == "B"
    assert mask.format == "B"
    assert len(comp) == len(offsets) - 1
    assert len(cyclic) == count
    # cycle_candidates must agree with the two above (each checked against an oracle).
    in_cycle = [v for v, c in enumerate(comp) if cyclic[c]]
    same_comp, cycle_count, reaching = impl.cycle_candidates(offsets, targets, seeds)
    assert same_comp.tolist() == comp.tolist()
    assert cycle_count == bytes(cyclic).count(1)
    assert reaching.tolist() == [v for v in in_cycle if mask[v]]
    assert impl.cycle_candidates(offsets, targets, None)[2].tolist() == in_cycle
    return comp.tolist(), count, cyclic.tobytes(), mask.tobytes()


def build_objects(
    n: int, edges: Edges, captured: list[int], extras: list[tuple[int, int]]
) -> tuple[list[list[object]], list[object]]:
    """Node i is a list holding the nodes it points to; only `captured` are passed in."""
    lists: list[list[object]] = [[] for _ in range(n)]
    for u, v in edges:
        lists[u].append(lists[v])
    pool = _untracked_tuples()
    for u, k in extras:
        lists[u].append(pool[k % len(pool)])
    return lists, [lists[i] for i in captured]


def expected_graph(
    lists: list[list[object]], objects: list[object], follow: tuple[type, ...]
) -> tuple[list[object], list[list[int]]]:
    """Oracle for build_graph, written independently (recursive on tiny graphs)."""
    nodes = list(objects)
    pos = {id(o): i for i, o in reversed(list(enumerate(nodes)))}
    out: list[list[int]] = []
    i = 0
    while i < len(nodes):
        node = nodes[i]
        refs: list[object] = []
        if isinstance(node, (list, tuple)):
            refs = list(reversed(node))  # list and tuple traverse walk backwards
        row = []
        for r in refs:
            if id(r) not in pos:
                if gc.is_tracked(r) or not isinstance(r, follow):
                    continue
                pos[id(r)] = len(nodes)
                nodes.append(r)
            row.append(pos[id(r)])
        out.append(row)
        i += 1
    return nodes, out


graphs = st.integers(min_value=1, max_value=10).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    )
)


# ------------------------------------------------------- random graph tests


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, data=st.data())
def test_random_object_graphs_match_oracle(graph: tuple[int, Edges], data: st.DataObject) -> None:
    """Random object graphs give the oracle's nodes, edges, SCCs and reachability in every impl."""
    n, edges = graph
    captured = data.draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1), label="captured")
    extras = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), max_size=4), label="extras"
    )
    follow = data.draw(st.sampled_from([(tuple,), (tuple, bytes), (tuple, bytes, int, str), ()]))
    mark = data.draw(st.sampled_from([(), (tuple,), (list, bytes), (object,)]))
    lists, objects = build_objects(n, edges, captured, extras)
    exp_nodes, exp_adj = expected_graph(lists, objects, follow)
    seeds = data.draw(st.lists(st.integers(0, len(exp_nodes) - 1), max_size=3), label="seeds")
    outputs = []
    for impl in IMPLS:
        nodes, offsets, targets, marked = impl.build_graph(objects, follow, mark)
        assert marked == [i for i, node in enumerate(nodes) if isinstance(node, mark)]
        assert offsets.format == "q"
        assert targets.format == "q"
        assert len(nodes) == len(exp_nodes)
        assert all(a is b for a, b in zip(nodes, exp_nodes, strict=True))
        adj = adjacency(offsets, targets)
        assert adj == exp_adj
        comp, count, cyclic, mask = run_all(impl, offsets, targets, seeds)
        check_components(adj, comp, count, cyclic)
        reach = closure(adj)
        assert list(mask) == [int(bool(reach[v] & set(seeds))) for v in range(len(adj))]
        outputs.append((offsets.tobytes(), targets.tobytes(), comp, count, cyclic, mask))
        # In place: the given list becomes the node list, with the same graph.
        given = list(objects)
        same, in_offsets, in_targets, in_marked = impl.build_graph(given, follow, mark, True)
        assert same is given
        assert all(a is b for a, b in zip(given, exp_nodes, strict=True))
        assert (in_offsets.tobytes(), in_targets.tobytes(), in_marked) == (
            offsets.tobytes(),
            targets.tobytes(),
            marked,
        )
    assert all(out == outputs[0] for out in outputs)


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_in_place_needs_a_list(impl: GraphImplementation) -> None:
    """Only a list can become the node list; anything else is a TypeError, untouched."""
    items = (object(),)
    with pytest.raises(TypeError, match="in_place"):
        impl.build_graph(items, (), (), True)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    graph=st.integers(min_value=0, max_value=25).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))),
                max_size=0 if n == 0 else 4 * n,
            ),
            st.lists(st.integers(0, max(n - 1, 0)), max_size=0 if n == 0 else 4),
        )
    )
)
def test_random_csr_graphs_match_oracle(graph: tuple[int, Edges, list[int]]) -> None:
    """SCCs and reachability of random CSR graphs match brute force, identically in C and Python."""
    n, edges, seeds = graph
    offsets, targets = csr(n, edges)
    adj = adjacency(offsets, targets)
    reach = closure(adj)
    results = [run_all(impl, offsets, targets, seeds) for impl in IMPLS]
    for comp, count, cyclic, mask in results:
        check_components(adj, comp, count, cyclic)
        assert list(mask) == [int(bool(reach[v] & set(seeds))) for v in range(n)]
    assert all(r == results[0] for r in results)
    into = [[e for e, w in enumerate(targets) if w == v] for v in range(n)]
    for impl in IMPLS:
        rev_offsets, rev_edges = impl.reverse_edges(offsets, targets)
        assert (rev_offsets.format, rev_edges.format) == ("q", "q")
        assert [list(rev_edges[rev_offsets[v] : rev_offsets[v + 1]]) for v in range(n)] == into


# --------------------------------------------------------- build_graph cases


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_untracked_tuple_and_bytes_become_extra_nodes(impl: GraphImplementation) -> None:
    """An untracked tuple and its bytes become extra nodes; tracked outsiders are ignored."""
    t = _untracked_tuples()[0]
    outsider: list[object] = ["live"]
    holder: list[object] = [t, outsider]
    nodes, offsets, targets, _ = impl.build_graph([holder], (tuple, bytes), ())
    assert len(nodes) == 3
    assert nodes[0] is holder
    assert nodes[1] is t
    assert nodes[2] is t[0]
    assert adjacency(offsets, targets) == [[1], [2], []]  # the int 5 is not followed

    nodes, offsets, targets, _ = impl.build_graph([holder], (tuple,), ())
    assert [id(x) for x in nodes] == [id(holder), id(t)]
    assert adjacency(offsets, targets) == [[1], []]

    nodes, offsets, targets, _ = impl.build_graph([holder], (), ())
    assert nodes == [holder]
    assert adjacency(offsets, targets) == [[]]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_untracked_containers_are_traversed_and_subtypes_follow(impl: GraphImplementation) -> None:
    """Untracked GC containers are traversed in turn and subclasses of a follow type count;
    a tracked one outside the objects is live and never becomes a node."""
    pair = ("k", True)
    gc.collect()  # untracks the tuple of atomic items
    assert not gc.is_tracked(pair)
    d = {"k": True}  # untracked up to 3.13; 3.14 tracks every dict
    holder: list[object] = [pair, d]
    follow = (tuple, dict, int)  # bool subclasses int
    nodes, offsets, targets, _ = impl.build_graph([holder], follow, ())
    # In traversal order (3.10 traverses a list from its end); a tracked dict is live.
    followed = [o for o in gc.get_referents(holder) if not gc.is_tracked(o)]
    expected = [pair] if gc.is_tracked(d) else [pair, d]
    assert sorted(map(id, followed)) == sorted(map(id, expected))
    assert nodes == [holder, *followed, True]
    last = len(followed) + 1  # True, reached from each container
    assert adjacency(offsets, targets) == [list(range(1, last)), *[[last]] * len(followed), []]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_edges_follow_tp_traverse_order_with_duplicates(impl: GraphImplementation) -> None:
    """Edges come in gc.get_referents order, with one edge per reference."""
    a: list[object] = []
    b: dict[str, object] = {}
    c: list[object] = [a, b, a, a]
    b["x"] = a
    b["y"] = c
    a.append(a)
    objects: list[object] = [a, b, c]
    _nodes, offsets, targets, _ = impl.build_graph(objects, (), ())
    pos = {id(o): i for i, o in enumerate(objects)}
    for i, o in enumerate(objects):
        expected = [pos[id(r)] for r in gc.get_referents(o) if id(r) in pos]
        assert list(targets[offsets[i] : offsets[i + 1]]) == expected
    assert adjacency(offsets, targets)[2] == [0, 0, 1, 0]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_repeated_input_object_keeps_first_index(impl: GraphImplementation) -> None:
    """An object listed twice keeps both positions and edges point at the first."""
    a: list[object] = []
    b: list[object] = [a]
    nodes, offsets, targets, _ = impl.build_graph([b, a, a], (), ())
    assert nodes == [b, a, a]
    assert adjacency(offsets, targets) == [[1], [], []]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_untracked_input_object_is_an_edge_target(impl: GraphImplementation) -> None:
    """An input object that the collector does not track is still a target, of any type."""
    word = "x" * 40
    untracked = _untracked_tuples()[0]
    holder: list[object] = [word, untracked, 7]
    nodes, offsets, targets, _ = impl.build_graph([holder, word, untracked], (), ())
    assert nodes == [holder, word, untracked]
    edges = adjacency(offsets, targets)
    assert sorted(edges[0]) == [1, 2]
    assert edges[1:] == [[], []]


class _Meta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        raise AssertionError("user __instancecheck__ called")

    def __subclasscheck__(cls, sub: type) -> bool:
        raise AssertionError("user __subclasscheck__ called")


class _Followed(metaclass=_Meta):
    __slots__ = ()


class _Hostile:
    def __hash__(self) -> int:
        raise AssertionError("__hash__ called")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("__eq__ called")

    def __repr__(self) -> str:
        raise AssertionError("__repr__ called")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"__getattr__({name}) called")

    def __del__(self) -> None:
        pass


class _Target:
    pass


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_hostile_objects_are_compared_by_identity(impl: GraphImplementation) -> None:
    """Raising dunders, a hostile metaclass in follow_types and a dead proxy are all harmless."""
    h1 = _Hostile()
    h2 = _Hostile()
    target = _Target()
    proxy = weakref.proxy(target)
    del target
    holder: list[object] = [h1, h2, proxy, h1]
    objects: list[object] = [holder, h1, h2, proxy]
    nodes, offsets, targets, _ = impl.build_graph(objects, (_Followed, tuple), ())
    assert len(nodes) == 4
    assert all(a is b for a, b in zip(nodes, objects, strict=True))
    assert adjacency(offsets, targets)[0] == [1, 3, 2, 1]
    _comp, count, _cyclic = impl.find_components(offsets, targets)
    assert count == 4
    mask = impl.nodes_reaching(offsets, targets, [3])
    assert list(mask) == [1, 0, 0, 1]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_bad_arguments_raise_the_same_errors(impl: GraphImplementation) -> None:
    """Malformed follow_types, CSR arrays and seeds raise TypeError/ValueError/IndexError."""
    with pytest.raises(TypeError):
        impl.build_graph([], [tuple], ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        impl.build_graph([], (tuple, 3), ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        impl.build_graph([], (tuple,), [tuple])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        impl.build_graph([], (), (tuple, "x"))  # type: ignore[arg-type]
    good_off, good_tgt = csr(2, [(0, 1)])
    with pytest.raises(TypeError):
        impl.find_components(array("i", [0, 1, 1]), good_tgt)
    with pytest.raises(TypeError):
        impl.find_components(good_off, [1])
    with pytest.raises(ValueError, match="offsets"):
        impl.find_components(array("q"), array("q"))
    with pytest.raises(ValueError, match="offsets"):
        impl.find_components(array("q", [0, 2, 1]), good_tgt)
    with pytest.raises(ValueError, match="offsets"):
        impl.find_components(array("q", [1, 1, 1]), good_tgt)
    with pytest.raises(ValueError, match="targets"):
        impl.find_components(good_off, array("q", [2]))
    with pytest.raises(ValueError, match="targets"):
        impl.nodes_reaching(good_off, array("q", [-1]), [])
    with pytest.raises(IndexError):
        impl.nodes_reaching(good_off, good_tgt, [2])
    with pytest.raises(IndexError):
        impl.nodes_reaching(good_off, good_tgt, [-1])
    with pytest.raises(TypeError):
        impl.nodes_reaching(good_off, good_tgt, ["0"])  # type: ignore[list-item]
    assert list(impl.nodes_reaching(good_off, good_tgt, iter([True]))) == [1, 1]


# ------------------------------------------------------------ big graphs


def _size(impl: GraphImplementation) -> int:
    # The Python twin is iterative too, just slower; a smaller size keeps the file fast.
    return 1_000_000 if impl.name == "c" else 200_000


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_long_ring_and_chain_csr(impl: GraphImplementation) -> None:
    """A million-node ring is one cyclic SCC and a chain is n acyclic ones, without recursion."""
    n = _size(impl)
    offsets = array("q", range(n + 1))
    ring = array("q", range(1, n + 1))
    ring[-1] = 0
    comp, count, cyclic = impl.find_components(offsets, ring)
    assert count == 1
    assert cyclic.tobytes() == b"\x01"
    assert comp.tobytes() == bytes(8 * n)
    mask = impl.nodes_reaching(offsets, ring, [n // 2])
    assert mask.tobytes() == b"\x01" * n

    chain_off = array("q", range(n))
    chain_off.append(n - 1)
    chain = array("q", range(1, n))
    comp, count, cyclic = impl.find_components(chain_off, chain)
    assert count == n
    assert cyclic.tobytes() == bytes(n)
    assert comp[0] == n - 1
    assert comp[n - 1] == 0
    mask = impl.nodes_reaching(chain_off, chain, [n // 2])
    assert mask.tobytes() == b"\x01" * (n // 2 + 1) + bytes(n - n // 2 - 1)


@needs_c
def test_extras_found_behind_queued_references_match_the_twin() -> None:
    """A graph far bigger than C's queue of pending references, with untracked tuples and dicts
    found on the way, gets the twin's nodes, edges and marks."""
    rng = random.Random(13)
    pairs = [(b"%d" % i, i * 1000) for i in range(300)]
    gc.collect()
    nested = [(pair, pairs[(k + 1) % len(pairs)]) for k, pair in enumerate(pairs)]
    gc.collect()
    small_dicts = [{"key": b"%d" % i} for i in range(100)]
    assert not any(gc.is_tracked(t) for t in nested)
    # 3.14 tracks every dict: there they are live objects the graph leaves out, as in the twin.
    assert not any(gc.is_tracked(d) for d in small_dicts) or sys.version_info >= (3, 14)
    lists: list[list[object]] = [[] for _ in range(3000)]
    for items in lists:
        items.extend(rng.choices(lists, k=rng.randint(0, 12)))
        items.extend(rng.choices(nested, k=rng.randint(0, 3)))
        items.extend(rng.choices(small_dicts, k=rng.randint(0, 2)))
        items.append(rng.random())
    try:
        built = [impl.build_graph(lists, (tuple, dict, bytes), (dict,)) for impl in IMPLS]
        (nodes, offsets, targets, marked), (c_nodes, c_offsets, c_targets, c_marked) = built
        assert len(nodes) > len(lists) + len(pairs)
        assert len(c_nodes) == len(nodes)
        assert all(a is b for a, b in zip(c_nodes, nodes, strict=True))
        assert c_offsets.tobytes() == offsets.tobytes()
        assert c_targets.tobytes() == targets.tobytes()
        assert c_marked == marked
    finally:
        for items in lists:
            items.clear()


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_long_ring_of_objects(impl: GraphImplementation) -> None:
    """build_graph plus SCCs on a million-list ring of real objects: one cyclic component.

    How long it takes is measured by benchmarks/bench_shapes.py, side by side with a plain
    collection, not asserted here: a loaded machine would fail a wall-clock bound.
    """
    n = _size(impl)
    was_enabled = gc.isenabled()
    gc.disable()  # building the ring should not pay for collections
    try:
        ring: list[list[object]] = [[] for _ in range(n)]
        for i in range(n):
            ring[i].append(ring[(i + 1) % n])
        nodes, offsets, targets, _ = impl.build_graph(ring, (), ())
        _comp, count, cyclic = impl.find_components(offsets, targets)
        assert len(nodes) == n
        assert targets[n - 1] == 0
        assert targets[5] == 6
        assert count == 1
        assert cyclic[0] == 1
        del nodes
        for r in ring:
            r.clear()  # leave no million-object cycle for a later collection
    finally:
        if was_enabled:
            gc.enable()


# ------------------------------------------------------ refcounts and leaks


class _Weak:
    __slots__ = ("__weakref__", "ref")
    ref: list[object]


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
def test_no_leaks_and_refcounts_restored(impl: GraphImplementation) -> None:
    """Dropping the results frees every node and restores all input and extra refcounts."""
    objs = [_Weak() for _ in range(50)]
    for i, o in enumerate(objs):
        o.ref = [objs[(i * 7) % 50], _untracked_tuples()[i % 4]]
    holders = [o.ref for o in objs]
    objects: list[object] = [*objs, *holders]
    extras: list[object] = list(_untracked_tuples())
    # Small ints are shared by the whole interpreter, so their counts drift.
    extras += [x for t in _untracked_tuples() for x in t if not isinstance(x, int)]
    before = [sys.getrefcount(o) for o in objects]
    before_extra = [sys.getrefcount(x) for x in extras]
    for _ in range(3):
        result = impl.build_graph(objects, (tuple, bytes, int, str), ())
        assert len(result[0]) > len(objects)
        del result
    assert [sys.getrefcount(o) for o in objects] == before
    assert [sys.getrefcount(x) for x in extras] == before_extra

    refs = [weakref.ref(o) for o in objs]
    result = impl.build_graph(objects, (tuple,), ())
    del objs, holders, objects, o
    for h in result[0]:
        if isinstance(h, list):
            h.clear()  # break the cycles so plain refcounting frees them
    assert all(r() is not None for r in refs)
    del result, h
    assert all(r() is None for r in refs)


@needs_c
def test_c_memory_does_not_grow() -> None:
    """Repeated C calls return all raw memory (tracemalloc sees PyMem allocations)."""
    assert C is not None
    ring: list[list[object]] = [[] for _ in range(2000)]
    for i, r in enumerate(ring):
        r.append(ring[i - 1])
        r.append(_untracked_tuples()[i % 4])

    def once() -> None:
        nodes, off, tgt, _ = C.build_graph(ring, (tuple, bytes), ())
        C.find_components(off, tgt)
        C.nodes_reaching(off, tgt, range(0, len(nodes), 3))

    once()
    tracemalloc.start()
    try:
        once()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            once()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 10_000
    for r in ring:
        r.clear()


# ------------------------------------------------------------- gc state


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
@pytest.mark.parametrize("enabled", [True, False])
def test_gc_state_restored_and_no_collection_during_build(
    impl: GraphImplementation, enabled: bool
) -> None:
    """build_graph never lets a collection run and restores gc.isenabled()."""
    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    events: list[str] = []
    this_thread = threading.get_ident()

    def callback(phase: str, info: dict[str, int]) -> None:
        # With thresholds of 1, an allocation in another thread (xdist's execnet
        # reader) starts a collection there; only this thread's count matters.
        if threading.get_ident() == this_thread:
            events.append(phase)

    objects: list[object] = [[i, (i,)] for i in range(3000)]
    # Made before the threshold drops: allocating it afterwards schedules a collection
    # (3.14 counts tuples reused from its free list too), which runs at the callee's first
    # line, before build_graph can disable the collector.
    follow = (tuple, int)
    gc.callbacks.append(callback)
    try:
        if enabled:
            gc.enable()
        else:
            gc.disable()
        gc.set_threshold(1, 1, 1)  # any allocation would start a collection
        before = len(events)
        result = impl.build_graph(objects, follow, ())
        seen = len(events)  # read before anything else can allocate
        gc.set_threshold(*thresholds)
        assert gc.isenabled() == enabled
        assert seen == before
        assert len(result[0]) > 6000  # tuples plus the ints they hold
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(callback)
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_public_face_matches_chosen_implementation() -> None:
    """IMPLEMENTATION names the implementation behind the module-level functions."""
    active = C if IMPLEMENTATION == "c" else PY
    assert active is not None
    assert graphcore.build_graph is active.build_graph
    assert graphcore.find_components is active.find_components
    assert graphcore.nodes_reaching is active.nodes_reaching
    assert IMPLEMENTATION in {"c", "python"}


# ------------------------------------------------ big-component helpers


def _bfs_oracle(adj: list[list[int]], sources: list[int], allowed: Any = None) -> dict[int, int]:
    """Distance of each reachable node from the nearest source, by plain BFS."""
    dist = dict.fromkeys(sources, 0)
    order = list(dict.fromkeys(sources))
    for u in order:
        for w in adj[u]:
            if w not in dist and (allowed is None or allowed(w)):
                dist[w] = dist[u] + 1
                order.append(w)
    return dist


def _has_loop(nodes: set[int], edges: list[tuple[int, int]]) -> bool:
    """Brute force: some node reaches itself using only these edges."""
    adj: dict[int, list[int]] = {n: [] for n in nodes}
    for u, v in edges:
        adj[u].append(v)
    for start in nodes:
        todo, seen = list(adj[start]), set()
        while todo:
            w = todo.pop()
            if w == start:
                return True
            if w not in seen:
                seen.add(w)
                todo.extend(adj[w])
    return False


class _Left:
    """A node type for edge classes."""


class _Right:
    """Another node type for edge classes."""


@settings(max_examples=150, deadline=None)
@given(
    graph=st.integers(min_value=1, max_value=14).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n),
            st.lists(st.integers(0, n - 1), min_size=1, max_size=3),
            st.lists(st.sampled_from([_Left, _Right, list]), min_size=n, max_size=n),
            st.integers(0, 2**32),
        )
    )
)
def test_component_helpers_match_oracles(graph: tuple[Any, ...]) -> None:
    """Workspace reach, paths, edge classes and peeling match brute force; C = Python."""
    n, edges, sources, kinds, seed = graph
    offsets, targets = csr(n, edges)
    adj = adjacency(offsets, targets)
    flat = [(u, v) for u in range(n) for v in adj[u]]
    nodes: list[object] = [kind() for kind in kinds]
    comp, count, _ = PY.find_components(offsets, targets)
    comps = comp.tolist()
    wanted = bytes((seed >> (i % 32)) & 1 for i in range(n))
    blocked = bytes((seed >> ((i + 7) % 32)) & 1 for i in range(count))
    results = []
    for impl in IMPLS:
        work = impl.workspace(nodes, offsets, targets, comp)
        plain = work.reach(sources, None, None)
        dist = _bfs_oracle(adj, sources)
        assert sorted(plain) == sorted(dist)
        assert plain[: len(set(sources))] == list(dict.fromkeys(sources))
        assert [dist[v] for v in plain] == sorted(dist[v] for v in plain)  # BFS order
        home = comps[sources[0]]
        enters = [comps[w] == home or not blocked[comps[w]] for w in range(n)]
        kept = _bfs_oracle(adj, sources, enters.__getitem__)
        filtered = work.reach(sources, wanted, blocked)
        assert filtered == [v for v in filtered if wanted[v]]
        assert set(filtered) == {v for v in kept if wanted[v]}

        goals = [v for v in range(n) if (seed >> (v % 29)) & 1]
        paths = work.shortest_paths(sources, goals)
        assert set(paths) == {g for g in goals if g in dist}
        for goal, path in paths.items():
            assert path[0] in sources
            assert path[-1] == goal
            assert len(path) - 1 == dist[goal]
            assert all(b in adj[a] for a, b in itertools.pairwise(path))
        # A second search in the same workspace sees nothing of the first.
        assert work.shortest_paths(sources, goals) == paths
        ends = work.path_ends(sources[0], sources[-1], 1)
        alone = _bfs_oracle(adj, [sources[0]])
        if sources[-1] not in alone:
            assert ends is None
        else:
            length, head, tail = ends
            assert length == alone[sources[-1]]
            assert head[0] == sources[0]
            assert (tail or head)[-1] == sources[-1]
            assert (not tail) == (length + 1 <= 4)
            shown = head if not tail else head + tail
            assert all(b in adj[a] for a, b in itertools.pairwise(head))
            assert all(b in adj[a] for a, b in itertools.pairwise(tail))
            assert len(shown) == (length + 1 if not tail else 4)

        component = comps[sources[-1]]
        members = [v for v in range(n) if comps[v] == component]
        keys, counts, samples = work.edge_classes(members, 2)
        inside = [e for e, (u, v) in enumerate(flat) if comps[u] == comps[v] == component]
        assert sum(counts) == len(inside)
        key_of: dict[int, tuple[Any, ...]] = {}
        for e in inside:
            u, v = flat[e]
            mine = [f for f in range(offsets[u], offsets[u + 1]) if f in inside]
            key_of[e] = (type(nodes[u]), type(nodes[v]), min(mine.index(e), 15), min(len(mine), 16))
        assert keys == list(dict.fromkeys(key_of[e] for e in inside))  # order of first edge
        assert counts == [sum(1 for e in inside if key_of[e] == key) for key in keys]
        for key, picked in zip(keys, samples, strict=True):
            assert 0 < len(picked) <= 2
            assert all(flat[e] == (u, v) and key_of[e] == key for u, v, e in picked)

        removed = [key for c, key in enumerate(keys) if (seed >> (c % 31)) & 1]
        extra = [e for e in inside if (seed >> (e % 23)) & 1][:2]
        left = [flat[e] for e in inside if key_of[e] not in removed and e not in extra]
        acyclic = work.acyclic_without(members, removed, extra)
        assert acyclic == (not _has_loop(set(members), left))
        # Peeled in another order than ascending (the scan then leads no peeling).
        assert work.acyclic_without(members[::-1], removed, extra) == acyclic
        # Members as a read-only buffer (as cycle_candidates gives them): the C core keeps
        # their marks and the edges' classes between the two calls, with the same answers.
        frozen = memoryview(array("q", members)).toreadonly()
        assert work.edge_classes(frozen, 2) == (keys, counts, samples)
        assert work.acyclic_without(frozen, removed, extra) == acyclic
        # The classes' bytes for members not ascending: the scan then leads no peeling.
        backwards = memoryview(array("q", members[::-1])).toreadonly()
        work.edge_classes(backwards, 2)
        assert work.acyclic_without(backwards, removed, extra) == acyclic
        assert work.acyclic_without(frozen, keys, None)  # every edge removed
        results.append((plain, filtered, paths, ends, keys, counts, samples, acyclic))
        work.close()
        with pytest.raises(ValueError, match="closed"):
            work.reach(sources, None, None)
    assert all(r == results[0] for r in results)


def _made_by_one_def() -> Any:
    def step() -> None:
        pass

    return step


def _quick_key_oracle(nodes: list[object], members: list[int], component: int) -> tuple[int, ...]:
    """What find_cycles keyed a cycle by before the cores did it: ids of code objects
    (plain functions) and classes, sorted; the component too when only builtins made it."""
    key = sorted(
        id(o.__code__) if type(o) is type(_quick_key_oracle) else id(type(o))  # type: ignore[attr-defined]
        for o in map(nodes.__getitem__, members)
    )
    made_by_code = any(
        type(o) is type(_quick_key_oracle) or type(o).__module__ != "builtins"
        for o in map(nodes.__getitem__, members)
    )
    return tuple(key if made_by_code else [*key, -1 - component])


@settings(max_examples=150, deadline=None)
@given(
    graph=st.integers(min_value=1, max_value=14).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n),
            st.lists(
                st.sampled_from([_Left, _Right, list, dict, _made_by_one_def]),
                min_size=n,
                max_size=n,
            ),
            st.integers(0, 2**32),
            st.integers(1, 6),
            st.integers(0, 12),
        )
    )
)
def test_cycle_keys_match_the_oracle(graph: tuple[Any, ...]) -> None:
    """Per component: reach, bigness by members or by references inside, and the quick key
    (functions by their code object, so two made by one def share it); C = Python."""
    n, edges, kinds, seed, big_members, big_edges = graph
    offsets, targets = csr(n, edges)
    adj = adjacency(offsets, targets)
    nodes: list[object] = [kind() for kind in kinds]
    comp, count, _ = PY.find_components(offsets, targets)
    comps = comp.tolist()
    groups = [[v for v in range(n) if comps[v] == c] for c in range(count)]
    groups = [g for g in groups if g]
    wanted = bytes((seed >> (i % 32)) & 1 for i in range(n))
    blocked = bytes((seed >> ((i + 7) % 32)) & 1 for i in range(count))
    limit = seed % 5
    asked: list[type] = []

    def specific(cls: type) -> bool:
        asked.append(cls)
        return cls.__module__ != "builtins"

    expected = []
    for keep_empty in (False, True):
        rows = []
        for members in groups:
            retained = PY.workspace(nodes, offsets, targets, comp).reach(
                members, wanted, blocked, limit
            )
            if not retained and not keep_empty:
                continue
            inside = sum(1 for u in members for v in adj[u] if comps[v] == comps[u])
            component = comps[members[0]]
            big = len(members) >= big_members or inside > big_edges
            key = ("structure", component) if big else _quick_key_oracle(nodes, members, component)
            rows.append((key, members, retained))
        expected.append(rows)
    for impl in IMPLS:
        work = impl.workspace(nodes, offsets, targets, comp)
        for keep_empty, rows in zip((False, True), expected, strict=True):
            got = work.cycle_keys(
                groups, wanted, blocked, limit, specific, big_members, big_edges, keep_empty
            )
            assert got == rows
            assert all(any(m is g for g in groups) for _, m, _ in got)  # the caller's own
        frozen = [memoryview(array("q", g)).toreadonly() for g in groups]
        got = work.cycle_keys(
            frozen, wanted, blocked, limit, specific, big_members, big_edges, True
        )
        assert [(k, list(m), r) for k, m, r in got] == expected[1]
        work.close()
        with pytest.raises(ValueError, match="closed"):
            work.cycle_keys(groups, wanted, blocked, limit, specific, big_members, big_edges, True)
    assert all(cls is not type(_quick_key_oracle) for cls in asked)  # a function has its code


@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
def test_cycle_keys_survive_a_specific_that_closes_the_workspace_or_raises(
    impl: GraphImplementation,
) -> None:
    """``specific`` is Python code: a workspace it closes meanwhile gives a clear error,
    what it raises goes through, and members out of range or not ascending are refused."""
    n = 6
    offsets, targets = csr(n, [(i, (i + 1) % n) for i in range(n)])
    comp, _, _ = PY.find_components(offsets, targets)
    nodes: list[object] = [[] for _ in range(n)]
    everything = bytes([1] * n)
    work = impl.workspace(nodes, offsets, targets, comp)

    def fails(cls: type) -> bool:
        raise LookupError("no module")

    with pytest.raises(LookupError, match="no module"):
        work.cycle_keys([list(range(n))], everything, b"\0", n, fails, 200, 400, False)
    for members in ([0, 0, 1], [2, 1], [0, n]):
        with pytest.raises(IndexError):
            work.cycle_keys([members], everything, b"\0", n, bool, 200, 400, False)

    def specific(cls: type) -> bool:
        return cls.__module__ != "builtins"

    key, _, _ = work.cycle_keys([list(range(n))], everything, b"\0", n, specific, 200, 400, False)[
        0
    ]
    assert key == (*sorted([id(list)] * n), -1 - comp[0])  # builtins: not specific
    for odd in ([], iter([0, 1])):  # an empty group, an iterator: refused by both cores
        with pytest.raises((IndexError, TypeError)):
            work.cycle_keys([odd], everything, b"\0", n, specific, 200, 400, True)
    with pytest.raises(TypeError):
        work.cycle_keys([[0]], everything, b"\0", None, specific, 200, 400, True)

    class Emptying:
        """A member whose ``__index__`` empties the caller's list of members meanwhile."""

        def __index__(self) -> int:
            members.clear()
            return 0

    members: list[Any] = [Emptying(), *range(1, n)]
    rows = work.cycle_keys([members], everything, b"\0", n, specific, 200, 400, False)
    assert [(key, retained) for key, _, retained in rows] == [(key, list(range(n)))]
    assert rows[0][1] is members  # the caller's own list, as it is now
    with pytest.raises(ValueError, match="closed"):
        work.cycle_keys(
            [list(range(n))], everything, b"\0", n, lambda _: work.close(), 200, 400, False
        )


@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
def test_acyclic_without_survives_an_index_that_uses_the_workspace(
    impl: GraphImplementation,
) -> None:
    """An extra edge whose ``__index__`` runs another search on the workspace, or closes
    it, meets marks made after the arguments are read: the right answer, or a clear error."""
    n = 200
    # A ring, and a way back along it: without one back reference, the ring is left.
    edges = [(i, (i + 1) % n) for i in range(n)] + [(i, i - 1) for i in range(1, n)]
    offsets, targets = csr(n, edges)
    comp, _, _ = PY.find_components(offsets, targets)
    nodes: list[object] = [_Left() for _ in range(n)]
    members = list(range(n))
    back = next(e for e in range(offsets[5], offsets[6]) if targets[e] == 4)

    class Edge:
        def __init__(self, position: int, meanwhile: Any) -> None:
            self.position, self.meanwhile = position, meanwhile

        def __index__(self) -> int:
            self.meanwhile()
            return self.position

    work = impl.workspace(nodes, offsets, targets, comp)
    assert not work.acyclic_without(members, [], [back])
    # Searches over a few nodes meanwhile re-mark the workspace with those nodes.
    assert not work.acyclic_without(members, [], [Edge(back, lambda: work.reach([0], None, None))])
    assert not work.acyclic_without(
        members, [], [Edge(back, lambda: work.edge_classes([5, 6, 7], 2))]
    )
    with pytest.raises(ValueError, match="closed"):
        work.acyclic_without(members, [], [Edge(back, work.close)])


@needs_c
def test_workspace_reads_member_types_from_the_build() -> None:
    """A workspace over a built graph takes each member's type from the build's record
    (no object header read per member), with the same edge classes and peeling as the
    twin; paired with another node list, it reads the objects again."""
    assert C is not None
    gc.disable()
    try:
        ring: list[object] = [_Left() if i % 3 else _Right() for i in range(300)]
        for index, link in enumerate(ring):
            link.next = ring[(index + 1) % len(ring)]  # type: ignore[attr-defined]
            link.back = ring[index - 1] if index % 5 == 0 else None  # type: ignore[attr-defined]
        lists = [[ring[i], ring[(i * 7) % 300]] for i in range(0, 300, 10)]
        objects: list[object] = [*ring, *(vars(link) for link in ring), *lists]
        results = []
        for impl in IMPLS:
            nodes, offsets, targets, _ = impl.build_graph(list(objects), (), (), False)
            comp, _, members = impl.cycle_candidates(offsets, targets, None)
            work = impl.workspace(nodes, offsets, targets, comp)
            keys, counts, samples = work.edge_classes(members, 4)
            cut = [key for key in keys if key[0] is not list]
            results.append(
                (keys, counts, samples, work.acyclic_without(members, cut, None), members.tolist())
            )
            if impl is C:
                assert work.build_types  # type: ignore[attr-defined]
                # The distinct types of the nodes, as the build recorded them (extras too).
                recorded = C.node_types(offsets)  # type: ignore[misc]
                assert recorded is not None
                assert sorted(map(id, recorded)) == sorted({id(type(n)) for n in nodes})
                assert C.node_types(targets) is None  # type: ignore[misc]
                # The same offsets with other objects: their types are read from them.
                others: list[object] = [_Right() if type(n) is _Left else n for n in nodes]
                other_work = C.workspace(others, offsets, targets, comp)
                assert not other_work.build_types  # type: ignore[attr-defined]
                other_keys = other_work.edge_classes(members, 4)[0]
                assert all(key[0] is not _Left and key[1] is not _Left for key in other_keys)
                other_work.close()
            work.close()
        assert results[0] == results[-1]
        assert len(results[0][0]) > 3
    finally:
        gc.enable()


def _slotted_ring(classes: Sequence[type]) -> list[Any]:
    """A ring of one object per class given, each holding the next in ``next`` (slotted
    classes: no attribute dict of their own, which 3.10 keeps apart)."""
    ring = [cls() for cls in classes]
    for index, link in enumerate(ring):
        link.next = ring[(index + 1) % len(ring)]
    return ring


def _ring_workspaces(ring: list[Any]) -> Iterator[tuple[list[object], Any, Any]]:
    """Per core: the ring's nodes, its members as cycle_candidates lists them, and an open
    workspace (closed when the caller moves on)."""
    for impl in IMPLS:
        nodes, offsets, targets, _ = impl.build_graph(list(ring), (), (), False)
        comp, _, members = impl.cycle_candidates(offsets, targets, None)
        work = impl.workspace(nodes, offsets, targets, comp)
        try:
            yield nodes, members, work
        finally:
            work.close()


def test_members_given_as_a_buffer_are_marked_as_a_list_is() -> None:
    """Members as an int64 buffer (as cycle_candidates lists them, read in place) and as a
    list give the same classes, repeats dropped; an id out of range is refused by both
    cores with the same error, either way."""
    slotted = type("Slotted", (), {"__slots__": ("next",)})
    ring = _slotted_ring([slotted] * 50)
    results = []
    for nodes, members, work in _ring_workspaces(ring):
        ids = members.tolist()
        repeated = array("q", [*ids, ids[3], ids[0]])
        answers = [work.edge_classes(given, 2) for given in (members, ids, repeated)]
        assert answers[0] == answers[1] == answers[2]
        errors = []
        for bad in (array("q", [*ids[:5], len(nodes)]), [*ids[:5], len(nodes)]):
            with pytest.raises(IndexError) as raised:
                work.edge_classes(bad, 2)
            errors.append(str(raised.value))
        assert errors[0] == errors[1]
        results.append((answers[0], errors[0]))
    assert results[0] == results[-1]
    for link in ring:
        del link.next


def test_more_edge_classes_than_a_byte_holds_agree_with_the_twin() -> None:
    """A ring of 300 classes has 300 edge classes, more than the C core's per-edge class
    bytes hold: the classes and their samples, and cuts checked by peeling (which then
    classes each edge itself), are the twin's."""
    ring = _slotted_ring([type(f"Kind{i}", (), {"__slots__": ("next",)}) for i in range(300)])
    results = []
    for _, members, work in _ring_workspaces(ring):
        keys, counts, samples = work.edge_classes(members, 2)
        results.append(
            (
                keys,
                counts,
                samples,
                work.acyclic_without(members, [keys[0]], None),  # the first class's edge
                work.acyclic_without(members, [keys[-1]], None),  # the 300th class's
                work.acyclic_without(members, [], None),  # nothing cut: still a loop
            )
        )
    assert results[0] == results[-1]
    assert len(results[0][0]) == 300
    assert results[0][3:] == (True, True, False)
    for link in ring:
        del link.next


def test_an_attribute_dicts_references_are_classed_by_its_instances_class() -> None:
    """Where instances keep their attributes in a dict of their own (3.10; 3.11+ once it
    is asked for), a dict's references are keyed by its instance's class, marked with
    CLASS_OF_DICT: a `_Left`'s `.next` and a `_Right` helper's `.node`, each a dict's one
    reference to a `_Left`, are two classes; a plain dict in the loop keeps `dict`. Both
    cores agree, and a key given back to acyclic_without removes its class."""
    gc.disable()
    try:
        ring: list[Any] = [_Left() for _ in range(60)]
        for index, link in enumerate(ring):
            link.next = ring[(index + 1) % len(ring)]
        for link in ring[::3]:
            link.helper = _Right()
            link.helper.node = link
        ring[7].next = {"to": ring[8]}  # a plain dict between two links
        objects: list[object] = [*ring, *(link.helper for link in ring[::3]), ring[7].next]
        for obj in objects:
            if type(obj) is not dict:  # a dict it holds, as on 3.10 (3.13+ may read inline)
                obj.__dict__ = dict(vars(obj))
        objects += [vars(obj) for obj in list(objects) if type(obj) is not dict]
        flag = graphcore.CLASS_OF_DICT
        results = []
        for impl in IMPLS:
            nodes, offsets, targets, _ = impl.build_graph(list(objects), (), (), False)
            comp, _, members = impl.cycle_candidates(offsets, targets, None)
            work = impl.workspace(nodes, offsets, targets, comp)
            keys, counts, _ = work.edge_classes(members, 4)
            assert {key[0] for key in keys if key[3] & flag} == {_Left, _Right}
            assert (dict, _Left, 0, 1) in keys  # {"to": ...}
            helpers = [key for key in keys if key[0] is _Right and key[3] & flag]
            assert sum(counts[keys.index(key)] for key in helpers) == 20
            # Without the helpers' `.node` the links still make a loop; without `.next` too,
            # none is left.
            nexts = [key for key in keys if key[0] is _Left and key[3] & flag]
            assert not work.acyclic_without(members, helpers, None)
            assert work.acyclic_without(members, [*helpers, *nexts], None)
            results.append((keys, counts))
            work.close()
        assert results[0] == results[-1]
    finally:
        gc.enable()


@needs_c
def test_a_builds_own_csr_is_checked_once() -> None:
    """The offsets and targets one build made are a valid CSR as they stand: the C core
    checks them in no later call, while arrays from elsewhere (a copy, a part, another
    build's targets) are checked in full, and a bad one still raises."""
    from whyalive.graph import _fastgraph  # type: ignore[attr-defined]

    assert C is not None
    # Lists: an instance would refer through a __dict__ of its own on 3.10.
    ring: list[list[object]] = [[] for _ in range(50)]
    for index, link in enumerate(ring):
        link.append(ring[(index + 1) % len(ring)])
    nodes, offsets, targets, _ = C.build_graph(ring, (), (), False)
    other = C.build_graph(ring[:10], (), (), False)
    checks = _fastgraph.work_counts()["csr_checks"]
    comp, cycles, members = C.cycle_candidates(offsets, targets, None)
    C.find_components(offsets, targets)
    C.nodes_reaching(offsets, targets, [0])
    C.reverse_edges(offsets, targets)
    C.workspace(nodes, offsets, targets, comp).close()
    assert _fastgraph.work_counts()["csr_checks"] == checks
    assert cycles == 1
    assert len(members) == 50
    copied = memoryview(bytes(offsets)).cast("q")
    assert C.find_components(copied, targets)[1] == 1
    assert _fastgraph.work_counts()["csr_checks"] == checks + 1
    with pytest.raises(ValueError, match="offsets"):
        C.find_components(offsets, other[2])  # 10 edges for 50 nodes
    with pytest.raises(ValueError, match="targets"):
        C.find_components(other[1][:-1], targets[:9])  # another build's, cut: node 9 -> 9
    assert _fastgraph.work_counts()["csr_checks"] == checks + 3


@needs_c
def test_edge_classes_look_up_a_class_only_when_a_position_changes_class() -> None:
    """A doubly linked list's .prev and .next alternate; each position remembers its last
    class, so the class table is read a handful of times, not once per reference; the
    classes are the twin's."""
    from whyalive.graph import _fastgraph  # type: ignore[attr-defined]

    assert C is not None
    chain = [_Left() for _ in range(2000)]
    for index, link in enumerate(chain):
        link.prev = chain[index - 1] if index else None  # type: ignore[attr-defined]
        link.next = chain[index + 1] if index + 1 < len(chain) else None  # type: ignore[attr-defined]
    # Each link's instance dict is an object of its own: link -> dict -> .prev, .next.
    objects: list[object] = [*chain, *(vars(link) for link in chain)]
    results = []
    for impl in IMPLS:
        nodes, offsets, targets, _ = impl.build_graph(list(objects), (), (), False)
        comp, _, members = impl.cycle_candidates(offsets, targets, None)
        work = impl.workspace(nodes, offsets, targets, comp)
        before = _fastgraph.work_counts()["class_lookups"]
        results.append(work.edge_classes(members, 4))
        if impl is C:
            assert _fastgraph.work_counts()["class_lookups"] - before <= 8
        work.close()
    assert results[0] == results[-1]
    assert sum(results[0][1]) == 2000 + 2 * 1999


@needs_c
def test_reach_stops_once_the_wanted_nodes_are_found() -> None:
    """With a limit, reach() lists the first wanted nodes in BFS order and stops there: a
    ring of 5,000 holding one payload expands its first member only; the twin lists the
    same nodes, for every limit."""
    from whyalive.graph import _fastgraph  # type: ignore[attr-defined]

    assert C is not None
    n = 5000
    edges = [(i, (i + 1) % n) for i in range(n)] + [(0, n), (2500, n + 1), (4999, n + 2)]
    offsets, targets = csr(n + 3, edges)
    wanted = bytearray(n + 3)
    wanted[n] = wanted[n + 1] = wanted[n + 2] = 1
    for impl in IMPLS:
        comp, _, members = impl.cycle_candidates(offsets, targets, None)
        work = impl.workspace([None] * (n + 3), offsets, targets, comp)
        everything = work.reach(members, wanted, None)
        assert everything == [n, n + 1, n + 2]
        for limit in range(5):
            before = _fastgraph.work_counts()["reach_visits"]
            assert work.reach(members, wanted, None, limit) == everything[:limit]
            if impl is C:
                expanded = _fastgraph.work_counts()["reach_visits"] - before
                assert expanded == [0, 1, 2501, n, n + 3][limit]
        with pytest.raises(ValueError, match="limit"):
            work.reach(members, wanted, None, -1)
        work.close()


@needs_c
def test_acyclic_without_needs_no_peeling_when_ids_rise_along_every_edge_kept() -> None:
    """A chain whose .next references go up the node ids and .prev ones down: without the
    .prev classes every reference left rises, so no loop can close and nothing is peeled;
    a cut leaving edges both ways is peeled, and both answers are the twin's."""
    from whyalive.graph import _fastgraph  # type: ignore[attr-defined]

    assert C is not None
    n = 1000
    edges = [(i, i + 1) for i in range(n - 1)]  # .next: first in each node's edges
    edges += [(i, i - 1) for i in range(1, n)]  # .prev
    edges.sort(key=lambda edge: edge[0])  # stable: .next before .prev
    offsets, targets = csr(n, edges)
    mixed_off, mixed_tgt = csr(4, [(0, 2), (1, 3), (2, 1), (3, 0)])
    for impl in IMPLS:
        comp, _, members = impl.cycle_candidates(offsets, targets, None)
        # The ends of other types: each class then holds references of one direction.
        work = impl.workspace(["first", *range(1, n - 1), b"last"], offsets, targets, comp)
        keys, _, samples = work.edge_classes(members, 2)
        down = [
            key for key, picked in zip(keys, samples, strict=True) if picked[0][1] < picked[0][0]
        ]
        up = [key for key in keys if key not in down]
        peels = _fastgraph.work_counts()["peels"]
        assert work.acyclic_without(members, down, None)
        assert work.acyclic_without(members, up, [1, 3])
        if impl is C:
            assert _fastgraph.work_counts()["peels"] == peels
        assert not work.acyclic_without(members, [], None)
        assert not work.acyclic_without(members, up[:1], None)
        if impl is C:
            assert _fastgraph.work_counts()["peels"] == peels + 2
        work.close()
        # All of one type, the ends' references share a class (position 0 of 1): 0 -> 1
        # rises, 999 -> 998 falls. Removed by its position, the last one is not counted.
        work = impl.workspace([None] * n, offsets, targets, comp)
        keys, _, samples = work.edge_classes(members, 2)
        prev = [key for key in keys if key[2:] == (1, 2)]
        last = len(targets) - 1
        assert work.acyclic_without(members, prev, [last, last])
        if impl is C:
            assert _fastgraph.work_counts()["peels"] == peels + 2
        assert not work.acyclic_without(members, prev, [0])  # peeled: 998 <-> 999 is left
        if impl is C:
            assert _fastgraph.work_counts()["peels"] == peels + 3
        work.close()
        comp, _, members = impl.cycle_candidates(mixed_off, mixed_tgt, None)
        work = impl.workspace([None] * 4, mixed_off, mixed_tgt, comp)
        work.edge_classes(members, 2)
        assert work.acyclic_without(members, [], [3])  # 0 -> 2 -> 1 -> 3: up, down, up
        assert not work.acyclic_without(members, [], [])
        with pytest.raises(IndexError):
            work.acyclic_without(members, [], [4])
        work.close()


def test_acyclic_without_ignores_removed_positions_outside_the_members() -> None:
    """A removed edge position whose source is no member takes no loop away: the C core
    read a class byte for it that edge_classes never wrote (left from an earlier call on
    other members here), and could answer that the members' self-loop was gone."""
    offsets = array("q", [0, 2, 3, 3, 3, 6, 7, 7, 7, 8])
    targets = array("q", [1, 7, 3, 0, 4, 3, 5, 8])  # edge 7 is 8 -> 8
    everyone = memoryview(array("q", range(9))).toreadonly()
    members = memoryview(array("q", [3, 2, 8, 0])).toreadonly()
    for impl in IMPLS:
        comp, _, _ = impl.find_components(offsets, targets)
        work = impl.workspace([None] * 9, offsets, targets, comp)
        work.edge_classes(everyone, 1)  # every edge's byte written once
        work.edge_classes(members, 1)
        # Edge 2 leaves node 1 and edge 3 node 4, neither a member; 8 -> 8 stays.
        assert work.acyclic_without(members, [], [2, 0, 3]) is False
        assert work.acyclic_without(members, [], [7]) is True
        work.close()
