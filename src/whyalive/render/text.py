"""The terminal explanation: what a person reads first."""

from __future__ import annotations

from typing import ClassVar

from whyalive.report import AliveObject, CycleReport, Edge, Report
from whyalive.words import loop_gap_words, more_members_words, plural, size_to_words


def _device_words(by_device: dict[str, int]) -> str:
    return ", ".join(f"{device}: {size_to_words(n)}" for device, n in sorted(by_device.items()))


def edge_words(report: Report, edge: Edge) -> str:
    """``--cell_contents--> list xs of 4``."""
    return f"--{edge.name}--> {report.node(edge.target).label}"


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
            lines.append(f"  ... {loop_gap_words(cycle.loop_hidden)} ...")
        lines.append(f"  {edge_words(report, edge)}")
    more = more_members_words(cycle)
    if more:
        lines.append(more)
    return lines


class TextRenderer:
    """Plain text; ``color=True`` adds ANSI emphasis (the CLI turns it on for a tty)."""

    name: ClassVar[str] = "text"
    file_suffixes: ClassVar[tuple[str, ...]] = (".txt",)
    binary: ClassVar[bool] = False

    def __init__(self, *, color: bool = False, width: int = 100) -> None:
        self.color = color
        self.width = width

    def _bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.color else text

    def render(self, report: Report) -> str:
        """Headline, then one block per cycle: summary, why, cut, fix, cycle, paths."""
        lines: list[str] = []
        rank = f" [rank {report.run.rank}]" if report.run.rank is not None else ""
        where = f" at {report.run.where}" if report.run.where else ""
        if report.alive and not report.cycles:
            alive_bytes = sum(a.nbytes for a in report.alive)
            lines.append(
                self._bold(
                    f"whyalive{rank}: {plural(len(report.alive), 'object')} still alive{where}: "
                    f"{size_to_words(alive_bytes)}."
                )
            )
        elif not report.cycles:
            lines.append(
                f"whyalive{rank}: no cyclic garbage holds heavy objects{where} "
                f"({plural(report.garbage_objects, 'garbage object')}, "
                f"{plural(report.light_cycle_count, 'light cycle')})."
            )
        else:
            occurrences = sum(c.occurrences for c in report.cycles)
            heavy = sum(c.heavy_count for c in report.cycles)
            lines.append(
                self._bold(
                    f"whyalive{rank}: {plural(occurrences, 'reference cycle')} "
                    f"({plural(len(report.cycles), 'kind')}) keep "
                    f"{plural(heavy, 'heavy object')} alive{where}: "
                    f"{size_to_words(report.total_bytes)} "
                    f"({_device_words(report.bytes_by_device)})."
                )
            )
        for number, cycle in enumerate(report.cycles, 1):
            lines.append("")
            lines.extend(self._cycle(report, number, cycle))
        for alive in report.alive:
            lines.append("")
            lines.extend(self._alive(report, alive))
        if (report.cycles or report.alive) and report.notes:
            lines.append("")
            lines.extend(f"Note: {note}" for note in report.notes)
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

    def _cycle(self, report: Report, number: int, cycle: CycleReport) -> list[str]:
        times = f" x{cycle.occurrences}" if cycle.occurrences > 1 else ""
        lines = [
            self._bold(
                f"Cycle {number}: {cycle.title} [{cycle.pattern}]{times}, "
                f"{size_to_words(cycle.total_bytes)}"
            ),
            f"  {cycle.summary}",
            f"  Why: {cycle.explanation}",
        ]
        if cycle.cut is not None:
            refs = "; ".join(
                f"{report.node(e.source).label} --{e.name}--> {report.node(e.target).label}"
                for e in cycle.cut.edges
            )
            lines.append(f"  Cut: {cycle.cut.description} ({refs})")
        lines.append(f"  Fix: {cycle.fix}")
        if cycle.bytes_shared:
            lines.append(
                f"  Shared: {size_to_words(cycle.bytes_shared)} of it is storage also used by "
                "live objects, so it stays allocated after the cycle goes."
            )
        lines.append("  Cycle:")
        lines.extend(f"    {line}" for line in loop_lines(report, cycle))
        if cycle.holder_paths:
            lines.append("  Holder paths:")
            for path in cycle.holder_paths:
                parts = [report.node(path.nodes[0]).label]
                parts.extend(edge_words(report, e) for e in path.edges)
                heavy = report.node(path.heavy_node)
                lines.append(f"    {' '.join(parts)} ({size_to_words(heavy.size)})")
            hidden = cycle.heavy_count - len(cycle.holder_paths)
            if hidden > 0:
                lines.append(f"    ... and {plural(hidden, 'more heavy object')}")
        allocated = [
            h for h in report.heavy_objects if h.node_id in cycle.heavy and h.allocation_site
        ]
        lines.extend(f"  Allocated: {h.description} at {h.allocation_site}" for h in allocated[:3])
        allow = f"check_leaks(allow=[{cycle.signature!r}])"
        lines.append(f"  Signature: {cycle.signature} (to allow it: {allow})")
        if cycle.lint_rule:
            lines.append(f"  Lint: `whyalive lint` rule {cycle.lint_rule} catches this pattern.")
        return lines
