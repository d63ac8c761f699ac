"""NumPy arrays: not tracked by the GC, so found as referents of garbage.

See docs/architecture.md, "Words": the retained set.
"""

from __future__ import annotations

import sys
from typing import Any

from whyalive.kinds import HeavyFacts

# str(dtype) runs Python code in NumPy (~50 us); dtypes are few and immutable.
_DTYPE_NAMES: dict[object, str] = {}


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
        if base is None:
            nbytes = int(ndarray.nbytes.__get__(root))
            memory = _memory(ndarray, root, nbytes)
        else:
            nbytes = int(ndarray.nbytes.__get__(root))
            flags = ndarray.flags.__get__(root)
            contiguous = flags.c_contiguous or flags.f_contiguous
            memory = _memory(ndarray, root, nbytes) if contiguous else None
        dims = ", ".join(str(int(d)) for d in shape)
        dtype_name = _DTYPE_NAMES.get(dtype)
        if dtype_name is None:
            dtype_name = _DTYPE_NAMES.setdefault(dtype, str(dtype))
        return HeavyFacts(
            kind="numpy.ndarray",
            description=f"ndarray({dtype_name}[{dims}])",
            nbytes=nbytes,
            device="cpu",
            storage=("numpy", id(root)),
            owner=base if base is not None else (None if root is obj else root),
            memory=memory,
        )


def _memory(ndarray: Any, array: object, nbytes: int) -> tuple[int, int] | None:
    """The address range of a contiguous array's data (None if NumPy cannot say)."""
    try:
        start = int(ndarray.__array_interface__.__get__(array)["data"][0])
    except Exception:  # counted, just not merged with other kinds
        return None
    return (start, start + nbytes) if start else None
