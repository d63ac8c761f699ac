"""Plain-English phrases shared by every renderer, so all outputs explain a cycle alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whyalive.report import CycleReport

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
    """``plural(4, "tensor")`` -> ``"4 tensors"``."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


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
    return f"{count} {singular if count == 1 else many}"


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
