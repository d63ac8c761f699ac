"""What a picture is: boxes, arrows and the bytes they add up to, shared by the viewer
and Graphviz (:mod:`whyalive.render.pictures` draws a report's). Pure data; no layout,
no markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whyalive.report import Edge, Report
from whyalive.words import edge_kinds as ek
from whyalive.words import shorten

# Characters in a line of a box, and in an edge's label.
LINE_CHARS = 30
EDGE_CHARS = 24


@dataclass(frozen=True)
class PictureNode:
    """One box: ``kind`` is member, path, heavy, autograd, fold, more or root."""

    key: str
    kind: str
    lines: tuple[str, ...]
    node_id: int | None = None
    """The report's node it stands for, when it stands for one."""
    nbytes: int = 0
    """Bytes this box counts in the picture's total (heavy, autograd and more boxes)."""


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


def edge_text(edge: Edge, *, cut: bool = False) -> str:
    """An arrow's label: the reference's name, a closure slot without its variable (the cell
    it points to is named after it), shortened. The cut of a closure variable says so, as
    the text's ``Cut:`` line does, not ``cell_contents`` (the cell above names the variable)."""
    name = edge.name or "(unnamed reference)"
    if edge.kind == ek.CLOSURE:
        name = name.split(" ", 1)[0]
    elif cut and edge.kind == ek.CELL:
        name = "closure variable"
    return shorten(name, EDGE_CHARS)


def label_lines(label: str, location: str | None = None) -> tuple[str, ...]:
    """A label in at most three lines of :data:`LINE_CHARS`, broken after a dot or a space."""
    lines: list[str] = []
    rest = label
    while rest and len(lines) < 3:
        if len(rest) <= LINE_CHARS + 5:
            lines.append(rest)  # a few characters over beat one more line
            break
        if len(lines) == 2:
            lines.append(shorten(rest, LINE_CHARS))
            break
        cut = max(rest.rfind(".", 0, LINE_CHARS), rest.rfind(" ", 0, LINE_CHARS))
        cut = cut + 1 if cut > 0 else LINE_CHARS  # a word cut in two only when it must be
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if location:
        lines.append(shorten(location, LINE_CHARS))
    return tuple(lines)


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
    ) -> None:
        if not any((e.source, e.target, e.label) == (source, target, label) for e in self.edges):
            self.edges.append(PictureEdge(source, target, label, cut, closing, minlen))

    def below_loop(self, key: str) -> int:
        """Ranks from the loop box ``key`` to the first rank under the whole loop."""
        return max(len(self.loop) - self.loop.index(key), 1) if key in self.loop else 1

    def picture(self, key: str, title: str, total: int, caption: str, folded: int = 0) -> Picture:
        """The picture drawn so far."""
        nodes, edges = tuple(self.nodes.values()), tuple(self.edges)
        return Picture(key, title, nodes, edges, total, caption, folded)

    def drawn_bytes(self) -> int:
        return sum(n.nbytes for n in self.nodes.values())
