"""What one analysis learnt about a group of alike cycles, for the next analyses to count with.

The monitor sees one leak every step: each analysis finds the same group again (the same
code objects and classes, so the same quick key), diagnoses it and walks one occurrence's
autograd graph, only to count it. :class:`RepeatMemo` keeps, per quick key, the diagnosis
and what one occurrence held through autograd, and hands them to later analyses that only
count (a report in words always comes from a full analysis).

A key names its code objects and classes by ``id``; the memo holds weak references to
them, so an entry is used only while they are alive (no other object can then have their
ids), and only for a cycle of the same shape: the same named references between members
of the same code and classes (what the signature is made of, read in a few microseconds
for a small cycle, where a diagnosis takes hundreds). After ``refresh_every`` uses the
group is analysed in full again, so a leak whose autograd graph grows is counted afresh:
the work per signature is one diagnosis and one walk per ``refresh_every`` analyses.
"""

from __future__ import annotations

import types
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive.analysis.diagnose import Diagnosis
from whyalive.analysis.edges import name_edge
from whyalive.graph import ObjectGraph
from whyalive.kinds import HeavyFacts
from whyalive.kinds.torch import AutogradWalk

REFRESH_EVERY = 16
"""Uses of an entry before the group is analysed in full again."""
MAX_ENTRIES = 256
"""Groups remembered at once (the oldest go first)."""
MAX_MEMBERS = 64
"""Bigger cycles are not remembered (reading their shape would cost too much)."""

Shape = tuple[tuple[int, str, str, int], ...]


@dataclass
class Repeat:
    """One group as a full analysis left it."""

    anchors: tuple[weakref.ref[object], ...]
    shape: Shape
    diagnosis: Diagnosis
    estimate: list[tuple[int, str]] = field(default_factory=list)
    """Bytes per device that one occurrence's autograd graphs held (beyond the garbage)."""
    uses: int = 0


class RepeatMemo:
    """Per quick key, what a full analysis found: given to analyses that only count."""

    def __init__(self, refresh_every: int = REFRESH_EVERY) -> None:
        self.refresh_every = refresh_every
        self._known: dict[object, Repeat] = {}
        self.full = 0
        """Groups analysed in full (diagnosed, one occurrence walked) since the start."""
        self.reused = 0
        """Groups counted with what an earlier analysis found."""

    def lookup(self, key: object, graph: ObjectGraph, members: Sequence[int]) -> Repeat | None:
        """The entry for ``key`` when it may be used for this cycle (counts one use)."""
        known = self._known.get(key)
        if known is None:
            return None
        if known.uses >= self.refresh_every or any(ref() is None for ref in known.anchors):
            del self._known[key]
            return None
        if known.shape != cycle_shape(graph, members):
            return None
        known.uses += 1
        self.reused += 1
        return known

    def learn(
        self,
        key: object,
        graph: ObjectGraph,
        members: Sequence[int],
        diagnosis: Diagnosis,
        estimate: list[tuple[int, str]],
    ) -> None:
        """Remember a group a full analysis diagnosed (``estimate``: its walk's share)."""
        self.full += 1
        if not _repeatable(key) or len(members) > MAX_MEMBERS:
            return
        anchors = _anchors(graph, members)
        shape = cycle_shape(graph, members)
        if anchors is None or shape is None:
            return
        self._known.pop(key, None)
        while len(self._known) >= MAX_ENTRIES:
            del self._known[next(iter(self._known))]
        self._known[key] = Repeat(anchors, shape, diagnosis, estimate)


def _repeatable(key: object) -> bool:
    # A key of builtins only carries its component (the shape needs the full signature),
    # and a big structure's carries its component too: neither recurs.
    return isinstance(key, tuple) and all(isinstance(part, int) and part >= 0 for part in key)


def _anchor(obj: object) -> object:
    """What the quick key names ``obj`` by: a function's code object, else its class."""
    cls = type(obj)
    code = getattr(obj, "__code__", None) if cls is types.FunctionType else None
    return code if code is not None else cls


def _anchors(graph: ObjectGraph, members: Sequence[int]) -> tuple[weakref.ref[object], ...] | None:
    """Weak references to what the quick key names by id: code objects and classes."""
    named = {id(anchor): anchor for anchor in map(_anchor, map(graph.nodes.__getitem__, members))}
    try:
        return tuple(weakref.ref(anchor) for anchor in named.values())
    except TypeError:  # a class that cannot be weakly referenced: never reused
        return None


def cycle_shape(graph: ObjectGraph, members: Sequence[int]) -> Shape | None:
    """Each reference between members, named, with the code or class at both ends (by id,
    valid while the anchors live): what the cycle's signature is made of. None for a big
    cycle, or when a name cannot be read."""
    if len(members) > MAX_MEMBERS:
        return None
    inside = set(members)
    nodes = graph.nodes
    parts: list[tuple[int, str, str, int]] = []
    try:
        for node in inside:
            source = nodes[node]
            for succ in graph.successors(node):
                if succ in inside:
                    name = name_edge(source, nodes[succ])
                    parts.append(
                        (id(_anchor(source)), name.kind, name.name, id(_anchor(nodes[succ])))
                    )
    except Exception:  # a hostile object: no reuse, a full analysis instead
        return None
    return tuple(sorted(parts))


def sampled_walk(
    walk: AutogradWalk,
    found: list[tuple[object, Sequence[int], list[int]]],
    facts: dict[int, HeavyFacts],
    nodes: list[object],
    garbage_count: int,
    limit: int,
    known: dict[object, Repeat],
) -> tuple[dict[object, list[tuple[int, str]]], dict[int, HeavyFacts]]:
    """Walk the autograd graphs of the first ``limit`` occurrences of each group not
    ``known``; returns, per group walked, what one occurrence held, and the facts."""
    walked_of: dict[object, list[list[int]]] = defaultdict(list)
    for key, _, retained in found:
        if key not in known and len(walked_of[key]) < limit:
            walked_of[key].append(retained)
            for node in retained:
                if facts[node].kind == "torch.Tensor":
                    walk.visit(node, nodes[node])
    facts = walk.finish(facts, nodes, garbage_count)
    estimated: dict[object, list[tuple[int, str]]] = {}
    for key, occurrences in walked_of.items():
        # One occurrence's share of what the walked graphs held, per device.
        by_device: dict[str, int] = defaultdict(int)
        for retained in occurrences:
            for node in retained:
                for extra in facts[node].through_autograd:
                    by_device[extra.device] += extra.nbytes
        if by_device:
            estimated[key] = [(t // len(occurrences), d) for d, t in by_device.items()]
    return estimated, facts
