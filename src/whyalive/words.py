"""Plain-English phrases shared by every renderer, so all outputs explain a cycle alike."""

from __future__ import annotations

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
