"""The heavy payload of the fix-proof scenarios, tracked so a test can tell it was freed.

``heavy()`` makes a NumPy array (``tensor()`` a torch tensor) and keeps a weak
reference to it. With the collector off, ``alive()`` after a scenario ran counts the
payload that reference counting could not free: a scenario that leaks leaves some,
the same scenario with its ``fix_edit`` applied leaves none.
"""

from __future__ import annotations

import weakref
from typing import Any

_made: list[weakref.ref[Any]] = []


def heavy(size: int = 16384) -> Any:
    """A float32 NumPy array of ``size`` items (64 KiB by default), tracked."""
    import numpy

    return track(numpy.zeros(size, dtype=numpy.float32))


def tensor(*shape: int) -> Any:
    """A float32 torch tensor (64 KiB by default), tracked."""
    import torch

    return track(torch.zeros(shape or (16384,)))


def track(obj: Any) -> Any:
    """Remember ``obj`` (weakly) as payload and return it."""
    if len(_made) > 10_000:  # other tests never reset: keep only the live ones
        _made[:] = [ref for ref in _made if ref() is not None]
    _made.append(weakref.ref(obj))
    return obj


def reset() -> None:
    """Forget the payload made so far."""
    _made.clear()


def alive() -> int:
    """How many tracked payload objects are still alive."""
    return sum(1 for ref in _made if ref() is not None)


def made() -> int:
    """How many payload objects were made since the last :func:`reset`."""
    return len(_made)
