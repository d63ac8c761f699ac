"""The monitor's timeline as plain SVG: bytes found per signature, summed over the steps.

Drawn here, in Python, so the page needs no plotting library and no script for it:
one step line per cycle signature (the biggest :data:`MAX_LINES`), a dot with a
tooltip at each analysis, axes in steps and bytes. Every string is escaped and
only presentation attributes are used (the page's CSP forbids inline ``style``).
"""

from __future__ import annotations

import html
from collections import defaultdict

from whyalive.report import Report, TimelinePoint
from whyalive.words import plural, size_to_words

MAX_LINES = 8
_COLORS = ("#dc2626", "#2563eb", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#4b5563")
_WIDTH, _HEIGHT = 930, 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 320, 14, 28
# Characters of 11 px monospace (about 6.7 px each) that fit beside the plot.
_LEGEND_CHARS = (_RIGHT - 28 - 4) * 10 // 67


def _nice_ceiling(nbytes: int) -> int:
    """A round axis top at or above ``nbytes``: 1, 2 or 5 times a power of ten, in B/KiB/MiB..."""
    unit = 1
    while nbytes > unit * 1000:
        unit *= 1024
    scaled = -(-nbytes // unit)
    scale = 1
    while True:
        for factor in (1, 2, 5):
            if factor * scale >= scaled:
                return factor * scale * unit
        scale *= 10


def timeline_svg(report: Report) -> str:
    """``<svg>`` of the report's timeline, or ``""`` when it has none."""
    if not report.timeline:
        return ""
    by_signature: dict[str, list[TimelinePoint]] = defaultdict(list)
    for point in report.timeline:
        by_signature[point.signature].append(point)
    totals = {s: sum(p.nbytes for p in points) for s, points in by_signature.items()}
    drawn = sorted(totals, key=lambda s: (-totals[s], s))[:MAX_LINES]
    last_step = max(max(p.step for p in report.timeline), 1)
    top_bytes = _nice_ceiling(max(max(totals[s] for s in drawn), 1))
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def x(step: int) -> float:
        return round(_LEFT + plot_w * step / last_step, 1)

    def y(nbytes: int) -> float:
        return round(_TOP + plot_h * (1 - nbytes / top_bytes), 1)

    patterns = {c.signature: c.pattern for c in report.cycles}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 {_WIDTH} '
        f'{_HEIGHT}" preserveAspectRatio="xMinYMid meet" role="img" '
        'aria-label="bytes held by cyclic garbage found per step">',
        "<title>Bytes held by the cyclic garbage found, summed over the steps, "
        "per cycle signature</title>",
        '<g font-family="system-ui, sans-serif" font-size="11" fill="#6b7280">',
    ]
    for fraction in (0, 0.5, 1):
        level = int(top_bytes * fraction)
        parts.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(level)}" y2="{y(level)}" '
            'stroke="#e5e7eb"/>'
            f'<text x="{_LEFT - 6}" y="{y(level) + 3}" text-anchor="end">'
            f"{size_to_words(level)}</text>"
        )
    parts.append(
        f'<text x="{_LEFT}" y="{_HEIGHT - 8}">step 0</text>'
        f'<text x="{_LEFT + plot_w}" y="{_HEIGHT - 8}" text-anchor="end">step {last_step}</text>'
        f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 8}" text-anchor="middle">'
        "bytes found, summed over the steps</text></g>"
    )
    for index, signature in enumerate(drawn):
        color = _COLORS[index % len(_COLORS)]
        points = sorted(by_signature[signature], key=lambda p: p.step)
        held = 0
        path = [f"M{x(0)},{y(0)}"]
        dots = []
        for point in points:
            path.append(f"H{x(point.step)}")
            held += point.nbytes
            path.append(f"V{y(held)}")
            tip = (
                f"{signature} at step {point.step}: +{size_to_words(point.nbytes)} "
                f"({plural(point.occurrences, 'cycle')}), {size_to_words(held)} so far"
            )
            dots.append(
                f'<circle cx="{x(point.step)}" cy="{y(held)}" r="3" fill="{color}">'
                f"<title>{html.escape(tip)}</title></circle>"
            )
        parts.append(
            f'<g class="series" data-signature="{html.escape(signature, quote=True)}">'
            f'<path d="{" ".join(path)}" fill="none" stroke="{color}" stroke-width="2"/>'
            + "".join(dots)
            + "</g>"
        )
        legend_y = _TOP + 8 + index * 15
        parts.append(
            f'<rect x="{_WIDTH - _RIGHT + 12}" y="{legend_y - 8}" width="10" height="10" '
            f'fill="{color}"/><text x="{_WIDTH - _RIGHT + 28}" y="{legend_y + 1}" '
            f'font-family="ui-monospace, monospace" font-size="11" fill="#111827">'
            f"<title>{html.escape(signature)}</title>"
            f"{html.escape(_legend_words(signature, patterns, drawn, totals[signature]))}</text>"
        )
    hidden = len(totals) - len(drawn)
    if hidden:
        parts.append(
            f'<text x="{_WIDTH - _RIGHT + 12}" y="{_TOP + 8 + len(drawn) * 15 + 1}" '
            f'font-size="11" fill="#6b7280">+{plural(hidden, "signature")} not drawn</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend_words(signature: str, patterns: dict[str, str], drawn: list[str], nbytes: int) -> str:
    """``attribute-loop 90.0 KiB``: the pattern whole, as the cycle list names it.

    The signature (in the entry's tooltip) is added only where two drawn lines share a
    pattern; only then, and only if the line would not fit, is the pattern shortened.
    """
    pattern = patterns.get(signature) or signature
    size = size_to_words(nbytes)
    shared = sum(patterns.get(s) == patterns.get(signature) for s in drawn) > 1
    tag = f" {signature[:8]}" if shared and pattern != signature else ""
    room = _LEGEND_CHARS - len(tag) - len(size) - 1
    if len(pattern) > room:
        pattern = pattern[: room - 1] + "\u2026"
    return f"{pattern}{tag} {size}"
