"""Many references out of the same containers named at once: each container read once.

:func:`whyalive.analysis.edges.name_edge` scans a list, dict or instance dict for one target;
the holder paths of 10^5 arrays in one list would scan it 10^5 times. An
:class:`EdgeNamer` reads each container into a table the first time it is asked and
answers from it after (same names as ``name_edge``).
"""

from __future__ import annotations

import functools
import types
from typing import Any

from whyalive.analysis.edges import _FRAME_LIKE, EdgeName, name_edge
from whyalive.analysis.node_names import safe_repr
from whyalive.guarded import instance_dict, is_one_of
from whyalive.words.edge_kinds import ATTRIBUTE, CLASS, INDEX, INTERNAL, KEY


def name_edges(source: object, targets: list[object]) -> list[EdgeName]:
    """Name several references of one source, reading a big container once (same names
    as :func:`name_edge` target by target)."""
    if len(targets) < 2:
        return [name_edge(source, target) for target in targets]
    namer = EdgeNamer()
    return [namer.name(source, target) for target in targets]


class EdgeNamer:
    """Names references like :func:`name_edge`, reading each container once.

    However many references out of one list, tuple, dict or instance dict get named
    (the holder paths of 10^5 arrays in one list), the container is scanned once.
    Keyed by ``id()``: whoever uses it holds every source alive meanwhile (the graph).
    """

    def __init__(self) -> None:
        self._names: dict[int, dict[int, EdgeName] | None] = {}
        self._asked: set[int] = set()

    def name(self, source: object, target: object) -> EdgeName:
        """The name of the reference ``source -> target``."""
        key = id(source)
        if key in self._names:
            names = self._names[key]
        elif key not in self._asked:
            # The first reference asked of a container: one scan finds it, as name_edge
            # does; the table (a name per item) is worth building from the second on.
            self._asked.add(key)
            return name_edge(source, target)
        else:
            try:
                names = _container_names(source)
            except Exception:
                names = None
            self._names[key] = names
        found = names.get(id(target)) if names is not None else None
        return found if found is not None else name_edge(source, target)


def sequence_indices(source: object, targets: list[object]) -> list[int] | None:
    """Where each of ``targets`` sits in a list or tuple ``source`` (its first place), read
    in one pass at C speed; None for another container or a target it does not hold."""
    if type(source) not in (list, tuple):
        return None
    items: Any = source
    first = dict(zip(map(id, reversed(items)), range(len(items) - 1, -1, -1), strict=True))
    found = [first.get(id(target)) for target in targets]
    return None if None in found else [index for index in found if index is not None]


def _container_names(source: Any) -> dict[int, EdgeName] | None:
    """id(item) -> its name, first occurrence winning, as the one-target scans find it."""
    cls = type(source)
    names: dict[int, EdgeName] = {}
    if is_one_of(cls, (list, tuple)):
        for index, item in enumerate(source):
            names.setdefault(id(item), EdgeName(INDEX, f"[{index}]"))
        return names
    if cls is dict:
        for key, value in source.items():
            names.setdefault(id(value), EdgeName(KEY, f"[{safe_repr(key)}]"))
            names.setdefault(id(key), EdgeName(KEY, "key"))
        return names
    if is_one_of(cls, (types.FunctionType, types.CellType, types.MethodType, set, frozenset)):
        return None
    if issubclass(cls, (type, BaseException, functools.partial)) or is_one_of(cls, _FRAME_LIKE):
        return None  # named one by one (a partial's slots before its instance dict)
    attrs = instance_dict(source)
    if attrs is None:
        return None
    names[id(cls)] = EdgeName(CLASS, "__class__")
    names[id(attrs)] = EdgeName(INTERNAL, "__dict__")
    for key, value in attrs.items():
        if type(key) is str:
            names.setdefault(id(value), EdgeName(ATTRIBUTE, f".{key}"))
    return names
