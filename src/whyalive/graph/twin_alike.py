"""The pure-Python twin of the C core's folding of alike arrays (``fold_scan``, see
:mod:`whyalive.graph.core`, ``build_graph``): the same arrays, runs and order.

An array counts when only its container holds it: its reference count, as read here, is
what :func:`refcount_extra` reads of an object that only a list holds (the interpreter's
own references while reading cancel out).
"""

from __future__ import annotations

import itertools
import math
import sys
from typing import Any

from whyalive.words import index_mask

# The C core's ALIKE_MIN and ALIKE_DTYPES (see whyalive.graph.core, build_graph).
ALIKE_MIN = 512
ALIKE_DTYPES = 8


def refcount_extra() -> int:
    """What ``sys.getrefcount`` adds when mapped over a sequence's items: read once per
    call, the way the readers read counts (an item only its container holds reads this
    plus one)."""
    probe = [object()]
    (count,) = map(sys.getrefcount, itertools.islice(probe, 0, 1))
    return count - 1  # the probe list's reference


def fold_scan(
    container: Any, at: int, ndarray: Any, found_runs: list[tuple[Any, ...]]
) -> set[int] | None:
    """The C core's fold_scan: the ids of the alike arrays of ``container`` (a list's or
    tuple's items, a dict's values) that its run's example (its array with the most
    elements, the first of them) stands for, their run appended to ``found_runs``; None
    when too few."""
    if len(container) < ALIKE_MIN:
        return None
    alone = refcount_extra() + 1  # and the container's entry
    items = container.values() if type(container) is dict else container
    counts = list(map(sys.getrefcount, itertools.islice(items, 0, len(container))))
    # dtype slot: [dtype, shape of its first array, count, elements, uniform]
    slots: list[list[Any]] = []
    positions: list[int] = []
    folded: set[int] = set()
    example, most = None, -1
    for position, item in enumerate(items):
        if type(item) is not ndarray or counts[position] != alone:
            continue
        if ndarray.base.__get__(item) is not None or not ndarray.flags.__get__(item).owndata:
            continue
        dtype = ndarray.dtype.__get__(item)
        slot = _slot(slots, dtype, item, ndarray)
        if slot is None:
            continue
        shape = ndarray.shape.__get__(item)
        elements = math.prod(shape)
        slot[2] += 1
        slot[3] += elements
        slot[4] = slot[4] and shape == slot[1]
        positions.append(position)
        folded.add(id(item))
        if elements > most:
            example, most = item, elements
    if len(positions) < ALIKE_MIN:
        return None
    folded.discard(id(example))
    bits = index_mask(positions).to_bytes((len(container) + 7) // 8, "little")
    dtypes = tuple((s[0], s[2], s[3], s[1] if s[4] else None) for s in slots)
    found_runs.append((example, at, len(positions), bits, dtypes))
    return folded


def _slot(slots: list[list[Any]], dtype: Any, item: Any, ndarray: Any) -> list[Any] | None:
    """The C core's dtype_slot: the same dtype object first, then an equal one, else a new
    slot while there is room."""
    for slot in slots:
        if slot[0] is dtype:
            return slot
    for slot in slots:
        if _equal(slot[0], dtype):
            return slot
    if len(slots) == ALIKE_DTYPES:
        return None
    slots.append([dtype, ndarray.shape.__get__(item), 0, 0, True])
    return slots[-1]


def _equal(first: Any, second: Any) -> bool:
    try:
        return bool(first == second)
    except Exception:  # as the C core: unequal
        return False
