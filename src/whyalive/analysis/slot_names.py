"""Names for the references builtin types keep in C slots, as the interpreter spells them.

A function's ``__code__`` or ``__annotate__``, a partial's ``func``, an exception's
``__traceback__``, a traceback's ``tb_frame``, an asyncio future's ``_exception``, a
descriptor's ``__objclass__``: each read through the builtin type's own descriptors, so
no user code runs (a subclass's properties never do). :mod:`whyalive.analysis.edges`
names user-level references and asks here for the rest; a class's namespace dict is told
by :func:`whyalive.guarded.is_type_namespace`.
"""

from __future__ import annotations

import collections
import functools
import sys
import types
import weakref
from collections.abc import Mapping
from typing import Any

from whyalive.guarded import is_one_of, type_module, type_mro
from whyalive.words.edge_kinds import ATTRIBUTE, DEFAULTS, GLOBALS, INTERNAL, TRACEBACK

# (descriptor, name) pairs of each builtin type, read once.
_PARTIAL_SLOTS = tuple(
    (vars(functools.partial)[name], name) for name in ("func", "args", "keywords")
)
_EXCEPTION_SLOTS = tuple(
    (vars(BaseException)[name], name) for name in ("__traceback__", "__context__", "__cause__")
)
_DEFAULT_FACTORY = vars(collections.defaultdict)["default_factory"]
_WEAKREF_CALLBACK = vars(weakref.ReferenceType)["__callback__"]
_TRACEBACK_SLOTS = tuple(
    (vars(types.TracebackType)[name], name) for name in ("tb_frame", "tb_next")
)
# A C future's getters that hand back the very object the slot holds (``_callbacks`` builds
# a new list, so it is not among them).
_FUTURE_SLOTS = ("_exception", "_result", "_loop", "_source_traceback", "_coro", "_fut_waiter")
# A function's slots, (descriptor, (kind, name)): those this Python has (__builtins__ 3.10+,
# __type_params__ 3.12+, __annotate__ 3.14+), __annotations__ left out (reading it may
# evaluate 3.14's lazy annotations).
FUNCTION_SLOTS = tuple(
    (vars(types.FunctionType)[name], (kind, name))
    for name, kind in [("__globals__", GLOBALS), ("__defaults__", DEFAULTS)]
    + [("__kwdefaults__", DEFAULTS), ("__closure__", INTERNAL), ("__code__", INTERNAL)]
    + [(name, INTERNAL) for name in ("__builtins__", "__type_params__", "__annotate__")]
    + [(name, INTERNAL) for name in ("__module__", "__doc__", "__name__", "__qualname__")]
    if hasattr(vars(types.FunctionType).get(name), "__get__")
)
_DESCRIPTORS = (
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)


def name_slot_edge(source: Any, target: object) -> tuple[str, str] | None:
    """``(kind, name)`` of the slot of a builtin type through which ``source`` holds
    ``target``; None when ``source`` is no such type or no slot holds it."""
    cls = type(source)
    # Slots no code reassigns (a partial is rebuilt instead): the interpreter's, never cut.
    if issubclass(cls, functools.partial):
        found = _slot_holding(_PARTIAL_SLOTS, source, target)
        return (INTERNAL, found) if found is not None else None
    if cls is types.TracebackType:
        found = _slot_holding(_TRACEBACK_SLOTS, source, target)
        return (TRACEBACK, found) if found is not None else None
    if issubclass(cls, BaseException):
        found = _slot_holding(_EXCEPTION_SLOTS, source, target)
        if found is not None:
            return TRACEBACK, found
        return (INTERNAL, "args") if vars(BaseException)["args"].__get__(source) is target else None
    if is_one_of(cls, _DESCRIPTORS):
        return (INTERNAL, "__objclass__") if source.__objclass__ is target else None
    if issubclass(cls, weakref.ReferenceType):
        # A weak reference holds only its callback strongly (`weakref.ref(x, self._gone)`).
        held = _WEAKREF_CALLBACK.__get__(source) is target
        return (INTERNAL, "__callback__") if held else None
    if issubclass(cls, collections.defaultdict):
        # An attribute code may set (`counts.default_factory = None`); the items are the
        # dict's, named by the caller.
        held = _DEFAULT_FACTORY.__get__(source) is target
        return (ATTRIBUTE, ".default_factory") if held else None
    future = getattr(sys.modules.get("_asyncio"), "Future", None)
    if not isinstance(future, type) or not issubclass(cls, future):
        return None
    # A task's getters are its own or, on 3.14, its base future's.
    spaces = [vars(c) for c in type_mro(cls) if type_module(c) == "_asyncio"]
    slots = [(space[n], n) for space in spaces for n in _FUTURE_SLOTS if n in space]
    found = _slot_holding(slots, source, target)
    if found is None and any(_is_done_callback(space, source, target) for space in spaces):
        found = "done callback"  # `future.add_done_callback(self._on_done)`
    return (INTERNAL, found) if found is not None else None


def _is_done_callback(space: Mapping[str, Any], source: object, target: object) -> bool:
    """Whether ``target`` is one of the C future's done callbacks (its ``_callbacks`` getter
    builds a new list of ``(callback, context)`` pairs each time)."""
    getter: Any = space.get("_callbacks")
    pairs = getter.__get__(source) if hasattr(getter, "__get__") else None
    return any(type(p) is tuple and p and p[0] is target for p in pairs or ())


def _slot_holding(slots: Any, source: object, target: object) -> str | None:
    return next((str(name) for d, name in slots if d.__get__(source) is target), None)
