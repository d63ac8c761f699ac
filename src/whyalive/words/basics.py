"""The building blocks of every sentence: sizes, counts, plurals, articles, code names."""

from __future__ import annotations

import re

BLIND_SPOTS = (
    "Not visible to the cyclic GC, so never reported as cyclic garbage: cycles through "
    "objects without GC support (NumPy object arrays, many C++ extension types) and cycles "
    "through C++ owners. Loops through torch's autograd graph (a tensor hook that refers back "
    "to its tensor) that a checked block made are reported as uncollectable loops; loops "
    "through other C++ owners are not found. A suspended generator or coroutine in a cycle "
    "is closed by the collector, which clears its frame, so such cycles are freed rather "
    "than captured."
)
"""Kept in every report's notes and printed by ``detail="full"`` text."""

BLIND_SPOTS_SHORT = (
    "whyalive sees what Python's cyclic GC sees; loops through C++ owners (autograd) "
    "and objects without GC support are not reported here: `check_leaks(census=True)` "
    "and `whyalive.explain(obj)` find what they keep alive."
)
"""What a run says once (the CLI's output, the pytest terminal summary), at the end."""


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


# Units a size may be given in, as pytest-memray reads them: powers of 1024, any case.
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"\s*\+?(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def size_from_words(value: object, what: str = "min_bytes") -> int:
    """``1048576``, ``"1MB"``, ``"1 MiB"``, ``"1.5 GB"`` -> bytes (KB, MB, ... are 1024-based).

    Raises :class:`~whyalive.errors.UsageError` with one line naming ``what`` for
    anything else (a negative number, an unknown unit, a bool).
    """
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match is not None and match.group(2).lower() in _SIZE_UNITS:
            return round(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])
    from whyalive.errors import UsageError

    raise UsageError(
        f"{what} must be a size such as 1048576, 1MB or 1.5 MiB (KB, MB, GB are 1024-based), "
        f"not {value!r}"
    )


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


def verb(count: int, singular: str, plural_form: str) -> str:
    """``verb(1, "keeps", "keep")`` -> ``"keeps"``: the verb that agrees with a count."""
    return singular if count == 1 else plural_form


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
    if kind == "autograd":
        return f"{name} (C++)"
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
