"""Report node ids for live graph nodes, and holder paths recorded in them.

Shared by the garbage report, :mod:`whyalive.explain` and the census: every report
names its objects through one :class:`NodeTable`.
"""

from __future__ import annotations

from whyalive.analysis.edges import variable_name
from whyalive.analysis.node_names import name_node
from whyalive.analysis.paths import NamedEdge
from whyalive.graph import ObjectGraph
from whyalive.guarded import sizeof
from whyalive.kinds import HeavyFacts
from whyalive.report import Edge, HolderPath, Node
from whyalive.words import edge_kinds as ek


class NodeTable:
    """Assigns report node ids to graph nodes as they are first shown."""

    def __init__(self, graph: ObjectGraph, facts: dict[int, HeavyFacts]) -> None:
        self.graph = graph
        self.facts = facts
        self.ids: dict[int, int] = {}
        self.nodes: list[Node] = []

    def add(self, node: int, variable: str | None = None) -> int:
        found = self.ids.get(node)
        if found is not None:
            return found
        obj = self.graph.nodes[node]
        named = name_node(obj, variable)
        facts = self.facts.get(node)
        facts = facts.own if facts is not None else None  # a run's node shows its own array
        size = sizeof(obj) if facts is None else facts.nbytes
        report_id = len(self.nodes)
        text = facts.description if facts is not None else named.label
        self.nodes.append(
            Node(report_id, named.type_name, text, named.location, int(size), facts is not None)
        )
        self.ids[node] = report_id
        return report_id

    def edge(self, edge: NamedEdge) -> Edge:
        return Edge(self.add(edge.source), self.add(edge.target), edge.name.kind, edge.name.name)


def variables_along(edges: list[NamedEdge]) -> list[str | None]:
    """The user's variable name each path node gets (a cell's contents inherit it)."""
    names: list[str | None] = []
    current: str | None = None
    for edge in edges:
        given = variable_name(edge.name)
        if edge.name.kind == ek.CELL:
            given = current
        names.append(given)
        current = given
    return names


def holder_path_record(table: NodeTable, nodes: list[int], edges: list[NamedEdge]) -> HolderPath:
    """The report's record of a named path; its nodes carry the user's variable names."""
    for node, variable in zip(nodes[1:], variables_along(edges), strict=True):
        table.add(node, variable)
    return HolderPath(
        table.add(nodes[-1]),
        tuple(table.add(n) for n in nodes),
        tuple(table.edge(e) for e in edges),
    )
