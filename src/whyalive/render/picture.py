"""What a picture is: boxes, arrows and the bytes they add up to, shared by the viewer
and Graphviz (:mod:`whyalive.render.pictures` draws a report's). Pure data; no layout,
no markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whyalive.report import Edge, Report
from whyalive.words import edge_kinds as ek
from whyalive.words import shorten

# Characters in a line of a box, and in an edge's label. A picture may be a static image
# (PNG, SVG) that nobody can hover to read more, so labels wrap, never cut; only a label
# longer than its lines allow (a name no one writes by hand) ends in an ellipsis.
LINE_CHARS = 30
EDGE_CHARS = 24
_BOX_LINES = 6
_EDGE_LINES = 3
# The text scale of the box that counts the most bytes, beside others that count fewer.
MOST_EMPHASIS = 1.35


@dataclass(frozen=True)
class PictureNode:
    """One box: ``kind`` is member, path, heavy, fold, more or root. Heavy boxes are the
    places that hold heavy objects and what only their autograd graph (C++) keeps; a more
    box stands for the places not drawn. Both count bytes; fold boxes stand for objects."""

    key: str
    kind: str
    lines: tuple[str, ...]
    node_id: int | None = None
    """The report's node it stands for, when it stands for one."""
    nbytes: int = 0
    """Bytes this box counts in the picture's total (heavy and more boxes)."""


@dataclass(frozen=True)
class PictureEdge:
    """One arrow; ``closing`` is the loop's last reference, drawn back up beside the loop."""

    source: str
    target: str
    label: str
    cut: bool = False
    closing: bool = False
    minlen: int = 1
    """Ranks the arrow spans at least: a holder path starts below the loop, not beside it."""
    hidden: bool = False
    """Never drawn: it only keeps ``target`` under ``source`` (compact places in a column)."""


@dataclass(frozen=True)
class Picture:
    """One cycle (or still-alive object) as boxes and arrows, and what they add up to."""

    key: str
    title: str
    nodes: tuple[PictureNode, ...]
    edges: tuple[PictureEdge, ...]
    total: int
    """The bytes the boxes add up to: the cycle's (one occurrence's) or the object's."""
    caption: str
    folded: int = 0
    """Objects the fold boxes stand for that ``crop=False`` would draw."""

    def share(self, node: PictureNode) -> float:
        """The part of the picture's bytes that ``node`` counts, 0 to 1: how heavy the
        renderers draw its border."""
        return min(max(node.nbytes / self.total, 0.0), 1.0) if self.total > 0 else 0.0

    def border(self, node: PictureNode) -> float:
        """The width of ``node``'s border, as heavy as its part of the picture's bytes (the
        same in DOT and HTML)."""
        return round(1.5 + 3 * self.share(node), 2)

    def emphasis(self, node: PictureNode) -> float:
        """How much larger than a plain box's ``node``'s text is drawn: 1 for a box that
        counts no bytes or the fewest of the picture's, :data:`MOST_EMPHASIS` for the most,
        in proportion between; so the biggest holding is the box the eye goes to, and
        boxes that count alike are drawn alike (the picture grows only where it must)."""
        counted = [n.nbytes for n in self.nodes if n.nbytes > 0]
        if node.nbytes <= 0 or len(counted) < 2 or max(counted) == min(counted):
            return 1.0
        above = (node.nbytes - min(counted)) / (max(counted) - min(counted))
        return round(1.0 + (MOST_EMPHASIS - 1.0) * above, 3)


def edge_text(edge: Edge, *, cut: bool = False) -> str:
    """An arrow's label: the reference's name, a closure slot without its variable (the cell
    it points to is named after it), wrapped to lines of :data:`EDGE_CHARS` (``\\n`` between
    them). The cut of a closure variable says so, as the text's ``Cut:`` line does, not
    ``cell_contents`` (the cell above names the variable)."""
    name = edge.name or "(unnamed reference)"
    if edge.kind == ek.CLOSURE:
        name = name.split(" ", 1)[0]
    elif cut and edge.kind == ek.CELL:
        name = "closure variable"
    return arrow_label(name)


def arrow_label(text: str) -> str:
    """``text`` wrapped for an arrow: lines of :data:`EDGE_CHARS`, ``\\n`` between them."""
    return "\n".join(wrapped(text, EDGE_CHARS, _EDGE_LINES))


def wrapped(text: str, chars: int, most: int) -> tuple[str, ...]:
    """``text`` in lines of about ``chars``, broken after a dot or a space (a word cut in two
    only when it must be); past ``most`` lines the last one ends in an ellipsis."""
    lines: list[str] = []
    rest = text
    while rest:
        if len(rest) <= chars + 5:
            lines.append(rest)  # a few characters over beat one more line
            break
        if len(lines) == most - 1:
            lines.append(shorten(rest, chars))
            break
        cut = max(rest.rfind(".", 0, chars), rest.rfind(" ", 0, chars))
        cut = cut + 1 if cut > 0 else chars
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return tuple(lines)


def label_lines(label: str, location: str | None = None) -> tuple[str, ...]:
    """A box's label in lines of :data:`LINE_CHARS`, then its location on a line of its own."""
    lines = wrapped(label, LINE_CHARS, _BOX_LINES)
    return (*lines, *wrapped(location, LINE_CHARS, 2)) if location else lines


@dataclass
class PictureBuilder:
    """Boxes and arrows as they are added, each box once."""

    report: Report
    nodes: dict[str, PictureNode] = field(default_factory=dict)
    edges: list[PictureEdge] = field(default_factory=list)
    loop: list[str] = field(default_factory=list)
    """The loop's boxes from top to bottom (folds included): one rank each."""

    def node(self, node_id: int, kind: str) -> str:
        key = f"n{node_id}"
        if key not in self.nodes:
            found = self.report.node(node_id)
            lines = label_lines(found.label, found.location)
            self.nodes[key] = PictureNode(key, kind, lines, node_id)
        return key

    def add(self, node: PictureNode) -> str:
        self.nodes.setdefault(node.key, node)
        return node.key

    def edge(
        self,
        source: str,
        target: str,
        label: str,
        *,
        cut: bool = False,
        closing: bool = False,
        minlen: int = 1,
        hidden: bool = False,
    ) -> None:
        if not any((e.source, e.target, e.label) == (source, target, label) for e in self.edges):
            self.edges.append(PictureEdge(source, target, label, cut, closing, minlen, hidden))

    def below_loop(self, key: str) -> int:
        """Ranks from the loop box ``key`` to the first rank under the whole loop."""
        return max(len(self.loop) - self.loop.index(key), 1) if key in self.loop else 1

    def picture(self, key: str, title: str, total: int, caption: str, folded: int = 0) -> Picture:
        """The picture drawn so far."""
        nodes, edges = tuple(self.nodes.values()), tuple(self.edges)
        return Picture(key, title, nodes, edges, total, caption, folded)

    def drawn_bytes(self) -> int:
        return sum(n.nbytes for n in self.nodes.values())
