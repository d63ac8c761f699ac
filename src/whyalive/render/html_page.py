"""One self-contained, offline HTML file: the report's data, the viewer and a layout engine.

Safety rests on three rules. Report data goes into the page only as JSON inside a
``<script type="application/json">`` block, with ``<``, ``>``, ``&`` and the JS line
separators escaped, so no string can close the block; the viewer inserts every
string with ``textContent``. A Content-Security-Policy with ``default-src 'none'``
and hashes for the two inline scripts and the stylesheet forbids any fetch and any
script the page did not ship. Layout comes from Graphviz when ``dot`` is installed
where the page is written (only coordinates are embedded, never Graphviz markup),
otherwise from the vendored dagre library that the page always carries.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import shlex
from importlib import resources
from typing import Any, ClassVar, Literal

from whyalive.errors import WhyaliveError
from whyalive.render.dot import quote
from whyalive.render.picture import Picture
from whyalive.render.pictures import pictures
from whyalive.render.svg import find_dot, run_dot
from whyalive.render.text import SHORT_HOLDS, TextRenderer
from whyalive.render.timeline import timeline_svg
from whyalive.report import Report
from whyalive.words import (
    cut_sentence,
    cycle_meta_words,
    edge_label,
    heavy_size_words,
    holding_what,
    loop_gap_line,
    more_words,
    report_headline,
    run_words,
    size_to_words,
)

Layout = Literal["auto", "graphviz", "dagre"]

# The viewer draws text in a 12 px monospace font, so a box's size follows from its
# text; Graphviz and dagre get the same sizes and the two layouts look alike.
_CHAR_W = 7.3
_LINE_H = 16.0
_PAD = 10.0
_POINTS_PER_INCH = 72.0


def _asset(name: str) -> str:
    return (resources.files("whyalive.render") / "assets" / name).read_text(encoding="utf-8")


def _script_safe_json(data: Any) -> str:
    """JSON that cannot end a ``<script>`` block or start an HTML comment or entity."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _sha256(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _box(lines: tuple[str, ...], grow: float = 1.0) -> tuple[float, float]:
    """A box's size for its text at ``grow`` times the 12 px font (padding grows with it)."""
    width = (max(len(line) for line in lines) * _CHAR_W + 2 * _PAD) * grow
    return round(width, 1), round((len(lines) * _LINE_H + _PAD) * grow, 1)


def page_words(report: Report) -> dict[str, Any]:
    """Every sentence and size the viewer shows, phrased here: the page composes none."""
    sizes = {h.node_id: heavy_size_words(h.description, h.nbytes) for h in report.heavy_objects}
    for alive in (*report.alive, *report.held_natively):
        sizes.setdefault(alive.node_id, size_to_words(alive.nbytes))
    return {
        "run": run_words(report.run),
        "cycles": [
            {
                "meta": cycle_meta_words(cycle),
                "bytes": size_to_words(cycle.total_bytes or cycle.bytes_held),
                "cut": cut_sentence(cycle.cut) if cycle.cut is not None else None,
                "holds": [{"where": h.where, "what": holding_what(h)} for h in cycle.holds],
                # As the text's short form: the first few, the rest behind one line.
                "holds_shown": SHORT_HOLDS,
                "holds_more": more_words(len(cycle.holds) - SHORT_HOLDS, "more place")
                if len(cycle.holds) > SHORT_HOLDS
                else None,
                "loop": [edge_label(e.kind, e.name) for e in cycle.loop],
                "loop_gap": loop_gap_line(cycle.loop_hidden) if cycle.loop_hidden else None,
            }
            for cycle in (*report.cycles, *report.uncollectable)
        ],
        "alive": [size_to_words(alive.nbytes) for alive in report.alive],
        "held": [size_to_words(held.nbytes) for held in report.held_natively],
        "node_sizes": [
            heavy_size_words(node.label, node.size) if node.heavy else size_to_words(node.size)
            for node in report.nodes
        ],
        "heavy_sizes": {str(node_id): words for node_id, words in sizes.items()},
    }


def _graph(picture: Picture) -> dict[str, Any]:
    """One drawing of a picture: boxes sized for their text, arrows, no layout yet. A box
    that counts more bytes than others is drawn bigger (``grow``: its text's scale,
    :meth:`Picture.emphasis`; ``share``: the part of the bytes it counts; ``border``: its
    border's width, :meth:`Picture.border`)."""
    nodes = []
    for node in picture.nodes:
        grow = picture.emphasis(node)
        width, height = _box(node.lines, grow)
        nodes.append(
            {
                "key": node.key,
                "kind": node.kind,
                "lines": list(node.lines),
                "node": node.node_id,
                "bytes": node.nbytes,
                "share": round(picture.share(node), 3),
                "border": picture.border(node),
                "grow": grow,
                "w": width,
                "h": height,
            }
        )
    edges = [
        {
            "source": e.source,
            "target": e.target,
            "label": e.label,
            "cut": e.cut,
            "closing": e.closing,
            "minlen": e.minlen,
            "hidden": e.hidden,
        }
        for e in picture.edges
    ]
    return {"nodes": nodes, "edges": edges, "layout": None}


def _view_data(cropped: Picture, compact: Picture, whole: Picture) -> dict[str, Any]:
    """A view: the cropped drawing it opens with, a compact one for a narrow pane when it
    differs (shorter holder paths, or places stacked rather than side by side), and the
    whole one when something is folded."""
    return {
        "key": cropped.key,
        "title": cropped.title,
        "caption": cropped.caption,
        "folded": cropped.folded,
        "crop": _graph(cropped),
        "compact": _graph(compact) if compact != cropped else None,
        "full": _graph(whole) if cropped.folded else None,
    }


def _graphviz_source(graph: dict[str, Any]) -> str:
    """Top to bottom; the arrow closing a loop is drawn by the viewer, beside the loop."""
    lines = [
        "digraph g {",
        "  graph [rankdir=TB, nodesep=0.35, ranksep=0.4];",
        '  node [shape=box, fixedsize=true, label=""];',
        "  edge [fontname=Courier, fontsize=12];",
    ]
    for node in graph["nodes"]:
        width = node["w"] / _POINTS_PER_INCH
        height = node["h"] / _POINTS_PER_INCH
        lines.append(f"  {quote(node['key'])} [width={width:.3f}, height={height:.3f}];")
    lines.extend(
        f"  {quote(edge['source'])} -> {quote(edge['target'])} "
        f"[label={quote(edge['label'])}, minlen={int(edge['minlen'])}];"
        for edge in graph["edges"]
        if not edge["closing"]
    )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _parse_plain(text: str) -> dict[str, Any]:
    """Coordinates from ``dot -Tplain`` (inches, y up) as viewer pixels (y down)."""
    height = 0.0
    layout: dict[str, Any] = {"nodes": {}, "edges": [], "curved": True}
    for raw in text.splitlines():
        parts = shlex.split(raw)  # names and labels come quoted, and may hold spaces
        if not parts:
            continue
        if parts[0] == "graph":
            layout["width"] = float(parts[2]) * _POINTS_PER_INCH
            height = float(parts[3]) * _POINTS_PER_INCH
            layout["height"] = height
        elif parts[0] == "node":
            x, y = float(parts[2]) * _POINTS_PER_INCH, float(parts[3]) * _POINTS_PER_INCH
            layout["nodes"][parts[1]] = [round(x, 1), round(height - y, 1)]
        elif parts[0] == "edge":
            count = int(parts[3])
            flat = [float(p) * _POINTS_PER_INCH for p in parts[4 : 4 + 2 * count]]
            points = [
                [round(flat[i], 1), round(height - flat[i + 1], 1)] for i in range(0, len(flat), 2)
            ]
            label = None
            # After the points come: [label xl yl] style color.
            if len(parts) > 4 + 2 * count + 2:
                xl, yl = float(parts[-4]), float(parts[-3])
                label = [round(xl * _POINTS_PER_INCH, 1), round(height - yl * _POINTS_PER_INCH, 1)]
            ends = [parts[1], parts[2]]
            layout["edges"].append({"points": points, "label": label, "ends": ends})
    return layout


def _graphviz_layout(graph: dict[str, Any]) -> dict[str, Any]:
    layout = _parse_plain(
        run_dot(_graphviz_source(graph), "plain", purpose="html layout").decode("utf-8")
    )
    # Graphviz lists edges by node, not in input order: match them back by their ends
    # (edges between the same two nodes keep their relative order).
    queues: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for geometry in layout["edges"]:
        tail, head = geometry.pop("ends")
        queues.setdefault((tail, head), []).append(geometry)
    ordered: list[dict[str, Any] | None] = []
    for edge in graph["edges"]:
        queue = None if edge["closing"] else queues.get((edge["source"], edge["target"]))
        ordered.append(queue.pop(0) if queue else None)
    layout["edges"] = ordered
    return layout


class HtmlRenderer:
    """The offline viewer; ``layout="auto"`` uses Graphviz when installed, else dagre."""

    name: ClassVar[str] = "html"
    file_suffixes: ClassVar[tuple[str, ...]] = (".html", ".htm")
    binary: ClassVar[bool] = False

    def __init__(self, *, layout: Layout = "auto", title: str = "whyalive report") -> None:
        if layout not in ("auto", "graphviz", "dagre"):
            raise ValueError(f"layout must be 'auto', 'graphviz' or 'dagre', not {layout!r}")
        self.layout = layout
        self.title = title

    def views(self, report: Report) -> list[dict[str, Any]]:
        """The pictures the page shows, with Graphviz coordinates when asked for and available."""
        views = [
            _view_data(*drawings)
            for drawings in zip(
                pictures(report),
                pictures(report, compact=True),
                pictures(report, crop=False),
                strict=True,
            )
        ]
        use_graphviz = self.layout == "graphviz" or (self.layout == "auto" and find_dot())
        if use_graphviz:
            for view in views:
                for graph in (view["crop"], view["compact"], view["full"]):
                    if graph is None or not graph["nodes"]:
                        continue
                    try:
                        graph["layout"] = _graphviz_layout(graph)
                    except WhyaliveError:
                        if self.layout == "graphviz":
                            raise
                        graph["layout"] = None  # dagre in the page lays it out instead
        return views

    def render(self, report: Report) -> str:
        """The whole document."""
        data = _script_safe_json(
            {
                "report": report.to_dict(),
                "views": self.views(report),
                "headline": report_headline(report),
                "words": page_words(report),
            }
        )
        library = _asset("dagre.min.js").replace("//# sourceMappingURL=dagre.min.js.map", "")
        viewer = _asset("viewer.js")
        style = _asset("viewer.css")
        csp = (
            "default-src 'none'; "
            f"script-src {_sha256(library)} {_sha256(viewer)}; "
            f"style-src {_sha256(style)}; "
            "img-src 'none'; connect-src 'none'; font-src 'none'; "
            "base-uri 'none'; form-action 'none'"
        )
        text = html.escape(TextRenderer().render(report))
        svg = timeline_svg(report)
        timeline = f'<section id="timeline">{svg}</section>\n' if svg else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(self.title)}</title>\n"
            f"<style>{style}</style>\n</head>\n<body>\n"
            '<header id="head"><h1 id="headline"></h1><p id="run"></p></header>\n'
            f"{timeline}"
            '<nav id="cycles" aria-label="cycles"></nav>\n'
            '<main><section id="graph-pane"><p id="caption"></p><div id="toolbar"></div>'
            '<svg id="graph" xmlns="http://www.w3.org/2000/svg" role="img"></svg>'
            '<div id="legend" aria-label="legend"><span><i class="key-cut"></i>suggested cut'
            '</span><span><i class="key-member"></i>in the cycle</span>'
            '<span><i class="key-heavy"></i>heavy object</span>'
            '<span><i class="key-fold"></i>folded</span></div></section>\n'
            '<aside id="side"><div id="cycle-details"></div><div id="details"></div></aside>'
            "</main>\n"
            f"<noscript><pre>{text}</pre></noscript>\n"
            f'<script type="application/json" id="whyalive-data">{data}</script>\n'
            f"<script>{library}</script>\n"
            f"<script>{viewer}</script>\n"
            "</body>\n</html>\n"
        )
