"""The terminal explanation: what a person reads first."""

from __future__ import annotations

from typing import ClassVar, Literal

from whyalive.report import AliveObject, CycleReport, Edge, Report
from whyalive.words import (
    BLIND_SPOTS,
    UNCOLLECTABLE_SECTION,
    UNCOLLECTABLE_TITLE,
    cut_sentence,
    edge_label,
    holding_words,
    loop_gap_line,
    more_members_words,
    more_words,
    plural,
    report_headline,
    shared_words,
    size_to_words,
)


def edge_words(report: Report, edge: Edge) -> str:
    """``--cell_contents--> list xs of 4``."""
    return f"--{edge_label(edge.kind, edge.name)}--> {report.node(edge.target).label}"


def loop_lines(report: Report, cycle: CycleReport) -> list[str]:
    """The cycle as one closed loop, hop by hop, then what else is in it."""
    loop = cycle.loop
    if not loop and cycle.members:  # a report from before loops were recorded
        first = report.node(cycle.members[0])
        loc = f" ({first.location})" if first.location else ""
        return [f"{first.label}{loc}", *(f"  {edge_words(report, e)}" for e in cycle.edges)]
    if not loop:
        return []
    first = report.node(loop[0].source)
    loc = f" ({first.location})" if first.location else ""
    lines = [f"{first.label}{loc}"]
    for index, edge in enumerate(loop):
        if cycle.loop_hidden and index == cycle.loop_hidden_after:
            lines.append(f"  {loop_gap_line(cycle.loop_hidden)}")
        lines.append(f"  {edge_words(report, edge)}")
    more = more_members_words(cycle)
    if more:
        lines.append(more)
    return lines


Detail = Literal["short", "full"]

# The short form lists this many holds; the full form lists them all.
SHORT_HOLDS = 4


def cycle_where(report: Report, cycle: CycleReport) -> str | None:
    """Where the cycle's loop starts in the source (``demo.py:36``), if anywhere known."""
    starts = [e.source for e in cycle.loop] or list(cycle.members)
    for node_id in starts:
        location = report.node(node_id).location
        if location:
            return location
    return None


def cut_line(report: Report, cycle: CycleReport, *, with_edges: bool) -> str | None:
    """``Cut: the attribute `.cb` of a `Step` object, made at leaky.py:6  `self.cb = ...```."""
    cut = cycle.cut
    if cut is None:
        return None
    refs = ""
    if with_edges:
        refs = "; ".join(
            f"{report.node(e.source).label} --{edge_label(e.kind, e.name)}--> "
            f"{report.node(e.target).label}"
            for e in cut.edges
        )
    return f"Cut: {cut_sentence(cut, refs)}"


class TextRenderer:
    """Plain text; ``color=True`` adds ANSI emphasis (the CLI turns it on for a tty).

    ``detail="short"`` (the default) leads each cycle with its cut and fix and folds
    what it holds; ``detail="full"`` lists every holder path and the blind-spot note.
    """

    name: ClassVar[str] = "text"
    file_suffixes: ClassVar[tuple[str, ...]] = (".txt",)
    binary: ClassVar[bool] = False

    def __init__(self, *, color: bool = False, width: int = 100, detail: Detail = "short") -> None:
        if detail not in ("short", "full"):
            raise ValueError(f"detail must be 'short' or 'full', not {detail!r}")
        self.color = color
        self.width = width
        self.detail = detail

    def _bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.color else text

    def render(self, report: Report) -> str:
        """Headline, then one block per cycle: the answer first, then what it holds and why."""
        lines: list[str] = []
        rank = f" [rank {report.run.rank}]" if report.run.rank is not None else ""
        headline = f"whyalive{rank}: {report_headline(report)}."
        lines.append(self._bold(headline) if report.found else headline)
        for number, cycle in enumerate(report.cycles, 1):
            lines.append("")
            lines.extend(self._cycle(report, number, cycle))
        if report.uncollectable:
            lines.append("")
            lines.append(self._bold(f"{UNCOLLECTABLE_SECTION}:"))
        for number, cycle in enumerate(report.uncollectable, 1):
            lines.append("")
            lines.extend(self._cycle(report, number, cycle, UNCOLLECTABLE_TITLE))
        for alive in report.alive:
            lines.append("")
            lines.extend(self._alive(report, alive))
        notes = [note for note in report.notes if self.detail == "full" or note != BLIND_SPOTS]
        if report.found and notes:
            lines.append("")
            lines.extend(f"Note: {note}" for note in notes)
        return "\n".join(lines) + "\n"

    def _alive(self, report: Report, alive: AliveObject) -> list[str]:
        """A still-alive object: what it is, the root that holds it, the paths, the blind spot."""
        lines = [self._bold(f"Still alive: {alive.description}, {size_to_words(alive.nbytes)}")]
        if alive.root:
            lines.append(f"  Held by: {alive.root}")
        if alive.paths:
            lines.append("  Holder paths:")
            for path in alive.paths:
                parts = [report.node(path.nodes[0]).label]
                parts.extend(edge_words(report, e) for e in path.edges)
                lines.append(f"    {' '.join(parts)}")
        if alive.note:
            lines.append(f"  Note: {alive.note}")
        if alive.allocation_site:
            lines.append(f"  Allocated: {alive.allocation_site}")
        return lines

    def _cycle(
        self, report: Report, number: int, cycle: CycleReport, noun: str = "Cycle"
    ) -> list[str]:
        """Pattern, size and place; cut and fix; what it holds; then the loop and paths."""
        full = self.detail == "full"
        times = f", {plural(cycle.occurrences, 'occurrence')}" if cycle.occurrences > 1 else ""
        members = cycle.member_count or len(cycle.members)
        place = cycle_where(report, cycle)
        at = f", at {place}" if place else ""
        lines = [
            self._bold(
                f"{noun} {number}: {cycle.title} [{cycle.pattern}]: "
                f"{plural(members, 'object')}, {size_to_words(cycle.total_bytes)}{times}{at}"
            )
        ]
        cut = cut_line(report, cycle, with_edges=full)
        if cut:
            lines.append(f"  {cut}")
        lines.append(f"  Fix: {cycle.fix}")
        if full:
            lines.append(f"  What: {cycle.summary}")
        lines.append(f"  Why: {cycle.explanation}")
        holds = cycle.holds if full else cycle.holds[:SHORT_HOLDS]
        if holds:
            lines.append("  Holds:")
            lines.extend(f"    {holding_words(h)}" for h in holds)
            places = len(cycle.holds) - len(holds)
            if places > 0:
                lines.append(f"    {more_words(places, 'more place')}")
        if cycle.bytes_shared:
            lines.append(f"  Shared: {shared_words(cycle.bytes_shared)}")
        allocated = [
            h for h in report.heavy_objects if h.node_id in cycle.heavy and h.allocation_site
        ]
        lines.extend(f"  Allocated: {h.description} at {h.allocation_site}" for h in allocated[:3])
        lines.append("  Loop:")
        lines.extend(f"    {line}" for line in loop_lines(report, cycle))
        paths = cycle.holder_paths if full else cycle.holder_paths[:1]
        if paths:
            lines.append("  Holder paths:" if full else "  Holder path, for example:")
            for path in paths:
                parts = [report.node(path.nodes[0]).label]
                parts.extend(edge_words(report, e) for e in path.edges)
                heavy = report.node(path.heavy_node)
                lines.append(f"    {' '.join(parts)} ({size_to_words(heavy.size)})")
            hidden = cycle.heavy_count - len(cycle.holder_paths)
            if full and hidden > 0:
                lines.append(f"    {more_words(hidden, 'more heavy object')}")
        allow = f"check_leaks(allow=[{cycle.signature!r}])"
        lint = (
            f"; `whyalive lint` rule {cycle.lint_rule} finds it in source"
            if cycle.lint_rule
            else ""
        )
        lines.append(f"  Signature: {cycle.signature} (to allow it: {allow}){lint}")
        return lines
