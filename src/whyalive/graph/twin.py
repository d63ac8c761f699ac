"""Reference-graph core: CSR graph building, SCCs and reverse reachability.

The work is done by the C extension ``whyalive._fastgraph`` when it is
compiled; otherwise by the pure-Python twin in this module, which produces
identical results (same node order, same edge order, same component ids) and is
also what the equivalence tests compare against.

Results:

* ``build_graph(objects, follow_types, mark_types) -> (nodes, offsets, targets, marked)``:
  ``nodes`` is a new list starting with ``objects`` in order, followed by the
  *extra* nodes in BFS discovery order; ``offsets`` (``len(nodes) + 1``) and
  ``targets`` are read-only int64 memoryviews (format ``'q'``) in CSR form.
  If an object occurs more than once in ``objects``, edges point at its first
  index. ``marked`` lists, ascending, the nodes whose type is a subtype of one
  of ``mark_types``.
* ``find_components(offsets, targets) -> (component_of_node, count, cyclic)``:
  ``component_of_node`` is a read-only int64 memoryview (``'q'``), ``cyclic``
  a read-only uint8 memoryview (``'B'``) with one entry per component.
  Component ids are Tarjan's completion order, roots tried in node order and
  edges in CSR order; this is a reverse topological order: for every edge
  ``u -> v`` with different components, ``component_of_node[v] <
  component_of_node[u]``.
* ``nodes_reaching(offsets, targets, seeds) -> mask``: read-only uint8
  memoryview (``'B'``), 1 for every node from which some seed is reachable
  following edges forward (seeds included).
* ``cycle_candidates(offsets, targets, seeds) -> (component_of_node, cycle_count, members)``:
  ``component_of_node`` as from ``find_components``; ``cycle_count`` the number
  of cyclic components (more than one node, or a self-edge); ``members`` (a
  read-only int64 memoryview) the ascending nodes of cyclic components, only
  those from which a seed is reachable unless ``seeds`` is None. The C
  version settles reachability while completing the components, without a
  reverse graph.

* ``workspace(nodes, offsets, targets, component_of) -> Workspace``: the
  per-component work, each call costing what it visits, never the whole graph
  (the CSR is checked once; scratch arrays are reused):

  - ``reach(sources, wanted, blocked) -> list``: the nodes reachable from
    ``sources`` in BFS order (sources first), only those flagged in ``wanted``
    (a byte per node) unless it is None; nodes of a component flagged in
    ``blocked`` (a byte per component id), other than the first source's, are
    neither listed nor entered.
  - ``shortest_paths(sources, goals) -> {goal: [node, ...]}``: one BFS from
    every source; the shortest path to each reachable goal.
  - ``path_ends(source, goal, keep) -> None | (length, head, tail)``: the
    shortest path from ``source`` to ``goal``, ``length`` edges long, as its
    first and last ``keep + 1`` nodes; a path of at most ``2 * keep + 2`` nodes
    is whole in ``head`` and ``tail`` is empty.
  - ``edge_classes(members, samples) -> (keys, counts, samples)``: classes of
    the edges between members, keyed ``(type(u), type(v), position, degree)``
    where position is the edge's index among ``u``'s edges to members and
    degree their count, capped at 15 and 16; class ids in order of first edge
    (members in the order given, edges in CSR order); ``samples[c]`` up to
    ``samples`` ``(u, v, edge position)`` triples spread over the class, in one
    pass (every stride-th edge; at twice ``samples`` every other one is
    dropped and the stride doubles; at the end every other one is dropped
    until at most ``samples`` are left).
  - ``acyclic_without(members, removed, removed_edges) -> bool``: whether no
    loop is left among the members once the edges of every class key in
    ``removed`` and the edge positions in ``removed_edges`` (or None) are gone.
  - ``close()``: drops the node list and the scratch arrays.

Set ``WHYALIVE_PURE_PYTHON=1`` to force the Python twin.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import operator
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

__all__ = [
    "IMPLEMENTATION",
    "GraphImplementation",
    "build_graph",
    "c_implementation",
    "clear_objects",
    "cycle_candidates",
    "find_components",
    "nodes_reaching",
    "python_implementation",
    "take_tail",
    "workspace",
]

BuildGraph = Callable[
    [Sequence[object], "tuple[type, ...]", "tuple[type, ...]"],
    "tuple[list[object], memoryview, memoryview, list[int]]",
]
FindComponents = Callable[[Any, Any], "tuple[memoryview, int, memoryview]"]
NodesReaching = Callable[[Any, Any, Iterable[int]], memoryview]
CycleCandidates = Callable[[Any, Any, "Iterable[int] | None"], "tuple[memoryview, int, memoryview]"]
ClassKey = tuple[type, type, int, int]


class Workspace(Protocol):
    """Per-component graph work over one graph; each call costs what it visits."""

    def reach(self, sources: Iterable[int], wanted: Any, blocked: Any) -> list[int]: ...
    def shortest_paths(
        self, sources: Iterable[int], goals: Iterable[int]
    ) -> dict[int, list[int]]: ...
    def path_ends(
        self, source: int, goal: int, keep: int
    ) -> tuple[int, list[int], list[int]] | None: ...
    def edge_classes(
        self, members: Iterable[int], samples: int
    ) -> tuple[list[ClassKey], list[int], list[list[tuple[int, int, int]]]]: ...
    def acyclic_without(
        self,
        members: Iterable[int],
        removed: Sequence[ClassKey],
        removed_edges: Sequence[int] | None,
    ) -> bool: ...
    def close(self) -> None: ...


MakeWorkspace = Callable[[list[object], Any, Any, Any], Workspace]
ClearObjects = Callable[[list[object]], None]
TakeTail = Callable[[list[object], int], "list[object]"]

# Formats of 8-byte signed integers that CPython's struct/array/memoryview
# produce on the platforms we support; the C side accepts exactly these too.
_INT64_FORMATS = frozenset({"q", "@q", "=q", "l", "@l", "=l", "n", "@n", "=n"})

# Unbound, so that a hostile metaclass cannot intercept the check the way it
# could with issubclass(); this is PyType_IsSubtype underneath.
_type_subclasscheck = type.__subclasscheck__


@dataclass(frozen=True)
class GraphImplementation:
    """One complete implementation of the graph API ("c" or "python")."""

    name: str
    build_graph: BuildGraph
    find_components: FindComponents
    nodes_reaching: NodesReaching
    cycle_candidates: CycleCandidates
    workspace: MakeWorkspace
    clear_objects: ClearObjects | None
    take_tail: TakeTail


def _readonly_int64(values: list[int]) -> memoryview:
    return memoryview(array("q", values)).toreadonly()


def _check_types(given: object, name: str) -> None:
    # Callers' annotations cannot be trusted.
    if not isinstance(given, tuple) or not all(isinstance(t, type) for t in given):
        raise TypeError(f"{name} must be a tuple of types")


def _py_build_graph(
    objects: Sequence[object], follow_types: tuple[type, ...], mark_types: tuple[type, ...]
) -> tuple[list[object], memoryview, memoryview, list[int]]:
    """Pure-Python twin of ``_fastgraph.build_graph``."""
    was_enabled = gc.isenabled()
    # Disabled before the first allocation: a collection during the build
    # could run finalizers and grow gc.garbage while it is being analysed.
    gc.disable()
    try:
        _check_types(follow_types, "follow_types")
        _check_types(mark_types, "mark_types")
        nodes: list[object] = list(objects)
        # Keyed by id(): user __hash__/__eq__ must never run. Ids stay valid
        # because ``nodes`` holds a strong reference to every keyed object.
        index: dict[int, int] = {}
        for i, obj in enumerate(nodes):
            index.setdefault(id(obj), i)
        # id(type) -> follows?  Types outlive the call: their instances are held.
        follow_cache: dict[int, bool] = {}
        mark_cache: dict[int, bool] = {}
        marked: list[int] = []
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
            for ref in get_referents(nodes[i]):
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
        result = (nodes, _readonly_int64(offsets), _readonly_int64(targets), marked)
    finally:
        if was_enabled:
            gc.enable()
    return result


def _int64_list(buf: Any, name: str) -> list[int]:
    try:
        view = memoryview(buf)
    except TypeError:
        raise TypeError(f"{name} must be a 1-d buffer of int64 (format 'q')") from None
    with view:
        if view.itemsize != 8 or view.ndim != 1 or view.format not in _INT64_FORMATS:
            raise TypeError(f"{name} must be a 1-d buffer of int64 (format 'q')")
        return view.tolist()


def _open_csr(offsets: Any, targets: Any) -> tuple[list[int], list[int], int]:
    off = _int64_list(offsets, "offsets")
    tgt = _int64_list(targets, "targets")
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


def _py_find_components(offsets: Any, targets: Any) -> tuple[memoryview, int, memoryview]:
    """Pure-Python twin of ``_fastgraph.find_components`` (iterative Tarjan)."""
    off, tgt, n = _open_csr(offsets, targets)
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


def _py_nodes_reaching(offsets: Any, targets: Any, seeds: Iterable[int]) -> memoryview:
    """Pure-Python twin of ``_fastgraph.nodes_reaching`` (reverse BFS)."""
    off, tgt, n = _open_csr(offsets, targets)
    mask = bytearray(n)
    queue: list[int] = []
    for seed in seeds:
        s = operator.index(seed)
        if s < 0 or s >= n:
            raise IndexError(f"seed {s} out of range for {n} nodes")
        if not mask[s]:
            mask[s] = 1
            queue.append(s)
    # Reverse CSR by counting sort, as in C, so memory stays two flat lists.
    roff = [0] * (n + 1)
    for w in tgt:
        roff[w + 1] += 1
    for v in range(n):
        roff[v + 1] += roff[v]
    fill = roff[:-1]
    rtgt = [0] * len(tgt)
    for v in range(n):
        for e in range(off[v], off[v + 1]):
            w = tgt[e]
            rtgt[fill[w]] = v
            fill[w] += 1
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


def _py_take_tail(items: list[object], start: int) -> list[object]:
    """Pure-Python twin of ``_fastgraph.take_tail``: remove and return ``items[start:]``."""
    start = max(0, min(start, len(items)))
    tail = items[start:]
    del items[start:]
    return tail


def _py_cycle_candidates(
    offsets: Any, targets: Any, seeds: Iterable[int] | None
) -> tuple[memoryview, int, memoryview]:
    """Pure-Python twin of ``_fastgraph.cycle_candidates``."""
    component_of, _, cyclic = _py_find_components(offsets, targets)
    flags = bytes(cyclic)
    keep = bytes(_py_nodes_reaching(offsets, targets, seeds)) if seeds is not None else None
    members = [
        i
        for i, component in enumerate(component_of.tolist())
        if flags[component] and (keep is None or keep[i])
    ]
    return component_of, flags.count(1), _readonly_int64(members)


_CLASS_CAP = 15


def _key_id(key: ClassKey) -> tuple[int, int, int, int]:
    # Types are compared by identity, as in C: a metaclass __eq__/__hash__ never runs.
    return id(key[0]), id(key[1]), key[2], key[3]


class _PyWorkspace:
    """Pure-Python twin of ``_fastgraph.Workspace``: the same results, dict-sized scratch."""

    def __init__(self, nodes: list[object], offsets: Any, targets: Any, component_of: Any) -> None:
        self._off, self._tgt, n = _open_csr(offsets, targets)
        self._comp = _int64_list(component_of, "component_of")
        if len(self._comp) != n:
            raise ValueError("component_of must have one entry per node")
        if len(nodes) < n:
            raise ValueError("nodes must hold every graph node (at most 2**32 - 2)")
        self._nodes: list[object] | None = nodes
        self._n = n

    def _ids(self, items: Iterable[int], limit: int) -> list[int]:
        if self._nodes is None:
            raise ValueError("workspace is closed")
        if len(self._nodes) < self._n:
            raise ValueError("nodes must hold every graph node")
        found = []
        for item in items:
            s = operator.index(item)
            if s < 0 or s >= limit:
                raise IndexError(f"seed {s} out of range for {limit} nodes")
            found.append(s)
        return found

    def reach(self, sources: Iterable[int], wanted: Any, blocked: Any) -> list[int]:
        """Nodes reachable from ``sources``, BFS order; see the module docstring."""
        order = list(dict.fromkeys(self._ids(sources, self._n)))
        flags = bytes(wanted) if wanted is not None else None
        if flags is not None and len(flags) < self._n:
            raise ValueError("wanted must have one byte per node")
        stop = bytes(blocked) if blocked is not None else None
        home = self._comp[order[0]] if order else -1
        seen = set(order)
        off, tgt, comp = self._off, self._tgt, self._comp
        head = 0
        while head < len(order):
            u = order[head]
            head += 1
            for w in tgt[off[u] : off[u + 1]]:
                if w in seen:
                    continue
                c = comp[w]
                if stop is not None and c != home and c < len(stop) and stop[c]:
                    continue
                seen.add(w)
                order.append(w)
        return order if flags is None else [v for v in order if flags[v]]

    def shortest_paths(self, sources: Iterable[int], goals: Iterable[int]) -> dict[int, list[int]]:
        """Shortest path from any source to each reachable goal (one BFS)."""
        wanted = set(self._ids(goals, self._n))
        parent: dict[int, int] = {}
        queue: list[int] = []
        for s in self._ids(sources, self._n):
            if s not in parent:
                parent[s] = -1
                queue.append(s)
        found: dict[int, list[int]] = {}
        off, tgt = self._off, self._tgt
        head = 0
        while head < len(queue) and len(found) < len(wanted):
            u = queue[head]
            head += 1
            if u in wanted:
                path = [u]
                while parent[path[-1]] != -1:
                    path.append(parent[path[-1]])
                found[u] = path[::-1]
            for w in tgt[off[u] : off[u + 1]]:
                if w not in parent:
                    parent[w] = u
                    queue.append(w)
        return found

    def path_ends(
        self, source: int, goal: int, keep: int
    ) -> tuple[int, list[int], list[int]] | None:
        """The shortest path's length and its two ends; see the module docstring."""
        (source, goal) = self._ids((source, goal), self._n)
        if keep < 1:
            raise IndexError("path_ends: node out of range or keep < 1")
        if source == goal:
            return 0, [source], []
        parent = {source: -1}
        queue = [source]
        head = 0
        off, tgt = self._off, self._tgt
        while head < len(queue) and goal not in parent:
            u = queue[head]
            head += 1
            for v in tgt[off[u] : off[u + 1]]:
                if v not in parent:
                    parent[v] = u
                    queue.append(v)
                    if v == goal:
                        break
        if goal not in parent:
            return None
        path = [goal]
        while parent[path[-1]] != -1:
            path.append(parent[path[-1]])
        path.reverse()
        if len(path) <= 2 * (keep + 1):
            return len(path) - 1, path, []
        return len(path) - 1, path[: keep + 1], path[-(keep + 1) :]

    def _classed_edges(self, members: list[int]) -> Iterator[tuple[int, int, int, ClassKey]]:
        """(u, v, edge position, class key) of every edge between members."""
        assert self._nodes is not None
        nodes, off, tgt = self._nodes, self._off, self._tgt
        inside = set(members)
        for u in members:
            mine = [e for e in range(off[u], off[u + 1]) if tgt[e] in inside]
            deg = min(len(mine), _CLASS_CAP + 1)
            for pos, e in enumerate(mine):
                v = tgt[e]
                yield u, v, e, (type(nodes[u]), type(nodes[v]), min(pos, _CLASS_CAP), deg)

    def edge_classes(
        self, members: Iterable[int], samples: int
    ) -> tuple[list[ClassKey], list[int], list[list[tuple[int, int, int]]]]:
        """Classes of the edges between members, with counts and spread samples (one pass)."""
        if samples < 1:
            raise ValueError("samples must be at least 1")
        chosen = list(dict.fromkeys(self._ids(members, self._n)))
        ids: dict[tuple[int, int, int, int], int] = {}
        keys: list[ClassKey] = []
        counts: list[int] = []
        strides: list[int] = []
        picked: list[list[tuple[int, int, int]]] = []
        for u, v, e, key in self._classed_edges(chosen):
            c = ids.setdefault(_key_id(key), len(keys))
            if c == len(keys):
                keys.append(key)
                counts.append(0)
                strides.append(1)
                picked.append([])
            index = counts[c]
            counts[c] += 1
            if index % strides[c] == 0:
                picked[c].append((u, v, e))
                if len(picked[c]) == 2 * samples:
                    del picked[c][1::2]  # the edges of the doubled stride
                    strides[c] *= 2
        for kept in picked:
            while len(kept) > samples:
                del kept[1::2]
        return keys, counts, picked

    def acyclic_without(
        self,
        members: Iterable[int],
        removed: Sequence[ClassKey],
        removed_edges: Sequence[int] | None,
    ) -> bool:
        """Whether no loop is left among the members without those edges."""
        chosen = list(dict.fromkeys(self._ids(members, self._n)))
        gone = {_key_id(key) for key in removed}
        cut: set[int] = set()
        for edge in removed_edges or ():
            e = operator.index(edge)
            if e < 0 or e >= len(self._tgt):
                raise IndexError(f"edge {e} out of range for {len(self._tgt)} edges")
            cut.add(e)
        kept: dict[int, list[int]] = {}
        indegree = dict.fromkeys(chosen, 0)
        for u, v, e, key in self._classed_edges(chosen):
            if e not in cut and _key_id(key) not in gone:
                kept.setdefault(u, []).append(v)
                indegree[v] += 1
        queue = [u for u, degree in indegree.items() if degree == 0]
        head = 0
        while head < len(queue):
            u = queue[head]
            head += 1
            for v in kept.get(u, ()):
                indegree[v] -= 1
                if indegree[v] == 0:
                    queue.append(v)
        return len(queue) == len(indegree)

    def close(self) -> None:
        """Drop the nodes."""
        self._nodes = None


_PYTHON = GraphImplementation(
    name="python",
    build_graph=_py_build_graph,
    find_components=_py_find_components,
    nodes_reaching=_py_nodes_reaching,
    cycle_candidates=_py_cycle_candidates,
    workspace=_PyWorkspace,
    # Python cannot call tp_clear: the caller falls back to a collection.
    clear_objects=None,
    take_tail=_py_take_tail,
)


def _load_c() -> GraphImplementation | None:
    try:
        mod = importlib.import_module("whyalive._fastgraph")
    except ImportError:
        return None
    return GraphImplementation(
        name="c",
        build_graph=cast(BuildGraph, mod.build_graph),
        find_components=cast(FindComponents, mod.find_components),
        nodes_reaching=cast(NodesReaching, mod.nodes_reaching),
        cycle_candidates=cast(CycleCandidates, mod.cycle_candidates),
        workspace=cast(MakeWorkspace, mod.Workspace),
        clear_objects=cast(ClearObjects, mod.clear_objects),
        take_tail=cast(TakeTail, mod.take_tail),
    )


_C = _load_c()


def python_implementation() -> GraphImplementation:
    """The pure-Python twin, available whether or not the extension is built."""
    return _PYTHON


def c_implementation() -> GraphImplementation | None:
    """The C extension, or None when it is not compiled (ignores WHYALIVE_PURE_PYTHON)."""
    return _C


_ACTIVE = _PYTHON if (_C is None or os.environ.get("WHYALIVE_PURE_PYTHON") == "1") else _C

IMPLEMENTATION: str = _ACTIVE.name
build_graph: BuildGraph = _ACTIVE.build_graph
find_components: FindComponents = _ACTIVE.find_components
nodes_reaching: NodesReaching = _ACTIVE.nodes_reaching
cycle_candidates: CycleCandidates = _ACTIVE.cycle_candidates
workspace: MakeWorkspace = _ACTIVE.workspace
clear_objects: ClearObjects | None = _ACTIVE.clear_objects
take_tail: TakeTail = _ACTIVE.take_tail
