"""The C graph core's Python face: CSR graph building, SCCs and reverse reachability.

The work is done by the C extension ``whyalive.graph._fastgraph`` when it is
compiled; otherwise by the pure-Python twin in this module, which produces
identical results (same node order, same edge order, same component ids) and is
also what the equivalence tests compare against.

Results:

* ``build_graph(objects, follow_types, mark_types, in_place=False) -> (nodes, offsets,
  targets, marked)``: ``nodes`` is a new list starting with ``objects`` in order,
  followed by the *extra* nodes in BFS discovery order (with ``in_place``, ``objects``
  must be a list and is itself that list: the extras are appended to it, which spares
  a reference count change on every object; the caller removes them afterwards);
  ``offsets`` (``len(nodes) + 1``) and ``targets`` are read-only int64 memoryviews
  (format ``'q'``) in CSR form.
  If an object occurs more than once in ``objects``, edges point at its first
  index. ``marked`` lists, ascending, the nodes whose type is a subtype of one
  of ``mark_types``. With ``array_type`` (NumPy's ndarray) and a list ``runs``, the
  arrays of that exact type that own their memory, have no base and that a list,
  tuple or dict node alone holds (a dict: as its values; reference count 1) are
  folded when it holds at least ``ALIKE_MIN`` (512) of them, counted per dtype (equal
  dtypes together; 8 at most, the first seen): only the one with the most elements
  (the first of them) becomes a node, and ``runs`` gets ``(node, container, count,
  positions, ((dtype, count, elements, shape or None), ...))``, ``positions`` a bit
  per item (a dict's values, in order), little-endian. A repeated input object folds
  at its first index only.
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
* ``reverse_edges(offsets, targets) -> (offsets, edges)``: the edges grouped by target,
  as read-only int64 memoryviews: the positions in ``targets`` of the edges into node
  ``v`` are ``edges[offsets[v]:offsets[v + 1]]``, ascending (one counting sort).
* ``cycle_candidates(offsets, targets, seeds) -> (component_of_node, cycle_count, members)``:
  ``component_of_node`` as from ``find_components``; ``cycle_count`` the number
  of cyclic components (more than one node, or a self-edge); ``members`` (a
  read-only int64 memoryview) the ascending nodes of cyclic components, only
  those from which a seed is reachable unless ``seeds`` is None. The C
  version settles reachability while completing the components, without a
  reverse graph.

* ``scratch_held()``: a context in which the C core keeps the big arrays freed and cuts
  the next ones from them (each unmapped when the outermost one ends); nothing for the
  twin.

* ``workspace(nodes, offsets, targets, component_of) -> Workspace``: the
  per-component work, each call costing what it visits, never the whole graph
  (the CSR is checked once; scratch arrays are reused):

  - ``reach(sources, wanted, blocked, limit=None) -> list``: the nodes reachable
    from ``sources`` in BFS order (sources first), only those flagged in ``wanted``
    (a byte per node) unless it is None, and only the first ``limit`` of them
    (the search stops once they are found); nodes of a component flagged in
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
    degree their count, capped at 15 and 16; an edge out of a member that is
    another member's attribute dict (``vars(u)``, kept apart on 3.10, and on 3.11+
    once asked for or set out of order) is keyed by that member's type instead,
    with ``CLASS_OF_DICT`` added to the degree; class ids in order of first edge
    (members in the order given, edges in CSR order); ``samples[c]`` up to
    ``samples`` ``(u, v, edge position)`` triples spread over the class, in one
    pass (every stride-th edge; at twice ``samples`` every other one is
    dropped and the stride doubles; at the end every other one is dropped
    until at most ``samples`` are left).
  - ``acyclic_without(members, removed, removed_edges) -> bool``: whether no
    loop is left among the members once the edges of every class key in
    ``removed`` and the edge positions in ``removed_edges`` (or None) are gone.
  - ``close()``: drops the node list and the scratch arrays.

Set ``WHYALIVE_PURE_PYTHON=1`` to force the Python twin. When the C extension is
missing (built without a C compiler), the twin runs and says so: once per process
the first time an analysis starts (:func:`announce_implementation`), in
``whyalive --version`` and in every report's ``run.graph_core``.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from whyalive.graph.twin import (
    CLASS_OF_DICT,
    ClassKey,
    py_build_graph,
    py_cycle_candidates,
    py_find_components,
    py_nodes_reaching,
    py_reverse_edges,
    py_saved_start,
    py_take_tail,
)
from whyalive.graph.twin_workspace import PyWorkspace

__all__ = [
    "CLASS_OF_DICT",
    "IMPLEMENTATION",
    "ClassKey",
    "GraphImplementation",
    "PurePythonCoreWarning",
    "Workspace",
    "announce_implementation",
    "build_graph",
    "c_implementation",
    "clear_objects",
    "cycle_candidates",
    "find_components",
    "implementation_words",
    "nodes_reaching",
    "python_implementation",
    "reverse_edges",
    "saved_start",
    "scratch_held",
    "take_tail",
    "workspace",
]


class BuildGraph(Protocol):
    """``build_graph`` of either implementation (see the module's docstring)."""

    def __call__(
        self,
        objects: Sequence[object],
        follow_types: tuple[type, ...],
        mark_types: tuple[type, ...],
        in_place: bool = False,
        array_type: type | None = None,
        runs: list[Any] | None = None,
        /,
    ) -> tuple[list[object], memoryview, memoryview, list[int]]: ...


FindComponents = Callable[[Any, Any], "tuple[memoryview, int, memoryview]"]
NodesReaching = Callable[[Any, Any, Iterable[int]], memoryview]
CycleCandidates = Callable[[Any, Any, "Iterable[int] | None"], "tuple[memoryview, int, memoryview]"]
ReverseEdges = Callable[[Any, Any], "tuple[memoryview, memoryview]"]


class Workspace(Protocol):
    """Per-component graph work over one graph; each call costs what it visits."""

    def reach(
        self, sources: Iterable[int], wanted: Any, blocked: Any, limit: int | None = None
    ) -> list[int]: ...
    def cycle_keys(
        self,
        groups: Iterable[Sequence[int]],
        wanted: Any,
        blocked: Any,
        limit: int,
        specific: Callable[[type], object],
        big_members: int,
        big_edges: int,
        keep_empty: bool,
    ) -> list[tuple[object, Sequence[int], list[int]]]: ...
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
# Empty the list, then tp_clear each object and drop it (C only: Python cannot call tp_clear).
ClearObjects = Callable[[list[object]], None]
TakeTail = Callable[[list[object], int], "list[object]"]
SavedStart = Callable[[list[object], int, int], int]


@dataclass(frozen=True)
class GraphImplementation:
    """One complete implementation of the graph API ("c" or "python")."""

    name: str
    build_graph: BuildGraph
    find_components: FindComponents
    nodes_reaching: NodesReaching
    cycle_candidates: CycleCandidates
    reverse_edges: ReverseEdges
    workspace: MakeWorkspace
    clear_objects: ClearObjects | None
    take_tail: TakeTail
    saved_start: SavedStart
    # hold_scratch(True / False): keep the big arrays freed meanwhile for the next ones
    # (C only: the twin's arrays are Python objects).
    hold_scratch: Callable[[bool], int] | None = None
    # array_head(array) -> (nd, shape, has_base, owns_data, dtype), read as build_graph
    # reads alike arrays (C only: the twin reads them through NumPy's descriptors).
    array_head: Callable[[object], tuple[Any, ...]] | None = None
    # node_types(offsets) -> the distinct types of a built graph's nodes, recorded by the
    # build (C only: the twin's build records none).
    node_types: Callable[[object], tuple[type, ...] | None] | None = None


_PYTHON = GraphImplementation(
    name="python",
    build_graph=py_build_graph,
    find_components=py_find_components,
    nodes_reaching=py_nodes_reaching,
    cycle_candidates=py_cycle_candidates,
    reverse_edges=py_reverse_edges,
    workspace=PyWorkspace,
    # Python cannot call tp_clear: the caller falls back to a collection.
    clear_objects=None,
    take_tail=py_take_tail,
    saved_start=py_saved_start,
)


def _load_c() -> GraphImplementation | None:
    try:
        mod = importlib.import_module("whyalive.graph._fastgraph")
    except ImportError:
        return None
    return GraphImplementation(
        name="c",
        build_graph=cast(BuildGraph, mod.build_graph),
        find_components=cast(FindComponents, mod.find_components),
        nodes_reaching=cast(NodesReaching, mod.nodes_reaching),
        cycle_candidates=cast(CycleCandidates, mod.cycle_candidates),
        reverse_edges=cast(ReverseEdges, mod.reverse_edges),
        workspace=cast(MakeWorkspace, mod.Workspace),
        clear_objects=cast(ClearObjects, mod.clear_objects),
        take_tail=cast(TakeTail, mod.take_tail),
        saved_start=cast(SavedStart, mod.saved_start),
        hold_scratch=cast("Callable[[bool], int]", mod.hold_scratch),
        array_head=cast("Callable[[object], tuple[Any, ...]]", mod.array_head),
        node_types=cast("Callable[[object], tuple[type, ...] | None]", mod.node_types),
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
reverse_edges: ReverseEdges = _ACTIVE.reverse_edges
workspace: MakeWorkspace = _ACTIVE.workspace
clear_objects: ClearObjects | None = _ACTIVE.clear_objects
take_tail: TakeTail = _ACTIVE.take_tail
saved_start: SavedStart = _ACTIVE.saved_start
_hold_scratch = _ACTIVE.hold_scratch
array_head = _ACTIVE.array_head
node_types = _ACTIVE.node_types


@contextmanager
def scratch_held() -> Iterator[None]:
    """While inside, the C core keeps the big arrays an analysis frees and cuts its next
    ones from them: fresh memory costs the kernel's zeroing and a page fault per page,
    a quarter of an analysis at 10^6 objects. Everything kept is unmapped on leaving
    (the outermost hold, when analyses nest)."""
    hold = _hold_scratch
    if hold is None:
        yield
        return
    try:
        hold(True)  # inside the try: an interrupt right after it still lets go
        yield
    finally:
        hold(False)


class PurePythonCoreWarning(RuntimeWarning):
    """The C graph core is not built, so analyses run on the slower pure-Python twin."""


_FORCED = _C is not None and _ACTIVE is _PYTHON


def implementation_words() -> str:
    """``"C graph core"``, or the pure-Python core and why it runs."""
    if _ACTIVE is _C:
        return "C graph core"
    if _FORCED:
        return "pure-Python graph core, chosen by WHYALIVE_PURE_PYTHON=1"
    return "pure-Python graph core: the C extension whyalive.graph._fastgraph is not built"


_PURE_PYTHON_MESSAGE = (
    "whyalive: the C graph core (whyalive.graph._fastgraph) is not built, so analyses run on the "
    "pure-Python core: same results, several times slower on big garbage. Reinstall whyalive "
    "where a C compiler is available to build it."
)
_announced = False


def announce_implementation() -> None:
    """Say once per process that the pure-Python core runs because the C one is missing.

    Called where an analysis starts, in ordinary code (never inside a gc callback). A
    suite that turns warnings into errors gets the sentence on stderr instead, so a
    missing compiler never fails a check.
    """
    global _announced
    if _announced or _ACTIVE is _C or _FORCED:
        return
    _announced = True
    try:
        warnings.warn(_PURE_PYTHON_MESSAGE, PurePythonCoreWarning, stacklevel=3)
    except Warning:
        sys.stderr.write(_PURE_PYTHON_MESSAGE + "\n")
