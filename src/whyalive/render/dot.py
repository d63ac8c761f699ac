"""Graphviz DOT source: each cycle's picture top to bottom, with the answer around it.

Pure string building. The boxes and arrows are :mod:`whyalive.render.picture`'s (shared
with the HTML viewer), so the debugging apparatus (``gc.garbage``, the check itself) can
never appear: it is not in the report. Above the pictures stand the report's headline,
what the boxes add up to and a legend; each picture's frame names its cut and its fix,
so an SVG or PNG pasted into an issue says everything. Every string goes through
:func:`quote` or :func:`html_text`.
"""

from __future__ import annotations

import html
from typing import ClassVar

from whyalive.render.picture import Picture, PictureNode
from whyalive.render.pictures import pictures
from whyalive.render.wrap import wrap
from whyalive.report import Report
from whyalive.words import cut_sentence, report_headline

# Characters per line of the sentences around the pictures.
_TEXT_CHARS = 96
_FILL = {
    "member": "#fecaca",
    "heavy": "#fde68a",
    "fold": "#ffffff",
    "more": "#fde68a",
    "root": "#dbeafe",
}
_HEAVY_LINE = "#d97706"


def quote(text: str) -> str:
    """A DOT double-quoted ID: backslashes, quotes and line breaks escaped, nothing else kept."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    # Control characters have no meaning in a label and some break Graphviz's parser.
    escaped = "".join(ch if ch >= " " else " " for ch in escaped)
    return f'"{escaped}"'


def html_text(text: str) -> str:
    """Text for a Graphviz HTML-like label: markup characters escaped, controls dropped."""
    return html.escape("".join(ch if ch >= " " else " " for ch in text), quote=True)


def heavy_size(emphasis: float) -> tuple[float, float, float]:
    """Width and height (inches, at least: the label may need more) and font size of a box
    that counts bytes, its text ``emphasis`` times the plain size (:meth:`Picture.emphasis`):
    the biggest holding is the biggest box, whichever kind of place holds it."""
    width = round(1.8 * emphasis * emphasis, 2)
    return width, round(width / 2, 2), round(10 * emphasis, 1)


def _lines(text: str) -> str:
    """Sentences wrapped for a label (code spans kept whole), each line left-aligned."""
    return "".join(
        f'{html_text(line.replace("`", ""))}<br align="left"/>' for line in wrap(text, _TEXT_CHARS)
    )


def _legend() -> str:
    keys = (
        ('<font color="#dc2626"><b>- - &gt;</b></font>', "suggested cut"),
        (f'<font color="{_FILL["member"]}">&#9632;</font>', "in the cycle"),
        ('<font color="#d97706">&#9632;</font>', "heavy object"),
        ("<font>&#9633;</font>", "folded: not drawn, counted"),
    )
    cells = "".join(f"<td>{mark}</td><td>{html_text(words)}</td>" for mark, words in keys)
    return f'<table border="0" cellspacing="4"><tr>{cells}</tr></table>'


class DotRenderer:
    """Graphviz DOT source; ``rankdir`` is passed through (``TB`` follows the loop down)."""

    name: ClassVar[str] = "dot"
    file_suffixes: ClassVar[tuple[str, ...]] = (".dot", ".gv")
    binary: ClassVar[bool] = False

    def __init__(self, *, rankdir: str = "TB") -> None:
        if rankdir not in ("LR", "TB", "RL", "BT"):
            raise ValueError(f"rankdir must be LR, TB, RL or BT, not {rankdir!r}")
        self.rankdir = rankdir

    def render(self, report: Report) -> str:
        """``digraph whyalive { ... }``: the headline, then one frame per cycle."""
        views = pictures(report)
        head = _lines(report_headline(report))
        if len(views) == 1:
            head += _lines(views[0].caption)
        label = f'<<table border="0" cellspacing="0"><tr><td align="left">{head}</td></tr>'
        if views:
            label += f'<tr><td align="left">{_legend()}</td></tr>'
        label += "</table>>"
        lines = [
            "digraph whyalive {",
            f"  graph [rankdir={self.rankdir}, fontname=Helvetica, fontsize=11, labelloc=t, "
            f"labeljust=l, nodesep=0.3, ranksep=0.35, label={label}];",
            '  node [shape=box, style="rounded,filled", fillcolor="#f3f4f6", '
            "fontname=Helvetica, fontsize=10];",
            '  edge [fontname=Helvetica, fontsize=9, color="#6b7280"];',
        ]
        for view in views:
            lines.extend(self._view(report, view, len(views) > 1))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _node(self, prefix: str, view: Picture, node: PictureNode) -> str:
        attrs = [f"label={quote(chr(10).join(node.lines))}"]
        fill = _FILL.get(node.kind)
        if fill:
            attrs.append(f'fillcolor="{fill}"')
        if node.nbytes > 0:  # heavy, or the places a "more" box stands for
            width, height, font = heavy_size(view.emphasis(node))
            attrs += [
                f'color="{_HEAVY_LINE}"',
                f"penwidth={view.border(node)}",
                f"width={width}",
                f"height={height}",
                f"fontsize={font}",
            ]
        if node.kind in ("fold", "more"):
            attrs.append('style="rounded,filled,dashed"')
        return f"    {prefix}{node.key.replace('-', '_')} [{', '.join(attrs)}];"

    def _view(self, report: Report, view: Picture, several: bool) -> list[str]:
        # Node names are prefixed per view so a node shown by two views appears in both.
        prefix = view.key.replace("-", "_") + "_"
        words = _lines(view.title)
        if several:
            words += _lines(view.caption)
        number = int(view.key.split("-")[1]) - 1
        if view.key.startswith("cycle-"):
            cycle = report.cycles[number]
            if cycle.cut is not None:
                words += _lines(f"Cut: {cut_sentence(cycle.cut)}")
            words += _lines(f"Fix: {cycle.fix}")
        lines = [
            f"  subgraph cluster_{prefix.rstrip('_')} {{",
            f"    label=<{words}>;",
            '    color="#d1d5db";',
            "    labeljust=l;",
        ]
        lines.extend(self._node(prefix, view, node) for node in view.nodes)
        for edge in view.edges:
            attrs = [f"label={quote(edge.label)}"] if edge.label else []
            if edge.cut:
                attrs += [
                    'color="#dc2626"',
                    "penwidth=2.5",
                    'fontcolor="#dc2626"',
                    "style=dashed",
                    f"tooltip={quote('suggested cut: ' + edge.label)}",
                ]
            if edge.closing:
                attrs.append("constraint=false")  # the loop reads down; this arrow goes back up
            if edge.minlen > 1:
                attrs.append(f"minlen={edge.minlen}")  # what the loop holds hangs under it
            if edge.hidden:
                attrs.append("style=invis")  # it only keeps a column of places in order
            elif not edge.label and not edge.cut:
                attrs.append("style=dotted")
            source = prefix + edge.source.replace("-", "_")
            target = prefix + edge.target.replace("-", "_")
            lines.append(f"    {source} -> {target} [{', '.join(attrs)}];")
        lines.append("  }")
        return lines
