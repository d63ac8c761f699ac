"""Graphviz DOT source: the cycle, its holder paths and heavy objects, nothing else.

Pure string building. The graph is chosen by :func:`graph_views` (shared with the
HTML viewer) from the report's cycles and still-alive objects only, so the
debugging apparatus (``gc.garbage``, the check itself) can never appear: it is
not in the report. Every string goes through :func:`quote`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from whyalive.report import Edge, Report
from whyalive.words import (
    UNCOLLECTABLE_TITLE,
    edge_label,
    index_range_words,
    loop_gap_words,
    more_words,
    size_to_words,
)


@dataclass(frozen=True)
class ViewEdge:
    """One drawn reference: ``cut`` marks a suggested cut."""

    source: int
    target: int
    name: str
    cut: bool


@dataclass(frozen=True)
class GraphView:
    """What one picture shows: a cycle (or a still-alive object) and what it holds."""

    key: str
    title: str
    nodes: tuple[int, ...]
    edges: tuple[ViewEdge, ...]
    members: tuple[int, ...]
    hidden_heavy: int
    hidden_bytes: int
    folded: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Heavy nodes drawn for their siblings too: node -> (how many, their bytes)."""


def _collect(edges: list[Edge], cut: set[tuple[int, int, str]]) -> tuple[ViewEdge, ...]:
    seen: dict[tuple[int, int, str], ViewEdge] = {}
    for edge in edges:
        key = (edge.source, edge.target, edge.name)
        if key not in seen:
            label = edge_label(edge.kind, edge.name)
            seen[key] = ViewEdge(edge.source, edge.target, label, key in cut)
    return tuple(seen.values())


def fold_siblings(
    report: Report, edges: tuple[ViewEdge, ...]
) -> tuple[tuple[ViewEdge, ...], dict[int, tuple[int, int]], set[int]]:
    """Heavy items of one container drawn as one node reached by ``[0..3]``, as the text folds.

    Returns the edges left, the folded nodes (node -> count, bytes) and the nodes folded away.
    """
    into: dict[int, int] = {}
    leaving: set[int] = set()
    for edge in edges:
        into[edge.target] = into.get(edge.target, 0) + 1
        leaving.add(edge.source)
    groups: dict[tuple[int, str], list[ViewEdge]] = {}
    for edge in edges:
        target = report.node(edge.target) if 0 <= edge.target < len(report.nodes) else None
        if (
            target is not None
            and target.heavy
            and not edge.cut
            and edge.name[1:-1].isdigit()
            and into[edge.target] == 1
            and edge.target not in leaving
        ):
            groups.setdefault((edge.source, target.type_name), []).append(edge)
    folded: dict[int, tuple[int, int]] = {}
    dropped: set[ViewEdge] = set()
    away: set[int] = set()
    relabelled: dict[ViewEdge, ViewEdge] = {}
    for siblings in groups.values():
        if len(siblings) < 2:
            continue
        first = siblings[0]
        indices = [int(e.name[1:-1]) for e in siblings]
        relabelled[first] = ViewEdge(first.source, first.target, index_range_words(indices), False)
        folded[first.target] = (len(siblings), sum(report.node(e.target).size for e in siblings))
        dropped.update(siblings[1:])
        away.update(e.target for e in siblings[1:])
    kept = tuple(relabelled.get(e, e) for e in edges if e not in dropped)
    return kept, folded, away


def heavy_lines(label: str, size: int, folded: tuple[int, int] | None, limit: int) -> list[str]:
    """A heavy node's box: its label and bytes; folded, the sibling count and all their bytes."""
    if folded is None:
        return [_shorten(label, limit), size_to_words(size)]
    count, nbytes = folded
    return [_shorten(f"{count} \u00d7 {label}", limit), size_to_words(nbytes)]


def _nodes_of(first: tuple[int, ...], edges: tuple[ViewEdge, ...]) -> tuple[int, ...]:
    ordered = dict.fromkeys(first)
    for edge in edges:
        ordered.setdefault(edge.source)
        ordered.setdefault(edge.target)
    return tuple(ordered)


def graph_views(report: Report) -> tuple[GraphView, ...]:
    """One view per cycle and per still-alive object, each with its own nodes and edges."""
    views: list[GraphView] = []
    numbered = [
        (f"cycle-{n}", f"Cycle {n}: {c.title}", c) for n, c in enumerate(report.cycles, 1)
    ] + [
        (f"uncollectable-{n}", f"{UNCOLLECTABLE_TITLE} {n}: {c.title}", c)
        for n, c in enumerate(report.uncollectable, 1)
    ]
    for key, title, cycle in numbered:
        cut = {(e.source, e.target, e.name) for e in (cycle.cut.edges if cycle.cut else ())}
        edges = list(cycle.edges)
        for path in cycle.holder_paths:
            edges.extend(path.edges)
        drawn, folded, away = fold_siblings(report, _collect(edges, cut))
        if cycle.loop_hidden and 0 < cycle.loop_hidden_after < len(cycle.loop):
            # The references a long loop leaves out, as one edge across the gap.
            before = cycle.loop[cycle.loop_hidden_after - 1].target
            after = cycle.loop[cycle.loop_hidden_after].source
            gap = ViewEdge(before, after, f"... {loop_gap_words(cycle.loop_hidden)} ...", False)
            drawn = (*drawn, gap)
        nodes = _nodes_of(cycle.members, drawn)
        shown = set(nodes)
        hidden = [h for h in cycle.heavy if h not in shown and h not in away]
        hidden_bytes = sum(report.node(h).size for h in hidden if 0 <= h < len(report.nodes))
        views.append(
            GraphView(
                key,
                title,
                nodes,
                drawn,
                cycle.members,
                len(hidden),
                hidden_bytes,
                folded,
            )
        )
    for number, alive in enumerate(report.alive, 1):
        edges = [e for path in alive.paths for e in path.edges]
        drawn = _collect(edges, set())
        nodes = _nodes_of((alive.node_id,), drawn)
        views.append(
            GraphView(
                f"alive-{number}",
                f"Still alive {number}: {alive.description}",
                nodes,
                drawn,
                (),
                0,
                0,
            )
        )
    return tuple(views)


def quote(text: str) -> str:
    """A DOT double-quoted ID: backslashes, quotes and line breaks escaped, nothing else kept."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    # Control characters have no meaning in a label and some break Graphviz's parser.
    escaped = "".join(ch if ch >= " " else " " for ch in escaped)
    return f'"{escaped}"'


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def heavy_width(nbytes: int) -> float:
    """Node width in inches growing with the log of the bytes, so big tensors stand out."""
    return round(1.2 + 0.25 * math.log2(max(nbytes, 1024) / 1024), 2)


class DotRenderer:
    """Graphviz DOT source; ``rankdir`` is passed through (``LR`` reads left to right)."""

    name: ClassVar[str] = "dot"
    file_suffixes: ClassVar[tuple[str, ...]] = (".dot", ".gv")
    binary: ClassVar[bool] = False

    def __init__(self, *, rankdir: str = "LR") -> None:
        if rankdir not in ("LR", "TB", "RL", "BT"):
            raise ValueError(f"rankdir must be LR, TB, RL or BT, not {rankdir!r}")
        self.rankdir = rankdir

    def render(self, report: Report) -> str:
        """``digraph whyalive { ... }`` with one cluster per cycle."""
        lines = [
            "digraph whyalive {",
            f"  graph [rankdir={self.rankdir}, fontname=Helvetica, fontsize=11];",
            '  node [shape=box, style="rounded,filled", fillcolor="#f3f4f6", '
            "fontname=Helvetica, fontsize=10];",
            '  edge [fontname=Helvetica, fontsize=9, color="#6b7280"];',
        ]
        views = graph_views(report)
        if not views:
            lines.append(f"  label={quote('No cyclic garbage holds heavy objects.')};")
        for view in views:
            lines.extend(self._view(report, view))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _node(
        self,
        report: Report,
        prefix: str,
        node_id: int,
        member: bool,
        folded: tuple[int, int] | None = None,
    ) -> str:
        node = report.node(node_id)
        text = _shorten(node.label)
        if node.location:
            text += f"\n{node.location}"
        attrs = [f"label={quote(text)}", f"tooltip={quote(node.type_name)}"]
        if node.heavy:
            drawn_bytes = folded[1] if folded else node.size
            text = "\n".join(heavy_lines(node.label, node.size, folded, 60))
            attrs[0] = f"label={quote(text)}"
            attrs += [
                'fillcolor="#fde68a"',
                "penwidth=2",
                f"width={heavy_width(drawn_bytes)}",
                f"height={heavy_width(drawn_bytes) / 2:.2f}",
            ]
        elif member:
            attrs.append('fillcolor="#fecaca"')
        return f"    {prefix}n{node_id} [{', '.join(attrs)}];"

    def _view(self, report: Report, view: GraphView) -> list[str]:
        # Node names are prefixed per view so a node shown by two views appears in both.
        prefix = view.key.replace("-", "_") + "_"
        lines = [
            f"  subgraph cluster_{prefix.rstrip('_')} {{",
            f"    label={quote(view.title)};",
            '    color="#d1d5db";',
        ]
        members = set(view.members)
        lines.extend(
            self._node(report, prefix, n, n in members, view.folded.get(n))
            for n in view.nodes
            if 0 <= n < len(report.nodes)
        )
        for edge in view.edges:
            attrs = [f"label={quote(_shorten(edge.name, 40))}"]
            if edge.cut:
                attrs += [
                    'color="#dc2626"',
                    "penwidth=2.5",
                    'fontcolor="#dc2626"',
                    "style=dashed",
                    f"tooltip={quote('suggested cut: ' + edge.name)}",
                ]
            lines.append(
                f"    {prefix}n{edge.source} -> {prefix}n{edge.target} [{', '.join(attrs)}];"
            )
        if view.hidden_heavy and view.members:
            more = (
                f"{more_words(view.hidden_heavy, 'more heavy object')}\n"
                f"{size_to_words(view.hidden_bytes)}"
            )
            lines.append(f"    {prefix}more [label={quote(more)}, style=dashed];")
            lines.append(f"    {prefix}n{view.members[0]} -> {prefix}more [style=dotted];")
        lines.append("  }")
        return lines
