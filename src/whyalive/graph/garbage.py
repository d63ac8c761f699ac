"""The object graph over captured garbage: integer node ids and CSR edges.

Nodes ``0..garbage_count-1`` are the captured garbage in capture order; after them
come untracked referents that can lead to heavy objects (NumPy arrays, big
buffers, and the untracked tuples/dicts that hold them), found by following
untracked objects from the garbage. Tracked objects outside the garbage are live
and never become nodes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from whyalive.graph import core as graphcore
from whyalive.kinds import KindResolver

# Untracked containers worth following: the GC untracks tuples (and, up to 3.13, dicts)
# that hold only untracked values (such as NumPy arrays), so they can hide heavy objects.
UNTRACKED_CONTAINERS: tuple[type, ...] = (tuple, dict)


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


def build_graph(objects: list[object], resolver: KindResolver) -> ObjectGraph:
    """One pass of referent traversal over the captured garbage (in C when compiled).

    The graph's node list is ``objects`` itself, with the extras appended until
    :meth:`ObjectGraph.release` takes them off again: copying 10^6 objects into a
    new list would change each one's reference count, twice.
    """
    covered = resolver.covered_types
    count = len(objects)
    nodes, offsets, targets, marked = graphcore.build_graph(
        objects, covered + UNTRACKED_CONTAINERS, covered, True
    )
    return ObjectGraph(nodes, offsets, targets, count, marked)
