"""Calls whose cleanup an interrupt cannot skip (docs/architecture.md, GC rules 10).

A ``KeyboardInterrupt`` can arrive between any two bytecodes, including before the
first one of a function, where no ``try/finally`` written in it has started yet.
whyalive therefore enters the two places that restore what an earlier call changed
through C (``whyalive.capture._interrupts``):

* :func:`guard` ``(body, rescue)``: a method that calls ``body`` and, when it raises
  anything, ``rescue`` with the same arguments before re-raising. ``__exit__`` and
  ``stop()`` are guards whose rescue puts back everything ``__enter__``/``start()``
  changed, whatever line the interrupt cut.
* :func:`gc_callback` ``(body, rescue)``: the ``gc.callbacks`` entry. CPython prints
  and drops what a gc callback raises; this one runs ``rescue`` and raises the
  exception again in the interrupted code once the collection has returned.

* :func:`locked` ``(lock, body, *args)``: ``body(*args)`` with ``lock`` held, taken and
  released with no bytecode between (whyalive's locks are never taken with ``with``).

Rescues are idempotent: they run after a body that may have finished its own cleanup.
Without the compiled module the same logic runs in Python, which cannot protect its own
first and last steps: an interrupt at a fallback's ``try`` line skips the rescue, one
between taking a lock and the ``try`` that releases it, or in the ``finally`` before the
release, leaves the lock held, and one raised inside a gc callback is printed and
dropped, as CPython does. ``tests/test_interrupts.py`` checks that these are the only
harms an interrupt at any line leaves then.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any, cast

Call = Callable[..., Any]


class _PyGuard:
    """Pure-Python fallback of ``whyalive.capture._interrupts.guard``."""

    def __init__(self, body: Call, rescue: Call) -> None:
        self.__wrapped__ = body
        self._rescue = rescue
        self.__doc__ = body.__doc__
        self.__name__ = getattr(body, "__name__", "guard")

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.__wrapped__(*args, **kwargs)
        except BaseException:
            self._rescue(*args, **kwargs)
            raise


def _py_locked(lock: Any, body: Call, *args: Any) -> Any:
    """Pure-Python fallback of ``whyalive.capture._interrupts.locked``."""
    lock.acquire()
    try:
        return body(*args)
    finally:
        lock.release()


class _PyGcCallback:
    """Pure-Python fallback of ``whyalive.capture._interrupts.gc_callback``."""

    def __init__(self, body: Call, rescue: Call) -> None:
        self.__wrapped__ = body
        self._rescue = rescue

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        try:
            self.__wrapped__(phase, info)
        except BaseException as error:
            # As the compiled one: the frames it cut free their locals before the rescue.
            error.__traceback__ = None
            self._rescue(phase, info)
            raise


def _load() -> Any:
    try:
        return importlib.import_module("whyalive.capture._interrupts")
    except ImportError:
        return None


_COMPILED_MODULE = _load()
COMPILED = _COMPILED_MODULE is not None
_GUARD: Any = _COMPILED_MODULE.guard if COMPILED else None

locked: Callable[..., Any] = _COMPILED_MODULE.locked if COMPILED else _py_locked
"""``locked(lock, body, *args)``: ``body(*args)`` with ``lock`` held, released whatever it
raises. Compiled, no bytecode runs between taking the lock and calling ``body``, nor
between its end and the release; ``with lock:`` runs its own line again after the block
and before ``__exit__``, where an interrupt leaves the lock held."""


def guard(body: Call, rescue: Call) -> Any:
    """A method (or function) running ``body``; when it raises, ``rescue`` then re-raise."""
    return _GUARD(body, rescue) if COMPILED else _PyGuard(body, rescue)


def gc_callback(body: Callable[[str, dict[str, int]], None], rescue: Call) -> Call:
    """A ``gc.callbacks`` entry running ``body``; ``rescue`` when it raises, which is
    then raised again in the interrupted code once the collection returns."""
    if COMPILED:
        return cast(Call, _GUARD(body, rescue, after_collection=True))
    return _PyGcCallback(body, rescue)
