"""The building blocks of every sentence: sizes, counts, plurals, articles, code names."""

from __future__ import annotations

import re
from collections.abc import Iterable

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

FINALIZED_LOOPS = (
    "A loop the collector frees by running a finalizer is gone before it is captured (a "
    "suspended generator or coroutine, which it closes; an object whose `__del__` breaks the "
    "loop): what such a loop held waited for the collector but is not counted here; "
    "`gc.disable()` around the block shows memory that stays."
)
"""The note of a report that captured no cyclic garbage holding heavy objects: what that
clean headline cannot rule out."""

BLIND_SPOTS_SHORT = (
    "whyalive sees what Python's cyclic GC sees, and the loops a checked block closes "
    "through torch's autograd graph; loops through other C++ owners and objects without GC "
    "support are not reported here: `check_leaks(census=True)` and `whyalive.explain(obj)` "
    "find what they keep alive."
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


AUTOGRAD_NODE_KIND = "torch.autograd.Node"
"""The kind of an autograd node of the garbage that holds tensors through C++ (saved ones,
the leaves it accumulates into and their gradients): heavy for what it holds, never counted
as a heavy object itself (what it holds is counted)."""

_KIND_NOUNS = {
    "torch.Tensor": ("tensor", "tensors"),
    AUTOGRAD_NODE_KIND: ("autograd node", "autograd nodes"),
    "numpy.ndarray": ("array", "arrays"),
    "bytes": ("`bytes` object", "`bytes` objects"),
    "bytearray": ("bytearray", "bytearrays"),
    "memoryview": ("memoryview", "memoryviews"),
}


def heavy_noun(kind: str, count: int) -> str:
    """``heavy_noun("torch.Tensor", 4)`` -> ``"4 tensors"``."""
    singular, many = _KIND_NOUNS.get(kind, ("object", "objects"))
    return f"{count:,} {singular if count == 1 else many}"


AUTOGRAD_PART = " + autograd graph: "
"""What a heavy object's description adds for the tensors its autograd graph holds:
``Tensor(float32[8], cpu) + autograd graph: 4 tensors, 3.0 MiB``."""


def heavy_size_words(description: str, nbytes: int) -> str:
    """``"512.0 KiB"``: what a heavy object holds itself, next to its description.

    Where the description adds what its autograd graph holds (:data:`AUTOGRAD_PART`), its
    own bytes are said as such (``"512.0 KiB, the tensor alone"``), never as a second size
    of the same thing; an autograd node holds no bytes of its own: ``""``.
    """
    if AUTOGRAD_PART not in description:
        return size_to_words(nbytes)
    return f"{size_to_words(nbytes)}, the tensor alone" if nbytes else ""


def _is_size(text: str) -> bool:
    """``"1.0 MiB"``, ``"512 B"``: a size said by :func:`size_to_words`."""
    number, _, unit = text.strip().partition(" ")
    return unit in _UNITS and number.replace(".", "", 1).isdigit()


def heavy_brief(description: str) -> str:
    """What a heavy object is, without its kind's name or its size (the holding says those).

    ``"Tensor(float32[16, 256], cpu)"`` -> ``"float32[16, 256] cpu"``; ``"bytearray(1.0 MiB)"``
    -> ``""``; ``"Tensor(float32[8], cpu) + autograd graph: 4 tensors, 3.0 MiB"`` ->
    ``"float32[8] cpu (+ autograd graph: 4 tensors)"``: parentheses balanced, no size twice;
    ``"MmBackward0 + autograd graph: 3 tensors, 1.0 MiB"`` (an autograd node) ->
    ``"MmBackward0 (+ autograd graph: 3 tensors)"``.
    """
    _, sep, tail = description.partition("(")
    if not sep:
        head, plus, held = description.partition(AUTOGRAD_PART)
        if plus:
            said = ", ".join(p.strip() for p in held.split(",") if not _is_size(p))
            return f"{head} (+ autograd graph: {said})"
        return "" if _is_size(description) else description
    depth, end = 1, len(tail)
    for index, char in enumerate(tail):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            end = index
            break
    inner, rest = tail[:end], tail[end + 1 :].strip()
    if "[" in inner and "]," in inner:
        head, _, device = inner.rpartition("],")
        inner = f"{head}] {device.strip()}"
    if _is_size(inner):
        inner = ""
    parts = [part.strip() for part in rest.split(",")] if rest else []
    extra = ", ".join(p for p in parts if p and not _is_size(p))
    extra = re.sub(r"\b1 (\w+)\(s\)", r"1 \1", extra).replace("(s)", "s")
    return f"{inner} ({extra})".strip() if extra else inner


def holding_phrase(kind: str, count: int, briefs: set[str], nbytes: int) -> str:
    """``"4 tensors float32[16, 256] cpu, 64.0 KiB"``: heavy objects held together, once.

    The one wording of what a cycle holds, for its summary, its holdings and every
    renderer: the count with its noun, the shape they share (``of several shapes`` when
    they differ, nothing when the kind says no more than a size), then the bytes.
    """
    return f"{heavy_noun(kind, count)}{shared_brief(briefs)}, {size_to_words(nbytes)}"


def shared_brief(briefs: set[str]) -> str:
    """`` float32[16, 256] cpu``, with what some of them add (``(+ autograd graph: ...)``)
    said once; `` of several shapes`` when the shapes differ; nothing when none is said."""
    said = {b for b in briefs if b}
    if not said:
        return ""
    if len(said) == 1:
        return f" {next(iter(said))}"
    shapes = {b.partition(" (")[0] for b in said}
    if len(shapes) == 1:
        return f" {next(iter(shapes))} (some with what autograd keeps for them)"
    return " of several shapes"


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

    Read from the first letter, as a reader says a type name: ``an `Index```, ``a `Node```;
    a name opening with an acronym is spelled out: ``an `LLNode``` (el), ``an `HTTPServer```
    (aitch), ``a `UUIDField``` (you).
    """
    if word[:2].isupper() and word[:2].isalpha():
        return "an" if word[0] in "AEFHILMNORSX" else "a"
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


def index_mask(indices: Iterable[int]) -> int:
    """Bit ``i`` set for each index ``i``, made in one pass (not a big int per index)."""
    ordered = list(indices)
    bits = bytearray(max(ordered) // 8 + 1 if ordered else 0)
    for index in ordered:
        bits[index >> 3] |= 1 << (index & 7)
    return int.from_bytes(bits, "little")


def index_range_words(indices: Iterable[int], positions: Iterable[int] = ()) -> str:
    """``[0..3]`` for a run, ``[0, 2, 5]`` for a few, ``[0, 2, 5, ...]`` for many.

    ``positions``: more indices, as bit masks (bit ``i`` for index ``i``): the places of
    10^5 alike arrays of a list, read at C speed.
    """
    ordered = sorted(set(indices))
    masks = list(positions)
    if masks:  # the union, as one mask
        union = index_mask(ordered)
        for mask in masks:
            union |= mask
        ordered = []
        while union and len(ordered) < 3:
            ordered.append((union & -union).bit_length() - 1)
            union &= union - 1
        count, high = len(ordered) + union.bit_count(), max(ordered[-1], union.bit_length() - 1)
    else:
        count, high = len(ordered), ordered[-1]
    if count == 1:
        return f"[{ordered[0]}]"
    if high - ordered[0] == count - 1:
        return f"[{ordered[0]}..{high}]"
    shown = ", ".join(str(i) for i in ordered[:3])
    return f"[{shown}{', ...' if count > 3 else ''}]"
