"""Headlines and lines about a whole report, a cycle's members, holdings and the ranks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from whyalive.words.basics import (
    AUTOGRAD_NODE_KIND,
    heavy_noun,
    holding_phrase,
    members_words,
    plural,
    size_to_words,
    verb,
)

if TYPE_CHECKING:
    from whyalive.report import Cut, CycleReport, Holding, Report, RunInfo
    from whyalive.report.summary import Summary


def loop_gap_words(hidden: int) -> str:
    """ "999,990 more references": the middle of a long loop that is not printed."""
    return f"{hidden:,} more {'reference' if hidden == 1 else 'references'}"


def more_members_words(cycle: CycleReport) -> str | None:
    """ "... and 9,997 more objects in the same cycle: 6,664 `Node` objects, 3,333 lists"."""
    on_loop = {e.source for e in cycle.loop} | {e.target for e in cycle.loop}
    # The gap hides loop_hidden references, so loop_hidden - 1 objects.
    rest = cycle.member_count - len(on_loop) - max(cycle.loop_hidden - 1, 0)
    if rest <= 0:
        return None
    kinds = members_words(cycle.member_types)
    noun = "object" if rest == 1 else "objects"
    return f"... and {rest:,} more {noun} in the same cycle (in all: {kinds})"


def devices_words(by_device: dict[str, int]) -> str:
    """``"cpu: 64.0 KiB, cuda:0: 1.0 GiB"``."""
    return ", ".join(f"{device}: {size_to_words(n)}" for device, n in sorted(by_device.items()))


def cycles_words(occurrences: int, signatures: int) -> str:
    """``"3 reference cycles (1 signature)"``; the signatures only when some repeat."""
    kinds = f" ({plural(signatures, 'signature')})" if signatures != occurrences else ""
    return f"{plural(occurrences, 'reference cycle')}{kinds}"


def cycles_headline(
    occurrences: int,
    signatures: int,
    heavy: str,
    nbytes: int,
    by_device: dict[str, int],
    where: str | None = None,
    *,
    over_a_run: bool = False,
    loops: int = 0,
) -> str:
    """The one wording for what a run found, in the text, the viewer and the rank summary.

    ``"3 reference cycles (1 signature) keep 8 tensors alive at x.py:3: 128.0 KiB on cpu"``;
    ``heavy`` is the counted noun (``"8 tensors"``). ``over_a_run``: what a monitor found
    over many steps, its bytes summed (``"... kept 100 arrays alive over 100 monitored
    steps: 781.2 KiB on cpu, summed over the run"``). ``loops``: loops through the autograd
    graph found too (``"1 reference cycle and 1 loop through the autograd graph (C++), never
    freed by the collector, keep ..."``); the count, bytes and devices are of both.
    """
    devices = ""
    if len(by_device) > 1:
        devices = f" ({devices_words(by_device)})"
    elif by_device:
        devices = f" on {next(iter(by_device))}"
    found = [cycles_words(occurrences, signatures)] if occurrences else []
    if loops:
        found.append(f"{plural(loops, 'loop')} {LOOPS_WORDS}")
    subject = " and ".join(found)
    if loops:
        subject += ","
    if over_a_run:
        keeps, place, summed = "kept", f" over {where}" if where else "", ", summed over the run"
    else:
        keeps, place, summed = (
            verb(occurrences + loops if len(found) == 1 else 2, "keeps", "keep"),
            f" at {where}" if where else "",
            "",
        )
    return f"{subject} {keeps} {heavy} alive{place}: {size_to_words(nbytes)}{devices}{summed}"


LOOPS_WORDS = "through the autograd graph (C++), never freed by the collector"
"""What the headline says of loops through the autograd graph, after their count."""


def heavy_count_words(count: int, kinds: set[str]) -> str:
    """``"8 tensors"`` when they are all one kind, else ``"8 heavy objects"``; an autograd
    node counts the tensors it holds."""
    kinds = {"torch.Tensor" if kind == AUTOGRAD_NODE_KIND else kind for kind in kinds}
    if len(kinds) == 1:
        return heavy_noun(next(iter(kinds)), count)
    return plural(count, "heavy object")


UNCOLLECTABLE_TITLE = "Uncollectable loop"
"""How the text, DOT and the viewer title a loop through the autograd graph."""
UNCOLLECTABLE_SECTION = (
    "Uncollectable: loops through the autograd graph (C++), which the cyclic GC never frees"
)
"""The heading of the text's section of such loops."""


HELD_NATIVELY_TITLE = "Held by a C/C++ owner"
"""How the text and the viewer title a survivor only an unnamed C/C++ owner holds."""
HELD_NATIVELY_SECTION = "Held by C/C++ owners whyalive cannot name (listed, not failing)"
"""The heading of the text's section of such survivors."""


def held_natively_words(report: Report) -> str:
    """``"1 tensor made in the block is held by a C/C++ owner whyalive cannot name (listed,
    not failing): 1.0 MiB"``."""
    held = report.held_natively
    count = len(held)
    return (
        f"{plural(count, 'heavy object')} made in the block {verb(count, 'is', 'are')} held "
        f"by a C/C++ owner whyalive cannot name (listed, not failing): "
        f"{size_to_words(sum(a.nbytes for a in held))}"
    )


def uncollectable_words(report: Report, where: str | None = None) -> str:
    """``"1 loop through the autograd graph (C++), never freed by the collector, keeps
    2 tensors alive at x.py:3: 7.8 KiB on cpu"``: the report's loops alone."""
    loops = report.uncollectable
    by_device = _loops_by_device(loops)
    return cycles_headline(
        0,
        0,
        _heavy_words(report, loops, sum(c.heavy_count for c in loops)),
        sum(by_device.values()),
        by_device,
        where,
        loops=sum(c.occurrences for c in loops),
    )


def _loops_by_device(loops: Sequence[CycleReport]) -> dict[str, int]:
    """The loops' bytes by device, each loop's total split as one occurrence's is."""
    by_device: dict[str, int] = {}
    for cycle in loops:
        held = sum(cycle.bytes_by_device.values()) or 1
        for device, nbytes in cycle.bytes_by_device.items():
            share = cycle.total_bytes * nbytes // held
            by_device[device] = by_device.get(device, 0) + share
    return by_device


def _heavy_words(report: Report, found: Sequence[CycleReport], count: int) -> str:
    """``"4 tensors"``: ``count`` heavy objects, named by the kinds ``found`` holds."""
    held = {n for c in found for n in c.heavy}
    return heavy_count_words(count, {h.kind for h in report.heavy_objects if h.node_id in held})


def report_headline(report: Report) -> str:
    """What a report found, in one sentence without its rank: the text's and the viewer's.

    Its count and bytes are the report's totals (``heavy_count``, ``total_bytes``), which
    cover the reference cycles and the loops through the autograd graph alike.
    """
    where = report.run.where
    at = f" at {where}" if where else ""
    if report.cycles or report.uncollectable:
        return _found_headline(report)
    if report.alive:
        alive_bytes = sum(a.nbytes for a in report.alive)
        # explain() takes any object: only a heavy one has a device (a tensor, an array).
        noun = "heavy object" if all(a.device for a in report.alive) else "object"
        return f"{plural(len(report.alive), noun)} still alive{at}: {size_to_words(alive_bytes)}"
    clean = (
        f"no cyclic garbage holding heavy objects was captured{at} "
        f"({plural(report.garbage_objects, 'garbage object')}, "
        f"{plural(report.light_cycle_count, 'light cycle')})"
    )
    return f"{clean}; {held_natively_words(report)}" if report.held_natively else clean


def _found_headline(report: Report) -> str:
    found = (*report.cycles, *report.uncollectable)
    nbytes, by_device = report.total_bytes, report.bytes_by_device
    if not nbytes and not report.cycles:  # a report from before the totals covered loops
        by_device = _loops_by_device(report.uncollectable)
        nbytes = sum(by_device.values())
    return cycles_headline(
        report.reported_cycle_count,
        len(report.cycles),
        _heavy_words(report, found, report.heavy_count or sum(c.heavy_count for c in found)),
        nbytes,
        by_device,
        report.run.where,
        over_a_run=bool(report.timeline),
        loops=sum(c.occurrences for c in report.uncollectable),
    )


def holding_count(holding: Holding) -> int:
    """The heavy objects a holding stands for: its own (an autograd node is none) and the
    tensors their autograd graphs hold."""
    own = 0 if holding.kind == AUTOGRAD_NODE_KIND else holding.count
    return own + holding.autograd_count


def holding_what(holding: Holding) -> str:
    """``"4 tensors float32[16, 256] cpu, 64.0 KiB"``: what one place holds."""
    return holding_phrase(holding.kind, holding.count, {holding.description}, holding.nbytes)


def holding_words(holding: Holding) -> str:
    """``"stage_output_tensors[0..3]: 4 tensors float32[16, 256] cpu, 64.0 KiB"``."""
    return f"{holding.where}: {holding_what(holding)}"


def cut_sentence(cut: Cut, references: str = "") -> str:
    """``the attribute `.cb` of a `Step` object, made at leaky.py:6: `self.cb = ...```.

    ``references``, when given, follows the description in parentheses.
    """
    line = f"{cut.description} ({references})" if references else cut.description
    made = cut.source_lines or ((cut.source_line,) if cut.source_line else ())
    if made:
        quotes = []
        for quote in made:
            place, _, source = quote.partition("  ")
            quotes.append(f"{place}: `{source.strip()}`" if source else place)
        line += f", made at {' and at '.join(quotes)}"
        if cut.source_rule:
            line += f" (lint rule {cut.source_rule} flags it)"
    elif cut.source_note:
        line += f" ({cut.source_note})"
    if cut.stays:
        stays = plural(len(cut.stays), "heavy object")
        line += f"; not proven: {stays} would stay held by what the cut does not touch"
    return line


def loop_gap_line(hidden: int) -> str:
    """``"... 999,990 more references ..."``: the line standing for a long loop's middle."""
    return f"... {loop_gap_words(hidden)} ..."


def more_words(count: int, noun: str) -> str:
    """``"... and 3 more places"``: what a list leaves out."""
    return f"... and {plural(count, noun)}"


def shared_words(nbytes: int) -> str:
    """What the storage a cycle shares with live objects means for the memory."""
    return (
        f"{size_to_words(nbytes)} of it is storage that more objects use than the cycle "
        "holds (live objects, or owners in C++ such as autograd's saved tensors), so it may "
        "stay allocated after the cycle goes."
    )


def cycle_meta_words(cycle: CycleReport) -> str:
    """``"64.0 KiB · closure-self · x3"``: a cycle in a list of cycles."""
    times = f" \u00b7 x{cycle.occurrences}" if cycle.occurrences > 1 else ""
    return f"{size_to_words(cycle.total_bytes or cycle.bytes_held)} \u00b7 {cycle.pattern}{times}"


def run_words(run: RunInfo) -> str:
    """``"at x.py:3 · Python 3.11.7 · torch 2.13.0 · rank 0 · 2026-..."``: where a report ran."""
    parts = [
        f"at {run.where}" if run.where else "",
        f"Python {run.python}" if run.python else "",
        f"torch {run.torch}" if run.torch else "",
        f"rank {run.rank}" if run.rank is not None else "",
        "pure-Python graph core" if run.graph_core == "python" else "",
        run.time,
    ]
    return " \u00b7 ".join(p for p in parts if p)


def ranks_words(ranks: Sequence[int]) -> str:
    """``"0,2"``, or ``"-"`` for none."""
    return ",".join(str(r) for r in ranks) if ranks else "-"


def ranks_phrase(ranks: Sequence[int]) -> str:
    """``"rank 2"``, ``"ranks 0,1"``."""
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {ranks_words(ranks)}"


def summary_headline(summary: Summary) -> str:
    """What the ranks found, in the words of a single report's headline."""
    heard = f"{len(summary.ranks)} of {plural(summary.world_size, 'rank')} reported"
    if not summary.rows:
        return f"{heard}; no cyclic garbage holding heavy objects was captured"
    occurrences = sum(sum(row.occurrences_by_rank.values()) for row in summary.rows)
    return (
        f"{heard}; {cycles_words(occurrences, len(summary.rows))} "
        f"{verb(occurrences, 'keeps', 'keep')} {size_to_words(summary.total_bytes)} alive "
        f"on {ranks_phrase(summary.leaking_ranks)}"
    )


def unreported_note(count: int) -> str:
    """The note for signatures a check filtered out (``min_bytes``, ``allow``)."""
    return f"{count} cycle signature(s) below min_bytes or allowed were not reported."


def unshown_note(count: int) -> str:
    """The note for signatures past ``max_cycles``."""
    return f"{count} more cycle signature(s) not shown."
