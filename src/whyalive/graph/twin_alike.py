"""The pure-Python twin of the C core's folding of alike arrays (``fold_scan``, see
:mod:`whyalive.graph.core`, ``build_graph``): the same arrays, runs and order.

An array counts when only its container holds it: its reference count, as read in
:func:`_refcounts`, is what that function reads of an object that only a list holds
(calibrated once, so that the interpreter's own references while reading cancel out).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

# The C core's ALIKE_MIN and ALIKE_DTYPES (see whyalive.graph.core, build_graph).
ALIKE_MIN = 512
ALIKE_DTYPES = 8


def _refcounts(items: Iterable[object]) -> list[int]:
    """Each item's reference count, as read here: calibrated once (``_PRIVATE``)."""
    return [sys.getrefcount(item) for item in items]


# What _refcounts reads for an item that only its container holds.
_PRIVATE = _refcounts([object()])[0]


def fold_scan(
    container: Any, at: int, ndarray: Any, found_runs: list[tuple[Any, ...]]
) -> set[int] | None:
    """The C core's fold_scan: the ids of the alike arrays of ``container`` that its run's
    first one stands for (their run appended to ``found_runs``), or None when too few."""
    if len(container) < ALIKE_MIN:
        return None
    counts = _refcounts(container)
    # dtype slot: [dtype, shape of its first array, count, elements, uniform]
    slots: list[list[Any]] = []
    positions: list[int] = []
    folded: set[int] = set()
    for position, item in enumerate(container):
        if type(item) is not ndarray or counts[position] != _PRIVATE:
            continue
        if ndarray.base.__get__(item) is not None or not ndarray.flags.__get__(item).owndata:
            continue
        dtype = ndarray.dtype.__get__(item)
        slot = next((s for s in slots if s[0] is dtype), None)
        if slot is None:
            if len(slots) == ALIKE_DTYPES:
                continue
            slot = [dtype, ndarray.shape.__get__(item), 0, 0, True]
            slots.append(slot)
        shape = ndarray.shape.__get__(item)
        slot[2] += 1
        slot[3] += _elements(shape)
        slot[4] = slot[4] and shape == slot[1]
        positions.append(position)
        folded.add(id(item))
    if len(positions) < ALIKE_MIN:
        return None
    example = container[positions[0]]
    folded.discard(id(example))
    dtypes = tuple((s[0], s[2], s[3], s[1] if s[4] else None) for s in slots)
    found_runs.append((example, at, len(positions), tuple(positions[:3]), positions[-1], dtypes))
    return folded


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
