"""The terminal explanation: what a person reads first."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, Literal

from whyalive.render.wrap import DEFAULT_WIDTH, terminal_width, wrap
from whyalive.report import AliveObject, CycleReport, Edge, HolderPath, Report
from whyalive.words import (
    BLIND_SPOTS,
    BLIND_SPOTS_SHORT,
    HELD_NATIVELY_SECTION,
    HELD_NATIVELY_TITLE,
    UNCOLLECTABLE_SECTION,
    UNCOLLECTABLE_TITLE,
    cut_sentence,
    edge_label,
    heavy_size_words,
    holding_words,
    loop_gap_line,
    more_members_words,
    more_words,
    plural,
    report_headline,
    shared_words,
    size_to_words,
)
from whyalive.words import edge_kinds as ek


def edge_words(report: Report, edge: Edge) -> str:
    """``--cell_contents--> list xs of 4``."""
    return f"--{edge_label(edge.kind, edge.name)}--> {report.node(edge.target).label}"


def hop_lines(report: Report, edge: Edge, width: int | None = None, end: str = "") -> list[str]:
    """``  --name--> node``; past ``width``, the hop on its line and the node under it.

    Neither the hop (``--__closure__[0] fn-->``) nor the node's label is ever broken.
    """
    hop = f"--{edge_label(edge.kind, edge.name)}-->"
    target = f"{report.node(edge.target).label}{end}"
    one = f"  {hop} {target}"
    if width is None or len(one) <= width:
        return [one]
    return [f"  {hop}", f"      {target}"]


def path_lines(
    report: Report, path: HolderPath, end: str = "", width: int | None = None
) -> list[str]:
    """A holder path hop by hop, as the loop is printed: the start, then ``--name--> node``
    (``end`` after the last node); each hop fits ``width`` where it can."""
    lines = [report.node(path.nodes[0]).label]
    if not path.edges:
        return [lines[0] + end]
    last = len(path.edges) - 1
    for index, edge in enumerate(path.edges):
        lines.extend(hop_lines(report, edge, width, end if index == last else ""))
    return lines


def _cut_brief(report: Report, cycle: CycleReport) -> str | None:
    """``Cache.cb``, ``the closure variable fn``: the cut's reference as code names it."""
    if cycle.cut is None or not cycle.cut.edges:
        return None
    edge = cycle.cut.edges[0]
    holder = report.node(edge.source)
    owner = holder.type_name.rsplit(".", 1)[-1]
    if edge.kind == ek.ATTRIBUTE:
        brief = f"{owner}.{edge.name.lstrip('.')}"
    elif edge.kind == ek.CELL:
        brief = f"the closure variable {holder.label.removeprefix('cell ')}"
    elif edge.kind in (ek.KEY, ek.INDEX):
        brief = f"{owner}{edge.name}"
    else:
        brief = cycle.cut.description.replace("`", "")
    others = len(cycle.cut.edges) - 1
    return f"{brief} (+{others} more)" if others else brief


def leak_line(report: Report) -> str:
    """The line a CI log shows for a failed check: bytes, the cut, where, then the pattern.

    ``whyalive: 2.0 MiB, cut Cache.cb at test_model.py:9 (bound-method-on-self)``, for the
    biggest cycle, then how many more there are. Ordered by use: pytest cuts its summary
    line at the terminal's width, and the bytes and the reference to cut should survive.
    """
    if not report.cycles:
        return f"whyalive: {report_headline(report)}"
    top = max(report.cycles, key=lambda c: (c.total_bytes, c.occurrences))
    line = f"whyalive: {size_to_words(top.total_bytes)}"
    cut = _cut_brief(report, top)
    if cut is not None:
        line += f", cut {cut}"
    place = cycle_place(report, top) or report.run.where
    if place:
        line += f" at {place}"
    line += f" ({top.pattern})"
    others = [c for c in report.cycles if c is not top]
    if others:
        extra = sum(c.total_bytes for c in others)
        line += f"; {plural(len(others), 'more cycle')}, {size_to_words(extra)}"
    if report.alive:
        line += f"; {plural(len(report.alive), 'heavy object')} still alive"
    return line


def blind_spot_note(width: int | None = None) -> str:
    """The short blind-spot note as its own paragraph, for the end of a run's text output."""
    lines = wrap(f"Note: {BLIND_SPOTS_SHORT}", width or terminal_width())
    return "\n" + "\n".join(lines) + "\n"


def loop_lines(report: Report, cycle: CycleReport, width: int | None = None) -> list[str]:
    """The cycle as one closed loop, hop by hop (each fitting ``width`` where it can), then
    what else is in it."""
    loop = cycle.loop
    if not loop and cycle.members:  # a report from before loops were recorded
        first = report.node(cycle.members[0])
        loc = f" ({first.location})" if first.location else ""
        hops = [line for e in cycle.edges for line in hop_lines(report, e, width)]
        return [f"{first.label}{loc}", *hops]
    if not loop:
        return []
    first = report.node(loop[0].source)
    loc = f" ({first.location})" if first.location else ""
    lines = [f"{first.label}{loc}"]
    for index, edge in enumerate(loop):
        if cycle.loop_hidden and index == cycle.loop_hidden_after:
            lines.append(f"  {loop_gap_line(cycle.loop_hidden)}")
        lines.extend(hop_lines(report, edge, width))
    more = more_members_words(cycle)
    if more:
        lines.extend(wrap(more, width) if width else [more])
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


def cycle_place(report: Report, cycle: CycleReport) -> str | None:
    """The line to go to: where the cut's reference was made, else where the loop starts."""
    made = cycle.cut.source_line if cycle.cut is not None else None
    return made.partition("  ")[0] if made else cycle_where(report, cycle)


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

    def __init__(
        self, *, color: bool = False, width: int | None = None, detail: Detail = "short"
    ) -> None:
        if detail not in ("short", "full"):
            raise ValueError(f"detail must be 'short' or 'full', not {detail!r}")
        given: object = width  # checked at run time: callers need not be typed
        if given is not None and (
            not isinstance(given, int) or isinstance(given, bool) or given < 1
        ):
            raise ValueError(f"width must be a positive int, not {width!r}")
        self.color = color
        self.width = width
        self.detail = detail
        self._width = width or DEFAULT_WIDTH  # the terminal's is read when rendering

    def _bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.color else text

    def _wrapped(self, text: str, indent: str = "", *, bold: bool = False) -> list[str]:
        """Prose wrapped to the width (code spans and paths kept whole), bold per line."""
        lines = wrap(text, self._width, indent=indent)
        return [self._bold(line) for line in lines] if bold else lines

    def render(self, report: Report) -> str:
        """Headline, then one block per cycle: the answer first, then what it holds and why."""
        self._width = self.width or terminal_width()
        lines: list[str] = []
        rank = f" [rank {report.run.rank}]" if report.run.rank is not None else ""
        headline = f"whyalive{rank}: {report_headline(report)}."
        lines.extend(self._wrapped(headline, bold=report.found))
        for number, cycle in enumerate(report.cycles, 1):
            lines.append("")
            lines.extend(self._cycle(report, number, cycle))
        if report.uncollectable:
            lines.append("")
            lines.extend(self._wrapped(f"{UNCOLLECTABLE_SECTION}:", bold=True))
        for number, cycle in enumerate(report.uncollectable, 1):
            lines.append("")
            lines.extend(self._cycle(report, number, cycle, UNCOLLECTABLE_TITLE))
        for alive in report.alive:
            lines.append("")
            lines.extend(self._alive(report, alive))
        if report.held_natively:
            lines.append("")
            lines.extend(self._wrapped(f"{HELD_NATIVELY_SECTION}:"))
        for held in report.held_natively:
            lines.append("")
            lines.extend(self._held(held))
        notes = [note for note in report.notes if self.detail == "full" or note != BLIND_SPOTS]
        if notes:  # a clean report too: why it may be clean (gc off, a freeze, threads)
            lines.append("")
            for note in notes:
                lines.extend(self._wrapped(f"Note: {note}"))
        return "\n".join(lines) + "\n"

    def _held(self, held: AliveObject) -> list[str]:
        """A survivor an unnamed C/C++ owner holds: what it is, that owner, where it was made."""
        lines = self._wrapped(
            f"{HELD_NATIVELY_TITLE}: {held.description}, {size_to_words(held.nbytes)}"
        )
        if held.note:
            lines.extend(self._wrapped(f"Note: {held.note}", "  "))
        if held.allocation_site:
            lines.append(f"  Allocated: {held.allocation_site}")
        return lines

    def _alive(self, report: Report, alive: AliveObject) -> list[str]:
        """A still-alive object: what it is, the root that holds it, the paths, the blind spot."""
        head = f"Still alive: {alive.description}, {size_to_words(alive.nbytes)}"
        lines = self._wrapped(head, bold=True)
        if alive.root:
            lines.extend(self._wrapped(f"Held by: {alive.root}", "  "))
        if alive.paths:
            lines.append("  Holder paths:")
            for path in alive.paths:
                hops = path_lines(report, path, width=self._width - 4)
                lines.extend(f"    {line}" for line in hops)
        if alive.note:
            lines.extend(self._wrapped(f"Note: {alive.note}", "  "))
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
        # A loop through C++ is located where the cut's reference was made: its loop often
        # starts in the library that holds the hook (torch's `hooks.py`).
        place = (
            cycle_place(report, cycle)
            if noun == UNCOLLECTABLE_TITLE
            else cycle_where(report, cycle)
        )
        at = f", at {place}" if place else ""
        lines = self._wrapped(
            f"{noun} {number}: {cycle.title} [{cycle.pattern}]: "
            f"{plural(members, 'object')}, {size_to_words(cycle.total_bytes)}{times}{at}",
            bold=True,
        )
        if cycle.made_inside is not None:
            # Said first: the cut and the fix below are the package's code, not the user's.
            lines.extend(
                self._wrapped(
                    f"Made inside {cycle.made_inside}, not in your code: the cut and the fix "
                    "are that package's (report them there); `allow` its signature below to "
                    "keep it out of your checks.",
                    "  ",
                )
            )
        cut = cut_line(report, cycle, with_edges=full)
        if cut:
            lines.extend(self._wrapped(cut, "  "))
        lines.extend(self._wrapped(f"Fix: {cycle.fix}", "  "))
        if full:
            lines.extend(self._wrapped(f"What: {cycle.summary}", "  "))
        lines.extend(self._wrapped(f"Why: {cycle.explanation}", "  "))
        holds = cycle.holds if full else cycle.holds[:SHORT_HOLDS]
        if holds:
            lines.append("  Holds:")
            for holding in holds:
                lines.extend(self._wrapped(holding_words(holding), "    "))
            places = len(cycle.holds) - len(holds)
            if places > 0:
                lines.append(f"    {more_words(places, 'more place')}")
        if cycle.bytes_shared:
            lines.extend(self._wrapped(f"Shared: {shared_words(cycle.bytes_shared)}", "  "))
        # One line per description and site: 1,365 arrays made by one line are said once.
        held = set(cycle.heavy)
        allocated = Counter(
            (h.description, h.allocation_site)
            for h in report.heavy_objects
            if h.node_id in held and h.allocation_site
        )
        for (description, site), count in list(allocated.items())[:3]:
            many = f" ({count:,} of them)" if count > 1 else ""
            lines.extend(self._wrapped(f"Allocated: {description} at {site}{many}", "  "))
        lines.append("  Loop:")
        lines.extend(f"    {line}" for line in loop_lines(report, cycle, self._width - 4))
        paths = cycle.holder_paths if full else cycle.holder_paths[:1]
        if paths:
            lines.append("  Holder paths:" if full else "  Holder path, for example:")
            for path in paths:
                end = report.node(path.heavy_node)
                said = heavy_size_words(end.label, end.size)
                size = f" ({said})" if said else ""
                hops = path_lines(report, path, size, self._width - 4)
                lines.extend(f"    {line}" for line in hops)
            # Holder paths end at the heavy objects of the graph, not at those in C++.
            hidden = len(cycle.heavy) + cycle.heavy_unlisted - len(cycle.holder_paths)
            if full and hidden > 0:
                lines.append(f"    {more_words(hidden, 'more heavy object')}")
        allow = f"`check_leaks(allow=[{cycle.signature!r}])`"
        # Claimed only where the rule flags the statement quoted: a pattern's rule may not
        # see this spelling of it (`Thread(target=self.run)`).
        flagged = cycle.cut.source_rule if cycle.cut is not None else None
        lint = f"; `whyalive lint` rule {flagged} finds it in source" if flagged else ""
        lines.extend(
            self._wrapped(f"Signature: {cycle.signature} (to allow it: {allow}){lint}", "  ")
        )
        return lines
