"""The object graph over captured garbage: integer node ids and CSR edges (DESIGN §4).

Nodes ``0..garbage_count-1`` are the captured garbage in capture order; after them
come untracked referents that can lead to heavy objects (NumPy arrays, big
buffers, and the untracked tuples/dicts that hold them), found by following
untracked objects from the garbage. Tracked objects outside the garbage are live
and never become nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from whyalive import graphcore
from whyalive.kinds import KindResolver

# Untracked containers worth following: the GC untracks tuples and dicts that hold
# only untracked values (such as NumPy arrays), so they can hide heavy objects.
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

    def __len__(self) -> int:
        return len(self.nodes)

    def successors(self, node: int) -> Sequence[int]:
        """Node ids that ``node`` refers to, in the order its type traverses them."""
        return self.targets[self.offsets[node] : self.offsets[node + 1]]

    def release(self) -> None:
        """Drop the strong references so the garbage can be freed."""
        self.nodes = []
        self.offsets = ()
        self.targets = ()

    def reachable_from(
        self,
        sources: Iterable[int],
        wanted: bytes | bytearray | None = None,
        component_of: memoryview | None = None,
        blocked: bytes | bytearray | None = None,
    ) -> list[int]:
        """Nodes reachable from ``sources`` (sources included), BFS order, in one pass.

        Only nodes flagged in ``wanted`` are listed when it is given; with
        ``component_of``, components flagged in ``blocked`` (other than the
        sources' own) are not entered.
        """
        return graphcore.reach(self.offsets, self.targets, sources, wanted, component_of, blocked)

    def shortest_paths(self, sources: Iterable[int], goals: Iterable[int]) -> dict[int, list[int]]:
        """Shortest node path from any of ``sources`` to each reachable goal (one BFS)."""
        return graphcore.shortest_paths(self.offsets, self.targets, sources, goals)


def build_graph(objects: list[object], resolver: KindResolver) -> ObjectGraph:
    """One pass of referent traversal over the captured garbage (in C when compiled)."""
    covered = resolver.covered_types
    nodes, offsets, targets, marked = graphcore.build_graph(
        objects, covered + UNTRACKED_CONTAINERS, covered
    )
    return ObjectGraph(nodes, offsets, targets, len(objects), marked)
