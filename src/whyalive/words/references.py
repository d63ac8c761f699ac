"""How sentences name objects and references: labels, chains, cuts and what a cycle holds.

The report builder reads the live objects and hands plain facts (:class:`Reference`,
strings and counts) to these functions; what they return is all the report keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from whyalive.words import edge_kinds as ek
from whyalive.words.basics import a_code, plural, shared_brief

if TYPE_CHECKING:
    from whyalive.report import HolderPath, Report

# A cut of many different references is named by its first few (the edges keep them all).
MAX_CUT_PHRASES = 3
# Holders named in a cycle's summary (the builder names no more); the rest are counted.
MAX_HOLDER_PHRASES = 3

_KIND_PREFIXES = (
    "frame of ",
    "bound method ",
    "traceback in ",
    "function ",
    "generator ",
    "coroutine ",
    "async_generator ",
    "cell ",
    "class ",
)


def quoted_label(label: str, location: str | None = None) -> str:
    """``function `f.<locals>.g` (file.py:12)``: a node's label as a sentence names it.

    Backticks go around the name, not the kind: ``frame of `Step.run```, ```Step` object``.
    """
    text = f"`{label}`"
    for prefix in _KIND_PREFIXES:
        if label.startswith(prefix) and len(label) > len(prefix):
            text = f"{prefix}`{label[len(prefix) :]}`"
            break
    else:
        head, sep, tail = label.partition(" object")
        if sep and head:
            text = f"`{head}` object{tail}"
    return f"{text} ({location})" if location else text


def chain_words(names: list[str]) -> str:
    """``.cb`` or ``.hooks -> [0]``: the names along a chain of references."""
    return " -> ".join(names)


def path_words(report: Report, path: HolderPath) -> str:
    """``root --edge--> node --edge--> object`` in the labels of the report."""
    parts = [report.node(path.nodes[0]).label]
    parts.extend(f"--{e.name}--> {report.node(e.target).label}" for e in path.edges)
    return " ".join(parts)


@dataclass(frozen=True)
class Reference:
    """What a sentence says of one reference; the report builder reads it off the objects."""

    kind: str
    """One of :mod:`whyalive.words.edge_kinds`."""
    name: str
    """The reference's name: ``.cb``, ``[3]``, ``local x``."""
    holder: str
    """How a sentence names the object holding it (:func:`quoted_label`)."""
    holder_type: str = ""
    """The holder's type: qualified for an attribute's owner, short for a container."""
    variable: str | None = None
    """For a closure cell: the variable it stands for."""
    function: str | None = None
    """For a closure cell: the function that defines the variable."""


# Kinds whose phrase names the holder by its label (a label costs a read of the holder).
_HOLDER_UNSAID_IN_CUT = frozenset({ek.CELL, ek.ATTRIBUTE, ek.KEY, ek.INDEX})
_HOLDER_UNSAID_IN_EXIT = frozenset({ek.CLOSURE, ek.ATTRIBUTE})


def says_holder(kind: str, *, as_exit: bool = False) -> bool:
    """Whether the phrase for a reference of ``kind`` names its holder's label."""
    return kind not in (_HOLDER_UNSAID_IN_EXIT if as_exit else _HOLDER_UNSAID_IN_CUT)


def reference_words(ref: Reference) -> str:
    """``the attribute `cb` of a `Step` object``: one reference of a cut."""
    if ref.kind == ek.CELL:
        return f"the closure variable `{ref.variable or '?'}` in `{ref.function}`"
    if ref.kind == ek.ATTRIBUTE:
        return f"the attribute `{ref.name}` of {a_code(ref.holder_type)} object"
    if ref.kind == ek.LOCAL:
        # "of the frame of `scenario`": a frame's label starts with its kind, not an article.
        holder = f"the {ref.holder}" if ref.holder.startswith("frame of ") else ref.holder
        return f"the {ref.name.replace('local ', 'local variable `', 1)}` of {holder}"
    if ref.kind == ek.KEY:
        return f"the entry `{ref.name}` of {a_code(ref.holder_type)}"
    if ref.kind == ek.INDEX:
        return f"the item `{ref.name}` of {a_code(ref.holder_type)}"
    if ref.kind == ek.UNKNOWN:
        return f"an unnamed reference from {ref.holder}"
    return f"`{ref.name}` of {ref.holder}"


def cut_words(refs: list[Reference]) -> str:
    """The references a fix removes, each said once with its count, the first few named."""
    phrases = [reference_words(ref) for ref in refs]
    # A tree's cut is every child's `.parent`: say it once, with the count.
    counts = dict.fromkeys(phrases, 0)
    for phrase in phrases:
        counts[phrase] += 1
    said = [p if n == 1 else f"{p} (each of {n})" for p, n in counts.items()]
    if len(said) > MAX_CUT_PHRASES:
        rest = len(phrases) - sum(list(counts.values())[:MAX_CUT_PHRASES])
        said = [
            *said[:MAX_CUT_PHRASES],
            f"{rest} more {'reference' if rest == 1 else 'references'}",
        ]
    return " and ".join(said)


def exit_words(ref: Reference) -> str:
    """``the same closure's cell `xs```: the first step of a holder path, out of the cycle."""
    if ref.kind == ek.CLOSURE:
        return f"the same closure's cell `{ref.variable}`"
    if ref.kind == ek.ATTRIBUTE:
        return f"its attribute `{ref.name}`"
    if ref.kind == ek.LOCAL:
        return f"the {ref.name.replace('local ', 'local `', 1)}` of {ref.holder}"
    return f"`{ref.name}` of {ref.holder}"


def through_words(names: list[str]) -> str:
    """`` (through `a -> b`)``: the steps between a holder path's exit and its holder."""
    return f" (through `{chain_words(names)}`)" if names else ""


def holds_words(place: str, heavy: str, container: str | None = None, holders: int = 1) -> str:
    """``its attribute `xs` holds a list of 4 tensors ...``: one holder and what it holds;
    ``(on each of 50 objects)`` when the same place on many members holds them."""
    where = f"{place} (on each of {holders:,} objects)" if holders > 1 else place
    return f"{where} holds a {container} of {heavy}" if container else f"{where} holds {heavy}"


def holdings_words(phrases: list[str], more: int = 0) -> str:
    """The holders of a cycle in one clause: those named, then how many more there are."""
    rest = f"and {more:,} more {'holder' if more == 1 else 'holders'}"
    return "; ".join([*phrases, rest] if more else phrases)


def cycle_summary(pattern_summary: str, holdings: str) -> str:
    """A cycle's summary: the pattern's sentence, then what the cycle holds."""
    return f"{pattern_summary}; {holdings}." if holdings else f"{pattern_summary}."


def steps_words(names: list[str]) -> str:
    """``.hooks[0] local x``: reference names run together as a path reads them."""
    return "".join(n if n[:1] in ".[" else f" {n}" for n in names).strip()


def holding_place(head: str, indices: str, tail: str) -> str:
    """``xs[0..3]``, ``.buffers of `Step` object``: where a holding is, or the cycle itself."""
    return (head + indices + tail).strip().removeprefix("of ") or "the cycle itself"


def holding_description(briefs: set[str], autograd_count: int = 0) -> str:
    """The shape shared by a holding's heavy objects, that they differ, or nothing to say;
    then how many tensors their autograd graphs hold besides, counted once for them all:
    ``float32[16, 256] cpu (+ autograd graph: 4 tensors)``."""
    if not autograd_count:
        return shared_brief(briefs).strip()
    said = shared_brief({brief.partition(" (+ autograd graph: ")[0] for brief in briefs}).strip()
    graph = f"(+ autograd graph: {plural(autograd_count, 'tensor')})"
    return f"{said} {graph}" if said else graph
