"""The heavy payload of the fix-proof scenarios, tracked so a test can tell it was freed.

``heavy()`` makes a NumPy array (``tensor()`` a torch tensor) and keeps a weak
reference to it. With the collector off, ``alive()`` after a scenario ran counts the
payload that reference counting could not free: a scenario that leaks leaves some,
the same scenario with its ``fix_edit`` applied leaves none.

Where NumPy is missing (CPython 3.14 on Pyodide has no wheel of it), the payload is a
plain ``bytearray`` of at least 1 MiB instead, the smallest buffer whyalive counts as
heavy: like an array it is untracked by the collector, so the same scenarios leak and are
found there too. A bytearray cannot be weakly referenced, so :func:`alive` refuses to
count once one was made (a fix proof needs NumPy).
"""

from __future__ import annotations

import functools
import importlib
import math
import weakref
from types import ModuleType
from typing import Any

from whyalive.kinds.buffers import DEFAULT_MIN_BUFFER_BYTES

_made: list[weakref.ref[Any]] = []
_unfollowed = 0
"""Payload made since the last :func:`reset` that no weak reference can follow."""


@functools.cache
def numpy_or_none() -> ModuleType | None:
    """NumPy, or None where it is not installed (asked once)."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def float32s_nbytes(*shape: int) -> int:
    """The bytes of a payload of ``shape`` float32s here: an array's, or the bytearray's
    that stands in for it (at least ``DEFAULT_MIN_BUFFER_BYTES``, to count as heavy)."""
    size = 4 * math.prod(shape)
    return size if numpy_or_none() else max(size, DEFAULT_MIN_BUFFER_BYTES)


def heavy(size: int = 16384) -> Any:
    """A float32 NumPy array of ``size`` items (64 KiB by default), tracked; a bytearray
    of 1 MiB or more where NumPy is missing."""
    # Made here, in the scenario's helper: a recorded allocation site is this function.
    numpy = numpy_or_none()
    if numpy is None:
        return track(bytearray(float32s_nbytes(size)))
    return track(numpy.zeros(size, dtype=numpy.float32))


def tensor(*shape: int) -> Any:
    """A float32 torch tensor (64 KiB by default), tracked."""
    import torch

    return track(torch.zeros(shape or (16384,)))


def track(obj: Any) -> Any:
    """Remember ``obj`` (weakly) as payload and return it."""
    global _unfollowed
    if len(_made) > 10_000:  # other tests never reset: keep only the live ones
        _made[:] = [ref for ref in _made if ref() is not None]
    try:
        _made.append(weakref.ref(obj))
    except TypeError:  # a bytearray, where NumPy is missing
        _unfollowed += 1
    return obj


def reset() -> None:
    """Forget the payload made so far."""
    global _unfollowed
    _made.clear()
    _unfollowed = 0


def alive() -> int:
    """How many tracked payload objects are still alive."""
    if _unfollowed:
        raise RuntimeError(
            f"{_unfollowed} payload buffers were made without NumPy: no weak reference can "
            "tell whether they were freed"
        )
    return sum(1 for ref in _made if ref() is not None)


def made() -> int:
    """How many payload objects were made since the last :func:`reset`."""
    return len(_made) + _unfollowed
