"""The object graph over captured garbage: integer node ids and CSR edges.

Nodes ``0..garbage_count-1`` are the captured garbage in capture order; after them
come untracked referents that can lead to heavy objects (NumPy arrays, big
buffers, and the untracked tuples/dicts that hold them), found by following
untracked objects from the garbage. Tracked objects outside the garbage are live
and never become nodes.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from whyalive.graph import core as graphcore
from whyalive.kinds import HeavyFacts, KindResolver
from whyalive.kinds.numpy import NumpyKind, describe_alike

# Untracked containers worth following: the GC untracks tuples (and, up to 3.13, dicts)
# that hold only untracked values (such as NumPy arrays), so they can hide heavy objects.
UNTRACKED_CONTAINERS: tuple[type, ...] = (tuple, dict)


@dataclass(frozen=True)
class AlikeRun:
    """NumPy arrays that own their memory and that one list, tuple or dict alone holds,
    left out of the graph but for one (its node, the one with the most elements), which
    stands for them all: 10^5 small arrays of a list are one node, counted in C
    (``ALIKE_MIN`` of them at least).

    ``positions`` has a bit per item of the container (a dict's values, in order;
    little-endian), set where an alike array sits. ``dtypes`` holds, per dtype,
    ``(dtype, count, elements, shape)``: ``shape`` when every array of that dtype has it,
    else None. Arrays of more than 8 dtypes stay nodes.
    """

    node: int
    container: int
    count: int
    positions: bytes
    dtypes: tuple[tuple[Any, int, int, tuple[int, ...] | None], ...]

    def facts(self, own: HeavyFacts) -> HeavyFacts:
        """The node's facts, holding the bytes of every array of the run (``own``: its own)."""
        positions = int.from_bytes(self.positions, "little")
        return describe_alike(own, self.count, positions, self.dtypes)


@dataclass
class ObjectGraph:
    """Strong references to every node, and integer edges between them."""

    nodes: list[object]
    offsets: Sequence[int]
    targets: Sequence[int]
    garbage_count: int
    heavy_candidates: list[int] = field(default_factory=list)
    """Nodes whose type some heavy-object kind covers, ascending."""
    cpp_edges: dict[tuple[int, int], str] = field(default_factory=dict)
    """(source, target) -> name of each edge that the autograd graph holds in C++ (the
    GC cannot see it): ``.grad_fn``, ``register_prehook() hooks``, ``._saved_self``."""
    alike: dict[int, AlikeRun] = field(default_factory=dict)
    """Node -> the run of alike arrays it stands for (see :class:`AlikeRun`)."""
    types: tuple[type, ...] | None = None
    """The distinct types of the nodes, as the build recorded them (None: not recorded)."""
    freed_by_collector: bool = False
    """Loops found among objects no root reaches (:func:`whyalive.explain.explain`) that
    references the collector sees close: cyclic garbage its next run frees."""

    def __len__(self) -> int:
        return len(self.nodes)

    def successors(self, node: int) -> Sequence[int]:
        """Node ids that ``node`` refers to, in the order its type traverses them."""
        return self.targets[self.offsets[node] : self.offsets[node + 1]]

    workspace: graphcore.Workspace | None = None
    """Per-component work (reach, paths, edge classes), once components are known."""
    reverse: tuple[Sequence[int], Sequence[int]] | None = None
    """Edge positions grouped by target (see :meth:`holders_of`), made on first use."""

    def holders_of(self, node: int) -> list[int]:
        """Nodes with a reference to ``node``, from a reverse index of every edge built
        the first time any node's holders are asked for (one counting sort, in C)."""
        if self.reverse is None:
            self.reverse = graphcore.reverse_edges(self.offsets, self.targets)
        by_target, edges = self.reverse
        return [
            bisect_right(self.offsets, edge) - 1
            for edge in edges[by_target[node] : by_target[node + 1]]
        ]

    def open_workspace(self, component_of: memoryview) -> graphcore.Workspace:
        """Start per-component work; the CSR is checked once, here."""
        self.workspace = graphcore.workspace(self.nodes, self.offsets, self.targets, component_of)
        return self.workspace

    def release(self) -> None:
        """Drop the strong references so the garbage can be freed.

        The node list is the caller's list of garbage (see :func:`build_graph`): the
        extras are taken off its end, the garbage stays the caller's.
        """
        del self.nodes[self.garbage_count :]
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
        self.nodes = []
        self.alike = {}
        self.offsets = ()
        self.targets = ()
        self.reverse = None

    def work(self) -> graphcore.Workspace:
        """The open workspace (see :meth:`open_workspace`)."""
        if self.workspace is None:
            raise RuntimeError("open_workspace() first")
        return self.workspace

    def reachable_from(
        self,
        sources: Iterable[int],
        wanted: bytes | bytearray | None = None,
        blocked: bytes | bytearray | None = None,
        limit: int | None = None,
    ) -> list[int]:
        """Nodes reachable from ``sources`` (sources included), BFS order.

        Only nodes flagged in ``wanted`` are listed when it is given, only the first
        ``limit`` of them (the search stops there: pass how many are flagged in all);
        components flagged in ``blocked`` (other than the sources' own) are not entered.
        """
        return self.work().reach(sources, wanted, blocked, limit)

    def shortest_paths(self, sources: Iterable[int], goals: Iterable[int]) -> dict[int, list[int]]:
        """Shortest node path from any of ``sources`` to each reachable goal (one BFS)."""
        return self.work().shortest_paths(sources, goals)


def build_graph(
    objects: list[object], resolver: KindResolver, *, fold_arrays: bool = True
) -> ObjectGraph:
    """One pass of referent traversal over the captured garbage (in C when compiled).

    The graph's node list is ``objects`` itself, with the extras appended until
    :meth:`ObjectGraph.release` takes them off again: copying 10^6 objects into a
    new list would change each one's reference count, twice. With ``fold_arrays``, the
    alike arrays of a list, tuple or dict are one node (:class:`AlikeRun`).
    """
    covered = resolver.covered_types
    count = len(objects)
    array_type = alike_array_type(resolver) if fold_arrays else None
    runs: list[tuple[int, int, int, bytes, tuple[Any, ...]]] = []
    nodes, offsets, targets, marked = graphcore.build_graph(
        objects, covered + UNTRACKED_CONTAINERS, covered, True, array_type, runs
    )
    graph = ObjectGraph(nodes, offsets, targets, count, marked)
    graph.alike = {run[0]: AlikeRun(*run) for run in runs}
    if graphcore.node_types is not None:
        graph.types = graphcore.node_types(offsets)
    return graph


# id(ndarray) -> whether the C core reads its arrays' head as NumPy does (checked once).
_HEAD_READ: dict[int, bool] = {}


def alike_array_type(resolver: KindResolver) -> type | None:
    """NumPy's ndarray, when its alike arrays can be folded: the user imported NumPy, the
    built-in kind describes its arrays, and the C core reads a probe array's head as NumPy
    does (the pure-Python twin reads them through NumPy's descriptors)."""
    numpy: Any = sys.modules.get("numpy")
    ndarray = getattr(numpy, "ndarray", None)
    if not isinstance(ndarray, type) or not isinstance(resolver[ndarray], NumpyKind):
        return None
    head = graphcore.array_head
    if head is None:
        return ndarray
    known = _HEAD_READ.get(id(ndarray))
    if known is None:
        known = _HEAD_READ[id(ndarray)] = _reads_like_numpy(numpy, head)
    return ndarray if known else None


def _reads_like_numpy(numpy: Any, head: Callable[[object], tuple[Any, ...]]) -> bool:
    try:
        owner = numpy.empty((2, 3), dtype=numpy.int16)
        view = owner[1:]
        read = head(owner), head(view)
        expected = (2, (2, 3), False, True, owner.dtype), (2, (1, 3), True, False, view.dtype)
        return read == expected and read[0][4] is owner.dtype
    except Exception:  # an odd NumPy: fold nothing
        return False


def members_by_component(
    component_of: memoryview, candidates: memoryview, cycle_count: int
) -> dict[int, Sequence[int]]:
    """Candidate nodes grouped by component, each ascending."""
    if not candidates:
        return {}
    if cycle_count == 1:
        # One cycle in the whole graph (a big structure): no pass over the ids.
        return {component_of[candidates[0]]: candidates}
    # Copying the ids out is worth it only when many nodes are candidates.
    many = len(candidates) * 8 > len(component_of)
    components: Sequence[int] = component_of.tolist() if many else component_of
    first = components[candidates[0]]
    # A component is a candidate whole or not at all: one count tells one big cycle.
    if many and cast("list[int]", components).count(first) == len(candidates):
        return {first: candidates}
    members_of: dict[int, list[int]] = defaultdict(list)
    for index in candidates:
        members_of[components[index]].append(index)
    return dict(members_of)
