"""NumPy arrays: not tracked by the GC, so found as referents of garbage.

See docs/architecture.md, "Words": the retained set.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import Any, cast

from whyalive.kinds import AlikeFacts, HeavyFacts

# str(dtype) runs Python code in NumPy (~50 us); dtypes are few and immutable.
_DTYPE_NAMES: dict[object, str] = {}
# Descriptions by (shape, dtype): a list of 10^5 alike arrays formats one.
_DESCRIPTIONS: dict[tuple[object, object], str] = {}


class NumpyKind:
    """``numpy.ndarray`` and subclasses; a view and its base share one storage."""

    name = "numpy.ndarray"

    def types(self) -> tuple[type, ...]:
        """``numpy.ndarray`` when the user has imported NumPy."""
        numpy = sys.modules.get("numpy")
        ndarray = getattr(numpy, "ndarray", None)
        return (ndarray,) if isinstance(ndarray, type) else ()

    def describe(self, obj: object) -> HeavyFacts | None:
        """Read facts through ``ndarray``'s own descriptors, so subclasses cannot interfere."""
        ndarray: Any = sys.modules["numpy"].ndarray
        shape = ndarray.shape.__get__(obj)
        dtype = ndarray.dtype.__get__(obj)
        root: object = obj
        base = ndarray.base.__get__(obj)
        while issubclass(type(base), ndarray):
            root = base
            base = ndarray.base.__get__(base)
        # base: None, or a foreign object that owns the memory (a bytearray's memoryview,
        # a tensor for .numpy(), an mmap). It is the owner: the kind resolver counts its
        # whole memory when it is heavy; else what the array spans counts.
        nbytes = int(ndarray.nbytes.__get__(root))
        locate = None
        if base is None:
            flags = ndarray.flags.__get__(root)
            if flags.owndata:  # no other array uses it: read its range only if asked
                memory, locate = None, partial(_memory, ndarray, root, nbytes)
            else:
                memory = _memory(ndarray, root, nbytes)
        else:
            flags = ndarray.flags.__get__(root)
            contiguous = flags.c_contiguous or flags.f_contiguous
            memory = _memory(ndarray, root, nbytes) if contiguous else None
        description = _DESCRIPTIONS.get((shape, dtype))
        if description is None:
            description = _description(shape, dtype)
            if len(_DESCRIPTIONS) < 4096:
                _DESCRIPTIONS[shape, dtype] = description
        return HeavyFacts(
            kind="numpy.ndarray",
            description=description,
            nbytes=nbytes,
            device="cpu",
            storage=("numpy", id(root)),
            owner=base if base is not None else (None if root is obj else root),
            memory=memory,
            locate=locate,
        )

    def describe_many(self, objects: Sequence[object]) -> list[HeavyFacts | None]:
        """:meth:`describe` of many arrays, reading each fact for all of them at C speed.

        Arrays that own their memory (no base) are described here; the others (views,
        arrays over foreign memory) one by one.
        """
        ndarray: Any = sys.modules["numpy"].ndarray
        bases = list(map(ndarray.base.__get__, objects))
        owning = list(map(attrgetter("owndata"), map(ndarray.flags.__get__, objects)))
        alone = [b is not None or not o for b, o in zip(bases, owning, strict=True)]
        shapes = map(ndarray.shape.__get__, objects)
        dtypes = map(ndarray.dtype.__get__, objects)
        descriptions = [
            _DESCRIPTIONS.get(key) or _remembered(*key) for key in zip(shapes, dtypes, strict=True)
        ]
        nbytes = list(map(int, map(ndarray.nbytes.__get__, objects)))
        described = HeavyFacts.owning_many(
            "numpy.ndarray",
            "cpu",
            descriptions,
            nbytes,
            zip(repeat("numpy"), map(id, objects)),
            map(partial, repeat(_memory), repeat(ndarray), objects, nbytes),
        )
        if True not in alone:
            return cast("list[HeavyFacts | None]", described)
        return [
            self.describe(obj) if one else facts
            for obj, one, facts in zip(objects, alone, described, strict=True)
        ]


# A dtype whose alike arrays differ in shape: "of several shapes" is all a holding says.
SEVERAL_SHAPES = "ndarray(of several shapes)"


def describe_alike(
    own: HeavyFacts,
    count: int,
    positions: int,
    dtypes: Sequence[tuple[Any, int, int, tuple[int, ...] | None]],
) -> HeavyFacts:
    """The facts of a run's node (``whyalive.graph.garbage.AlikeRun``): the bytes of all its
    arrays, from each dtype's count of elements, and their descriptions, each once."""
    nbytes = 0
    descriptions: set[str] = set()
    for dtype, _, elements, shape in dtypes:
        nbytes += elements * int(dtype.itemsize)
        if shape is None:
            descriptions.add(SEVERAL_SHAPES)
        else:
            descriptions.add(_DESCRIPTIONS.get((shape, dtype)) or _remembered(shape, dtype))
    return replace(
        own,
        nbytes=nbytes,
        memory=None,  # no other object holds them: nothing to merge with
        locate=None,
        alike=AlikeFacts(count, positions, frozenset(descriptions), own),
    )


def _remembered(shape: tuple[object, ...], dtype: object) -> str:
    description = _description(shape, dtype)
    if len(_DESCRIPTIONS) < 4096:
        _DESCRIPTIONS[shape, dtype] = description
    return description


def _description(shape: tuple[object, ...], dtype: object) -> str:
    dims = ", ".join(str(int(d)) for d in shape)  # type: ignore[call-overload]
    dtype_name = _DTYPE_NAMES.get(dtype)
    if dtype_name is None:
        dtype_name = _DTYPE_NAMES.setdefault(dtype, str(dtype))
    return f"ndarray({dtype_name}[{dims}])"


def _memory(ndarray: Any, array: object, nbytes: int) -> tuple[int, int] | None:
    """The address range of a contiguous array's data (None if NumPy cannot say)."""
    try:
        start = int(ndarray.__array_interface__.__get__(array)["data"][0])
    except Exception:  # counted, just not merged with other kinds
        return None
    return (start, start + nbytes) if start else None
