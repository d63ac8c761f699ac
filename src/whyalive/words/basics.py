"""Plain-English phrases shared by every renderer, so all outputs explain a cycle alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whyalive.report import CycleReport, Holding, Report
    from whyalive.summary import Summary

BLIND_SPOTS = (
    "Not visible to the cyclic GC, so never reported as cyclic garbage: cycles through "
    "objects without GC support (NumPy object arrays, many C++ extension types) and cycles "
    "through C++ owners (a tensor saved by autograd whose hook refers back to it). A "
    "suspended generator or coroutine in a cycle is closed by the collector, which clears "
    "its frame, so such cycles are freed rather than captured."
)
"""Said once per run (the CLI's output, the pytest terminal summary), not in every report."""


def blind_spot_note() -> str:
    """The blind-spot note as its own paragraph, for the end of a run's text output."""
    return f"\nNote: {BLIND_SPOTS}\n"


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_to_words(nbytes: int) -> str:
    """``131072`` -> ``"128.0 KiB"``; exact bytes below 1 KiB."""
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.1f} {_UNITS[unit]}"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``plural(4, "tensor")`` -> ``"4 tensors"``; ``"4,000 objects"`` with thousands marked."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count:,} {word}"


def code(text: str) -> str:
    """Mark an identifier the way every renderer shows code: in backticks."""
    return f"`{text}`"


_KIND_NOUNS = {
    "torch.Tensor": ("tensor", "tensors"),
    "numpy.ndarray": ("array", "arrays"),
    "bytes": ("bytes object", "bytes objects"),
    "bytearray": ("bytearray", "bytearrays"),
    "memoryview": ("memoryview", "memoryviews"),
}


def heavy_noun(kind: str, count: int) -> str:
    """``heavy_noun("torch.Tensor", 4)`` -> ``"4 tensors"``."""
    singular, many = _KIND_NOUNS.get(kind, ("object", "objects"))
    return f"{count:,} {singular if count == 1 else many}"


def heavy_brief(description: str) -> str:
    """``"Tensor(float32[16, 256], cpu)"`` -> ``"float32[16, 256] cpu"``."""
    _, sep, inner = description.partition("(")
    if not sep:
        return description
    inner = inner.removesuffix(")")
    if "[" in inner and "]," in inner:
        head, _, device = inner.rpartition("],")
        return f"{head}] {device.strip()}"
    return inner


def heavy_group_words(kind: str, descriptions: list[str], nbytes: int) -> str:
    """``"4 tensors, float32[16, 256] cpu, 64.0 KiB in all"``."""
    briefs = sorted({heavy_brief(d) for d in descriptions})
    count = len(descriptions)
    noun = heavy_noun(kind, count)
    shown = ", ".join(briefs[:3]) + (", ..." if len(briefs) > 3 else "")
    detail = f", {shown}" if shown and not shown.endswith(("B", "KiB", "MiB", "GiB")) else ""
    total = f"{size_to_words(nbytes)} in all" if count > 1 else size_to_words(nbytes)
    return f"{noun}{detail}, {total}"


def kind_count_words(count: int, kind: str) -> str:
    """``(9999, "Node object")`` -> "9,999 `Node` objects"; ``(1, "list")`` -> "1 list"."""
    head, sep, _ = kind.partition(" object")
    if sep and head:
        noun = f"`{head}` object" if count == 1 else f"`{head}` objects"
    else:
        noun = kind if count == 1 else f"{kind}es" if kind.endswith("s") else f"{kind}s"
    return f"{count:,} {noun}"


def members_words(member_types: dict[str, int], limit: int = 3) -> str:
    """ "9,999 `Node` objects and 3,333 lists": what a cycle is made of, most first."""
    ranked = sorted(member_types.items(), key=lambda item: (-item[1], item[0]))
    phrases = [kind_count_words(count, kind) for kind, count in ranked[:limit]]
    rest = sum(count for _, count in ranked[limit:])
    if rest:
        phrases.append(f"{rest:,} other {'object' if rest == 1 else 'objects'}")
    return joined(phrases)


def joined(phrases: list[str]) -> str:
    """ "a, b and c": phrases joined as a sentence lists them."""
    if len(phrases) <= 1:
        return "".join(phrases)
    return f"{', '.join(phrases[:-1])} and {phrases[-1]}"


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


def verb(count: int, singular: str, plural_form: str) -> str:
    """``verb(1, "keeps", "keep")`` -> ``"keeps"``: the verb that agrees with a count."""
    return singular if count == 1 else plural_form


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
) -> str:
    """The one wording for what a run found, in the text, the viewer and the rank summary.

    ``"3 reference cycles (1 signature) keep 8 tensors alive at x.py:3: 128.0 KiB on cpu"``;
    ``heavy`` is the counted noun (``"8 tensors"``).
    """
    devices = ""
    if len(by_device) > 1:
        devices = f" ({devices_words(by_device)})"
    elif by_device:
        devices = f" on {next(iter(by_device))}"
    return (
        f"{cycles_words(occurrences, signatures)} "
        f"{verb(occurrences, 'keeps', 'keep')} {heavy} alive{f' at {where}' if where else ''}: "
        f"{size_to_words(nbytes)}{devices}"
    )


def heavy_count_words(count: int, kinds: set[str]) -> str:
    """``"8 tensors"`` when they are all one kind, else ``"8 heavy objects"``."""
    if len(kinds) == 1:
        return heavy_noun(next(iter(kinds)), count)
    return plural(count, "heavy object")


def report_headline(report: Report) -> str:
    """What a report found, in one sentence without its rank: the text's and the viewer's."""
    where = report.run.where
    at = f" at {where}" if where else ""
    if report.cycles:
        return cycles_headline(
            sum(c.occurrences for c in report.cycles),
            len(report.cycles),
            heavy_count_words(
                sum(c.heavy_count for c in report.cycles),
                {h.kind for h in report.heavy_objects},
            ),
            report.total_bytes,
            report.bytes_by_device,
            where,
        )
    if report.alive:
        alive_bytes = sum(a.nbytes for a in report.alive)
        return (
            f"{plural(len(report.alive), 'heavy object')} still alive{at}: "
            f"{size_to_words(alive_bytes)}"
        )
    return (
        f"no cyclic garbage holds heavy objects{at} "
        f"({plural(report.garbage_objects, 'garbage object')}, "
        f"{plural(report.light_cycle_count, 'light cycle')})"
    )


def holding_words(holding: Holding) -> str:
    """``"stage_output_tensors[0..3]: 4 tensors float32[16, 256] cpu, 64.0 KiB"``."""
    what = heavy_noun(holding.kind, holding.count)
    detail = f" {holding.description}" if holding.description else ""
    return f"{holding.where}: {what}{detail}, {size_to_words(holding.nbytes)}"


def an(word: str) -> str:
    """``"an"`` before ``Index``, ``"a"`` before ``list``: the article the word's sound asks for.

    Read from the first letter, as a reader says a type name: ``an `Index```, ``a `Node```.
    """
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"


def a_code(name: str) -> str:
    """``"an `Index`"``: a type or name in backticks with the article it takes."""
    return f"{an(name)} `{name}`"


def edge_label(kind: str, name: str) -> str:
    """How a reference reads in a loop or a path; one with no name says so, not ``-> dict``."""
    if kind == "unknown" or not name:
        return "(unnamed reference)"
    return name


def index_range_words(indices: list[int]) -> str:
    """``[0..3]`` for a run, ``[0, 2, 5]`` for a few, ``[0, 2, 5, ...]`` for many."""
    ordered = sorted(set(indices))
    if len(ordered) == 1:
        return f"[{ordered[0]}]"
    if ordered[-1] - ordered[0] == len(ordered) - 1:
        return f"[{ordered[0]}..{ordered[-1]}]"
    shown = ", ".join(str(i) for i in ordered[:3])
    return f"[{shown}{', ...' if len(ordered) > 3 else ''}]"


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
        return f"{heard}; no cyclic garbage holds heavy objects"
    occurrences = sum(sum(row.occurrences_by_rank.values()) for row in summary.rows)
    return (
        f"{heard}; {cycles_words(occurrences, len(summary.rows))} "
        f"{verb(occurrences, 'keeps', 'keep')} {size_to_words(summary.total_bytes)} alive "
        f"on {ranks_phrase(summary.leaking_ranks)}"
    )
