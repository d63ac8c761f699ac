"""The pure-Python twin of the C graph core: CSR building, components, reachability.

Identical results to ``whyalive.graph._fastgraph`` (same node order, edge order and component
ids); :mod:`whyalive.graph.core` describes the contract and picks one of the two. One
exception: where the C ``_asyncio`` module's traversal lists freed objects
(:func:`whyalive.guarded.unsafe_to_traverse`), the twin reads that module's dict alone, as
asking Python for its referents would free them again; the C core reads raw pointers, and
never takes a reference to what it does not keep.
"""

from __future__ import annotations

import gc
import itertools
import operator
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from whyalive.graph.twin_alike import fold_scan, refcount_extra
from whyalive.guarded import module_dict, unsafe_to_traverse

# (type of source, type of target, edge position, degree): an edge class of a structure.
ClassKey = tuple[type, type, int, int]
# In a class key's degree: the source is an instance's attribute dict, and the key's
# source type is that instance's class.
CLASS_OF_DICT = 32

# Formats of 8-byte signed integers that CPython's struct/array/memoryview
# produce on the platforms we support; the C side accepts exactly these too.
_INT64_FORMATS = frozenset({"q", "@q", "=q", "l", "@l", "=l", "n", "@n", "=n"})

# Unbound, so that a hostile metaclass cannot intercept the check the way it
# could with issubclass(); this is PyType_IsSubtype underneath.
_type_subclasscheck = type.__subclasscheck__


def _readonly_int64(values: list[int]) -> memoryview:
    return memoryview(array("q", values)).toreadonly()


def _check_types(given: object, name: str) -> None:
    # Callers' annotations cannot be trusted.
    if not isinstance(given, tuple) or not all(isinstance(t, type) for t in given):
        raise TypeError(f"{name} must be a tuple of types")


def py_build_graph(
    objects: Sequence[object],
    follow_types: tuple[type, ...],
    mark_types: tuple[type, ...],
    in_place: bool = False,
    array_type: type | None = None,
    runs: list[Any] | None = None,
) -> tuple[list[object], memoryview, memoryview, list[int]]:
    """Pure-Python twin of ``_fastgraph.build_graph``."""
    folding = None
    if array_type is not None:
        if type(runs) is not list or runs is objects:
            raise TypeError("array_type must be NumPy's ndarray, with runs a list of its own")
        folding = (array_type, runs)
    was_enabled = gc.isenabled()
    try:
        gc.disable()  # before the call: entering a function may allocate (3.11's first call)
        return _build_graph_paused(
            objects, follow_types, mark_types, in_place, was_enabled, folding
        )
    finally:
        # Again: an interrupt may cut the inner finally (docs/architecture.md, GC rules 10).
        if was_enabled:
            gc.enable()


def _build_graph_paused(
    objects: Sequence[object],
    follow_types: tuple[type, ...],
    mark_types: tuple[type, ...],
    in_place: bool,
    was_enabled: bool,
    folding: tuple[type, list[Any]] | None,
) -> tuple[list[object], memoryview, memoryview, list[int]]:
    try:
        # Disabled before the first allocation: a collection during the build
        # could run finalizers and grow gc.garbage while it is being analysed.
        gc.disable()
        if in_place and type(objects) is not list:
            raise TypeError("in_place needs objects to be a list")
        _check_types(follow_types, "follow_types")
        _check_types(mark_types, "mark_types")
        nodes: list[object] = objects if in_place else list(objects)  # type: ignore[assignment]
        # Keyed by id(): user __hash__/__eq__ must never run. Ids stay valid
        # because ``nodes`` holds a strong reference to every keyed object.
        index: dict[int, int] = {}
        for i, obj in enumerate(nodes):
            index.setdefault(id(obj), i)
        unsafe = unsafe_to_traverse()
        unsafe_at = index.get(id(unsafe), -1) if unsafe is not None else -1
        # id(type) -> follows?  Types outlive the call: their instances are held.
        follow_cache: dict[int, bool] = {}
        mark_cache: dict[int, bool] = {}
        marked: list[int] = []
        found_runs: list[tuple[Any, ...]] = []
        offsets: list[int] = []
        targets: list[int] = []
        get_referents = gc.get_referents
        is_tracked = gc.is_tracked
        add_target = targets.append
        add_offset = offsets.append
        i = 0
        while i < len(nodes):
            add_offset(len(targets))
            if mark_types:
                node_type = type(nodes[i])
                marks = mark_cache.get(id(node_type))
                if marks is None:
                    marks = False
                    for t in mark_types:
                        if _type_subclasscheck(t, node_type):
                            marks = True
                            break
                    mark_cache[id(node_type)] = marks
                if marks:
                    marked.append(i)
            folded: set[int] | None = None
            # A repeated input object folds at its first index only, as in the C core.
            container = type(nodes[i])
            folds = container is list or container is tuple or container is dict
            if folding is not None and folds and index[id(nodes[i])] == i:
                folded = fold_scan(nodes[i], i, folding[0], found_runs)
            for ref in get_referents(nodes[i]) if i != unsafe_at else [module_dict(unsafe)]:
                if folded is not None and id(ref) in folded:
                    continue
                j = index.get(id(ref))
                if j is None:
                    if is_tracked(ref):
                        continue  # a live object outside the captured garbage
                    tp = type(ref)
                    follows = follow_cache.get(id(tp))
                    if follows is None:
                        # A loop, not any(<genexpr>): a closure over tp would
                        # allocate a cell on entry, before gc.disable().
                        follows = False
                        for t in follow_types:
                            if _type_subclasscheck(t, tp):
                                follows = True
                                break
                        follow_cache[id(tp)] = follows
                    if not follows:
                        continue
                    j = len(nodes)
                    nodes.append(ref)
                    index[id(ref)] = j
                add_target(j)
            i += 1
        add_offset(len(targets))
        if folding is not None:
            if any(id(run[0]) not in index for run in found_runs):
                raise RuntimeError("an alike array is no node")  # ndarray not followed
            folding[1].extend((index[id(run[0])], *run[1:]) for run in found_runs)
        result = (nodes, _readonly_int64(offsets), _readonly_int64(targets), marked)
    finally:
        if was_enabled:
            gc.enable()
    return result


def int64_list(buf: Any, name: str) -> list[int]:
    try:
        view = memoryview(buf)
    except TypeError:
        raise TypeError(f"{name} must be a 1-d buffer of int64 (format 'q')") from None
    with view:
        if view.itemsize != 8 or view.ndim != 1 or view.format not in _INT64_FORMATS:
            raise TypeError(f"{name} must be a 1-d buffer of int64 (format 'q')")
        return view.tolist()


def open_csr(offsets: Any, targets: Any) -> tuple[list[int], list[int], int]:
    off = int64_list(offsets, "offsets")
    tgt = int64_list(targets, "targets")
    n = len(off) - 1
    if n < 0:
        raise ValueError("offsets must have at least one entry")
    if off[0] != 0 or off[n] != len(tgt):
        raise ValueError("offsets must start at 0 and end at len(targets)")
    if any(a > b for a, b in itertools.pairwise(off)):
        raise ValueError("offsets must be non-decreasing")
    if tgt and (min(tgt) < 0 or max(tgt) >= n):
        raise ValueError("targets must be node indices in range(len(offsets) - 1)")
    return off, tgt, n


def py_find_components(offsets: Any, targets: Any) -> tuple[memoryview, int, memoryview]:
    """Pure-Python twin of ``_fastgraph.find_components`` (iterative Tarjan)."""
    off, tgt, n = open_csr(offsets, targets)
    index = [-1] * n
    low = [0] * n
    # comp doubles as the on-stack marker: visited with comp -1 means on stack.
    comp = [-1] * n
    stack: list[int] = []
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        call_node = [root]
        call_edge = [off[root]]
        while call_node:
            u = call_node[-1]
            e = call_edge[-1]
            if e < off[u + 1]:
                w = tgt[e]
                call_edge[-1] = e + 1
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    call_node.append(w)
                    call_edge.append(off[w])
                elif comp[w] < 0 and index[w] < low[u]:
                    low[u] = index[w]
            else:
                call_node.pop()
                call_edge.pop()
                if low[u] == index[u]:
                    while True:
                        w = stack.pop()
                        comp[w] = ncomp
                        if w == u:
                            break
                    ncomp += 1
                if call_node:
                    p = call_node[-1]
                    if low[u] < low[p]:
                        low[p] = low[u]
    size = [0] * ncomp
    for c in comp:
        size[c] += 1
    cyclic = bytearray(s > 1 for s in size)
    for v in range(n):
        if v in tgt[off[v] : off[v + 1]]:
            cyclic[comp[v]] = 1
    return _readonly_int64(comp), ncomp, memoryview(bytes(cyclic))


def py_nodes_reaching(offsets: Any, targets: Any, seeds: Iterable[int]) -> memoryview:
    """Pure-Python twin of ``_fastgraph.nodes_reaching`` (reverse BFS)."""
    off, tgt, n = open_csr(offsets, targets)
    mask = bytearray(n)
    queue: list[int] = []
    for seed in seeds:
        s = operator.index(seed)
        if s < 0 or s >= n:
            raise IndexError(f"seed {s} out of range for {n} nodes")
        if not mask[s]:
            mask[s] = 1
            queue.append(s)
    roff, rtgt = _reverse_csr(off, tgt, n, sources=True)
    head = 0
    while head < len(queue):
        w = queue[head]
        head += 1
        for e in range(roff[w], roff[w + 1]):
            u = rtgt[e]
            if not mask[u]:
                mask[u] = 1
                queue.append(u)
    return memoryview(bytes(mask))


def _reverse_csr(
    off: Sequence[int], tgt: Sequence[int], n: int, *, sources: bool
) -> tuple[list[int], list[int]]:
    """The edges grouped by target (a counting sort, as in C, so memory stays two flat
    lists): offsets, and each edge's source node (``sources``) or position."""
    roff = [0] * (n + 1)
    for w in tgt:
        roff[w + 1] += 1
    for v in range(n):
        roff[v + 1] += roff[v]
    fill = roff[:-1]
    data = [0] * len(tgt)
    for v in range(n):
        for e in range(off[v], off[v + 1]):
            w = tgt[e]
            data[fill[w]] = v if sources else e
            fill[w] += 1
    return roff, data


def py_reverse_edges(offsets: Any, targets: Any) -> tuple[memoryview, memoryview]:
    """Pure-Python twin of ``_fastgraph.reverse_edges``: edge positions grouped by target."""
    off, tgt, n = open_csr(offsets, targets)
    roff, edges = _reverse_csr(off, tgt, n, sources=False)
    return _readonly_int64(roff), _readonly_int64(edges)


def py_take_tail(items: list[object], start: int) -> list[object]:
    """Pure-Python twin of ``_fastgraph.take_tail``: remove and return ``items[start:]``."""
    start = max(0, min(start, len(items)))
    tail = items[start:]
    del items[start:]
    return tail


def _first_entries(keys: list[int], first: int) -> Iterable[int]:
    """The position of each distinct key's first entry (all of them when none repeats)."""
    if len(set(keys)) == len(keys):
        return range(first, first + len(keys))
    return dict(
        zip(reversed(keys), range(first + len(keys) - 1, first - 1, -1), strict=True)
    ).values()


def py_saved_start(items: list[object], first: int, end: int) -> int:
    """Pure-Python twin of ``_fastgraph.saved_start``: the first index of the longest tail
    of ``items[first:end]`` that nothing outside that tail holds (see the C side).

    No local variable refers to an entry of ``items``: an interrupt leaves this frame in
    its traceback, and the rescue that runs this again must read the same counts.
    """
    end = max(0, min(end, len(items)))
    first = max(0, min(first, end))
    extra = refcount_extra() + 1  # and the entry in items
    counts = list(map(sys.getrefcount, itertools.islice(items, first, end)))
    keys = list(map(id, itertools.islice(items, first, end)))
    members = set(keys)
    sources: Iterable[int]
    if id(items) not in members and all(map(gc.is_tracked, itertools.islice(items, first, end))):
        sources = _first_entries(keys, first)
        # References from outside are never negative: none at all when they sum to 0.
        inner = sum(
            map(members.__contains__, map(id, gc.get_referents(*map(items.__getitem__, sources))))
        )
        if sum(counts) - extra * len(keys) - inner == 0:
            return first
    # Each distinct object's first position (later pairs win: fed from the end).
    at = dict(zip(reversed(keys), range(end - 1, first - 1, -1), strict=True))
    sources = at.values()
    if id(items) in at:  # items itself is the user's, and its entries are counted above
        sources = [p for p in sources if items[p] is not items]
    inside = Counter(map(id, gc.get_referents(*map(items.__getitem__, sources))))
    entries = Counter(keys) if len(at) < len(keys) else None
    tracked = list(map(gc.is_tracked, itertools.islice(items, first, end)))
    held = {
        key
        for key, count, is_tracked in zip(keys, counts, tracked, strict=True)
        if not is_tracked
        or count - extra - (entries[key] - 1 if entries else 0) - inside.get(key, 0) > 0
    }
    if id(items) in at:
        held.add(id(items))
    stack = list(held)
    while stack:
        position = at[stack.pop()]
        if items[position] is items:
            continue
        for key in map(id, gc.get_referents(items[position])):
            if key in at and key not in held:
                held.add(key)
                stack.append(key)
    if held:
        for position in range(end - 1, first - 1, -1):
            if keys[position - first] in held:
                return position + 1
    return first


def py_cycle_candidates(
    offsets: Any, targets: Any, seeds: Iterable[int] | None
) -> tuple[memoryview, int, memoryview]:
    """Pure-Python twin of ``graph/_fastgraph.cycle_candidates``."""
    component_of, _, cyclic = py_find_components(offsets, targets)
    flags = bytes(cyclic)
    keep = bytes(py_nodes_reaching(offsets, targets, seeds)) if seeds is not None else None
    members = [
        i
        for i, component in enumerate(component_of.tolist())
        if flags[component] and (keep is None or keep[i])
    ]
    return component_of, flags.count(1), _readonly_int64(members)
