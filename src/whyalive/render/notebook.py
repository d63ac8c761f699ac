"""What notebooks and REPLs show: one-line summaries and the offline viewer in a cell.

The viewer goes into the cell as an ``<iframe srcdoc>``: the page keeps its own
Content-Security-Policy (no fetch, only its own hashed scripts), its element ids
and styles stay inside the frame, so several reports on one notebook page never
clash, and ``sandbox="allow-scripts"`` without ``allow-same-origin`` gives it no
access to the notebook around it. Nothing here imports IPython.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from whyalive.render.html_page import HtmlRenderer
from whyalive.render.text import TextRenderer
from whyalive.report import Report
from whyalive.words import (
    plural,
    ranks_phrase,
    report_headline,
    shorten,
    size_to_words,
    summary_headline,
)

if TYPE_CHECKING:
    from whyalive.report.summary import Summary

# A cell is about 900 px wide; the picture, the cut and what the cycle holds fit in this
# height (tests/test_html_browser.py checks it, as a person would look).
VIEWER_HEIGHT = 560
TIMELINE_HEIGHT = 190
_TITLE_LIMIT = 90


def report_line(report: Report) -> str:
    """One line: the text's headline, and the biggest cycle's pattern and title."""
    found = (*report.cycles, *report.uncollectable)
    if not found:
        return report_headline(report)
    top = max(found, key=lambda c: c.total_bytes)
    return f"{report_headline(report)}; top: {top.pattern} ({shorten(top.title, _TITLE_LIMIT)})"


def embed_page(document: str, *, height: int, label: str) -> str:
    """A whole HTML document as a sandboxed ``<iframe srcdoc>`` sized for a notebook cell."""
    return (
        f'<iframe srcdoc="{html.escape(document, quote=True)}" sandbox="allow-scripts" '
        f'title="{html.escape(label, quote=True)}" referrerpolicy="no-referrer" '
        f'style="width: 100%; height: {height}px; border: 1px solid #e5e7eb; '
        'border-radius: 4px;"></iframe>'
    )


def report_html(report: Report, *, label: str | None = None) -> str:
    """The viewer for a report that found something; one line of text for one that did not."""
    if not report.found and not report.timeline:
        first = TextRenderer().render(report).splitlines()[0]
        return f"<p><code>{html.escape(first)}</code></p>"
    title = label or f"whyalive: {report_line(report)}"
    height = VIEWER_HEIGHT + (TIMELINE_HEIGHT if report.timeline else 0)
    return embed_page(HtmlRenderer(title=title).render(report), height=height, label=title)


def explanation_line(report: Report) -> str:
    """One line: the explained object, its bytes, its root and its first holder path."""
    if not report.alive:
        return report_line(report)
    alive = report.alive[0]
    line = f"{alive.description}, {size_to_words(alive.nbytes)}"
    if alive.root:
        line += f", held by {alive.root}"
    if alive.paths:
        path = alive.paths[0]
        steps = [report.node(path.nodes[0]).label]
        steps.extend(f"--{e.name}--> {report.node(e.target).label}" for e in path.edges)
        line += f": {shorten(' '.join(steps), 300)}"
        if len(alive.paths) > 1:
            line += f" (+{plural(len(alive.paths) - 1, 'more path')})"
    if alive.note:
        line += f"; {shorten(alive.note, 200)}"
    return line


def summary_line(summary: Summary) -> str:
    """One line: ranks heard, signatures, bytes, leaking and missing ranks, top pattern."""
    line = summary_headline(summary)
    if summary.rows:
        line += f"; top: {summary.rows[0].pattern}"  # rows are sorted by bytes, biggest first
    if summary.missing:
        line += f"; missing {ranks_phrase(summary.missing)}"
    return line


def summary_html(summary: Summary) -> str:
    """The summary as a plain table: no ids, no stylesheet, no script, so nothing can clash."""
    cell = 'style="padding: 2px 10px; text-align: left;"'
    head = "".join(
        f"<th {cell}>{name}</th>"
        for name in ("signature", "pattern", "ranks", "bytes", "cycles", "title")
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td {cell}>{html.escape(value)}</td>"
            for value in (
                row.signature,
                row.pattern,
                ",".join(map(str, row.ranks)),
                size_to_words(row.total_bytes),
                str(sum(row.occurrences_by_rank.values())),
                row.title,
            )
        )
        + "</tr>"
        for row in summary.rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>" if rows else ""
    return f"<div><p><b>whyalive summary</b>: {html.escape(summary_line(summary))}</p>{table}</div>"
