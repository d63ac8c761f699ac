"""The distributed summary as a text table: one row per cycle signature across ranks."""

from __future__ import annotations

from whyalive.report.summary import Summary
from whyalive.words import ranks_phrase, ranks_words, size_to_words, summary_headline


def render_summary(summary: Summary) -> str:
    """The summary as a text table: signature, pattern, ranks, bytes, occurrences."""
    lines = [f"whyalive summary: {summary_headline(summary)}"]
    if summary.missing:
        lines.append(
            f"missing: {ranks_phrase(summary.missing)} did not report "
            "(crashed, stuck, or never called gather_summary)"
        )
    if summary.rows:
        header = ("signature", "pattern", "ranks", "bytes", "per rank", "cycles")
        table = [header]
        for row in summary.rows:
            per_rank = " ".join(
                f"{r}:{size_to_words(b)}" for r, b in sorted(row.bytes_by_rank.items())
            )
            table.append(
                (
                    row.signature,
                    row.pattern,
                    ranks_words(row.ranks),
                    size_to_words(row.total_bytes),
                    per_rank,
                    str(sum(row.occurrences_by_rank.values())),
                )
            )
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        lines.extend(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in table
        )
        lines.extend(
            f"{row.signature}: {row.title}" + (f"; cut {row.cut}" if row.cut else "")
            for row in summary.rows
        )
    return "\n".join(lines) + "\n"
