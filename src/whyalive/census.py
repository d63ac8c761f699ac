"""The census: heavy objects alive before a block, to tell which ones it left alive.

``check_leaks(alive=True)`` takes a census before the block and, after it, explains
(:func:`whyalive.explain.explain_objects`) every heavy object that is new and still
alive, added to the block's report as :class:`~whyalive.report.AliveObject` entries.
"""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

from whyalive.explain import explain_objects
from whyalive.graph import build_graph
from whyalive.guarded import sizeof
from whyalive.kinds import KindResolver
from whyalive.report import HolderPath, Report
from whyalive.report.merge import shift_cycle, with_loops


def heavy_census(resolver: KindResolver) -> list[object]:
    """Every heavy object alive now, tracked or not (one graph pass over the heap)."""
    graph = build_graph(gc.get_objects(), resolver, fold_arrays=False)  # each one, by identity
    found = [graph.nodes[index] for index in graph.heavy_candidates]
    graph.release()
    return [obj for obj in found if resolver.describe(obj) is not None]


class HeavyCensus:
    """Heavy objects alive before a block, to tell which ones the block left alive.

    The baseline holds no strong reference: a weak reference where the type
    allows it, else the type and size (``bytes`` cannot be weakly referenced;
    an id reused by a same-sized new buffer is then taken for the old one,
    which can hide a finding but never invent one).
    """

    def __init__(self) -> None:
        self._before: dict[int, object] = {}

    def begin(self) -> None:
        """Record the heavy objects alive now (one graph pass over the heap)."""
        resolver = KindResolver()
        for obj in heavy_census(resolver):
            self._before[id(obj)] = _mark(obj)

    def _existed(self, obj: object) -> bool:
        mark = self._before.get(id(obj))
        if mark is None:
            return False
        if type(mark) is weakref.ref:
            return mark() is obj
        return mark == (type(obj), sizeof(obj))

    def finish(self, report: Report, *, min_bytes: int = 0, max_paths: int = 3) -> Report:
        """``report`` with an :class:`AliveObject` for each heavy object the block left alive."""
        resolver = KindResolver()
        new = [
            obj
            for obj in heavy_census(resolver)
            if not self._existed(obj) and _nbytes(resolver, obj) >= min_bytes
        ]
        self._before.clear()
        if not new:
            return report
        found = explain_objects(new, max_paths=max_paths, own_refs=1)
        del new
        return merge_alive(report, found)


def _mark(obj: object) -> object:
    """A weak reference, or (type, size) for types that cannot be weakly referenced."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return (type(obj), sizeof(obj))


def _nbytes(resolver: KindResolver, obj: object) -> int:
    facts = resolver.describe(obj)
    return facts.nbytes if facts is not None else 0


def merge_alive(report: Report, found: Report) -> Report:
    """``report`` plus the still-alive objects of ``found`` (node ids shifted after its own)."""
    shift = len(report.nodes)
    nodes = tuple(replace(n, node_id=n.node_id + shift) for n in found.nodes)

    def moved(path: HolderPath) -> HolderPath:
        return HolderPath(
            path.heavy_node + shift,
            tuple(n + shift for n in path.nodes),
            tuple(replace(e, source=e.source + shift, target=e.target + shift) for e in path.edges),
        )

    alive = tuple(
        replace(a, node_id=a.node_id + shift, paths=tuple(moved(p) for p in a.paths))
        for a in found.alive
    )
    notes = tuple(n for n in found.notes if n not in report.notes)
    # Loops the explanation found that the check's own probe did not (no frozen baseline).
    known = {loop.signature for loop in report.uncollectable}
    loops = tuple(shift_cycle(c, shift) for c in found.uncollectable if c.signature not in known)
    merged = replace(
        report,
        nodes=report.nodes + nodes,
        alive=report.alive + alive,
        notes=report.notes + notes,
    )
    return with_loops(merged, loops) if loops else merged
