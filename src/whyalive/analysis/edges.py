"""Names for references in the user's terms: ``.cb``, ``[3]``, ``local x``, ``cell_contents``.

It tells which attribute, key, index, closure cell or local holds a target;
:mod:`whyalive.analysis.node_names` names the objects themselves. Other core stages read
live objects too (docs/architecture.md, invariant 1, lists where live objects end).
Everything here is guarded: the objects are post-mortem garbage (``__del__`` has
run, weakrefs are cleared), and may be hostile. We read through ``type(o)`` checks
and C-level descriptors, never through ``repr``/``getattr`` of user classes, and
read ``frame.f_locals`` only of a frame that no thread is running (or on 3.13+,
where it is a read-only view).
"""

from __future__ import annotations

import collections
import gc
import sys
import threading
import types
import weakref
from dataclasses import dataclass
from typing import Any

from whyalive.analysis.node_names import code_of, safe_repr, safe_type_name
from whyalive.analysis.slot_names import FUNCTION_SLOTS, name_slot_edge
from whyalive.guarded import instance_dict, is_one_of, is_type_namespace
from whyalive.kinds.autograd_graph import AutogradReader, name_node_edge
from whyalive.words.edge_kinds import (
    ATTRIBUTE,
    AUTOGRAD,
    BOUND_FUNC,
    BOUND_SELF,
    CELL,
    CLASS,
    CLOSURE,
    FRAME,
    GLOBALS,
    INDEX,
    INTERNAL,
    KEY,
    LOCAL,
    UNKNOWN,
)

_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_FRAME_LIKE = (types.FrameType, *_GENERATORS)


@dataclass(frozen=True)
class EdgeName:
    """How a reference reads: its kind and its name in the user's code."""

    kind: str
    name: str


def variable_name(edge: EdgeName) -> str | None:
    """The user's variable name an edge gives its target, if any (``x`` for ``local x``)."""
    if edge.kind in (CLOSURE, LOCAL) and " " in edge.name and "(" not in edge.name:
        return edge.name.split(" ", 1)[1]
    if edge.kind == ATTRIBUTE:
        return edge.name.lstrip(".")
    if edge.kind == KEY and edge.name != "key":
        return edge.name
    return None


def name_edge(source: object, target: object) -> EdgeName:
    """Name the reference ``source -> target``; unknown references are labelled by type."""
    try:
        found = _name_edge(source, target)
    except Exception:
        found = None
    return found or EdgeName(UNKNOWN, f"-> {safe_type_name(target)}")


def names_of(source: object, target: object) -> list[EdgeName]:
    """Every name under which ``source`` refers to ``target`` (``name_edge`` gives the first):
    ``self.parent`` and ``self._root`` both the root are two references a cut must name."""
    try:
        if type(source) in (list, tuple):
            items: Any = source
            found = [EdgeName(INDEX, f"[{i}]") for i, x in enumerate(items) if x is target]
        else:
            attrs = (instance_dict(source) if type(source) is not dict else None) or {}
            found = [EdgeName(ATTRIBUTE, f".{k}") for k, v in attrs.items() if v is target]
            items = dict.items(source) if isinstance(source, dict) else ()
            found += [EdgeName(KEY, f"[{safe_repr(k)}]") for k, v in items if v is target]
    except Exception:
        found = []
    return found or [name_edge(source, target)]


def _name_edge(source: Any, target: object) -> EdgeName | None:
    cls: type[Any] = type(source)
    if cls is types.FunctionType:
        return _name_function_edge(source, target)
    if cls is types.CellType:
        return EdgeName(CELL, "cell_contents")
    if cls is types.MethodType:
        if source.__self__ is target:
            return EdgeName(BOUND_SELF, "__self__")
        return EdgeName(BOUND_FUNC, "__func__")
    if is_one_of(cls, (list, tuple, collections.deque)):
        for index, item in enumerate(source):
            if item is target:
                return EdgeName(INDEX, f"[{index}]")
        return None
    if cls is dict:
        return _name_dict_edge(source, target)
    slot = name_slot_edge(source, target)
    if slot is not None:
        return EdgeName(*slot)
    if is_one_of(cls, _FRAME_LIKE):
        return _name_frame_edge(source, target)
    if is_one_of(cls, (set, frozenset)):
        return EdgeName(INDEX, "{item}")
    if target is cls:
        return EdgeName(CLASS, "__class__")
    if issubclass(cls, type):
        return _name_class_edge(source, target)
    return _name_instance_edge(source, target)


def _name_function_edge(fn: types.FunctionType, target: object) -> EdgeName | None:
    if type(target) is types.CellType and fn.__closure__:
        for index, cell in enumerate(fn.__closure__):
            if cell is target:
                return EdgeName(CLOSURE, f"__closure__[{index}] {fn.__code__.co_freevars[index]}")
    for slot, (kind, name) in FUNCTION_SLOTS:
        if slot.__get__(fn) is target:
            return EdgeName(kind, name)
    # Attributes set on the function (``fn.owner = self``) live in its __dict__, as an
    # instance's do.
    found = _name_instance_edge(fn, target)
    if found is None and type(target) is dict:
        # The one dict slot left: reading __annotations__ itself may evaluate them (3.14).
        return EdgeName(INTERNAL, "__annotations__")
    return found


def _name_dict_edge(mapping: dict[object, object], target: object) -> EdgeName | None:
    # Identity scans only: a key's __eq__/__hash__ is never called.
    for key, value in mapping.items():
        if value is target:
            return EdgeName(KEY, f"[{safe_repr(key)}]")
        if key is target:
            return EdgeName(KEY, "key")
    return None


def _name_instance_edge(obj: object, target: object) -> EdgeName | None:
    attrs = instance_dict(obj)
    if attrs is not None:
        if attrs is target:
            return EdgeName(INTERNAL, "__dict__")
        for key, value in attrs.items():
            if value is target and type(key) is str:
                return EdgeName(ATTRIBUTE, f".{key}")
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            descriptor = klass.__dict__.get(slot)
            if type(descriptor) is types.MemberDescriptorType:
                try:
                    if descriptor.__get__(obj) is target:
                        return EdgeName(ATTRIBUTE, f".{slot}")
                except AttributeError:
                    continue
    torch = sys.modules.get("torch")
    if torch is not None:
        reader = AutogradReader(torch)
        if reader.is_tensor(obj):
            return _name_tensor_edge(reader, obj, target)
        name = name_node_edge(reader, obj, target) if reader.is_node(obj) else None
        if name is not None:
            return EdgeName(AUTOGRAD, name)
    if isinstance(obj, dict):  # a dict subclass: its items, read through dict's own methods
        return _name_dict_edge(dict(dict.items(obj)), target)
    return None


def _name_tensor_edge(reader: AutogradReader, tensor: object, target: object) -> EdgeName:
    # `.grad` only of a leaf: torch warns when a non-leaf's is read.
    attrs = ("grad_fn", "_base", "grad") if reader.is_leaf(tensor) else ("grad_fn", "_base")
    for attr in attrs:
        if reader.tensor_field(tensor, attr) is target:
            return EdgeName(ATTRIBUTE, f".{attr}")
    if reader.hooks_dict(tensor) is target:
        return EdgeName(INTERNAL, "._backward_hooks")
    return EdgeName(INTERNAL, "tensor internals")


def _name_class_edge(cls: type, target: object) -> EdgeName | None:
    if is_type_namespace(cls, target):
        return EdgeName(INTERNAL, "__dict__")
    if target is cls.__mro__ or target is cls.__bases__:
        return EdgeName(INTERNAL, "__mro__")
    for key, value in cls.__dict__.items():
        if value is target:
            return EdgeName(ATTRIBUTE, f".{key}")
    return None


def _name_frame_edge(source: Any, target: object) -> EdgeName | None:
    """Name a frame's (or generator's) reference by position among its referents.

    ``gc.get_referents`` lists the fast locals in ``co_varnames + co_cellvars +
    co_freevars`` order, skipping unbound ones, after the code object (3.11+)
    or after the code, builtins and globals (3.10). When locals are unbound the
    position only bounds the name, so we say "one of" rather than guess.
    """
    code = code_of(source)
    if code is None:
        return None
    if type(source) is types.FrameType:
        if source.f_back is target:
            return EdgeName(FRAME, "f_back")
        if source.f_globals is target:
            return EdgeName(GLOBALS, "f_globals")
    elif getattr(source, "gi_frame", getattr(source, "cr_frame", None)) is target:
        return EdgeName(FRAME, "frame")
    if target is code:
        return EdgeName(INTERNAL, "code")
    referents = gc.get_referents(source)
    # A generator visits its own code, name and qualname before its frame's
    # function and code: the locals follow the *last* visit of the code object.
    start = next((i + 1 for i in range(len(referents) - 1, -1, -1) if referents[i] is code), None)
    if start is None:
        return None
    tail = referents[start:]
    while tail and type(tail[0]) is types.FunctionType and tail[0].__code__ is code:
        tail = tail[1:]  # the frame's own function (3.11+ visits it next to the code)
    names = code.co_varnames + code.co_cellvars + code.co_freevars
    if type(source) is types.FrameType and sys.version_info < (3, 11):
        tail = _fast_locals_of_310(source, tail, names)
    position = next((i for i, ref in enumerate(tail) if ref is target), None)
    if position is None:
        return None
    local_values = min(len(tail), len(names))
    if position >= len(names):
        return EdgeName(INTERNAL, "evaluation stack")
    unbound = len(names) - local_values
    candidates = names[position : position + unbound + 1]
    if len(candidates) > 1 and type(source) is types.FrameType:
        exact = _local_holding(source, target)
        if exact is not None:
            return EdgeName(LOCAL, f"local {exact}")
    # pytest's assertion rewriting adds `@py_assert1`-style locals the user never wrote.
    candidates = tuple(c for c in candidates if not c.startswith(_ASSERT_TEMPORARY)) or (
        "(a pytest assertion temporary)",
    )
    if len(candidates) == 1:
        return EdgeName(LOCAL, f"local {candidates[0]}")
    return EdgeName(LOCAL, f"local (one of {', '.join(candidates)})")


_ASSERT_TEMPORARY = "@py_assert"


def _fast_locals_of_310(
    frame: types.FrameType, tail: list[Any], names: tuple[str, ...]
) -> list[Any]:
    """``tail`` without what 3.10 visits between a frame's code and its fast locals:
    ``f_builtins``, ``f_globals``, then ``f_locals`` once something has read it (the
    naming itself does, for a finished frame) and ``f_trace``.

    A finished frame's ``f_locals`` is read to know it (a snapshot of locals no code will
    change again); a running frame's is not, as reading it would keep its locals alive in
    that dict after the function drops them, so a leading non-empty dict keyed only by the
    code's own names is taken for it.
    """
    for field in (frame.f_builtins, frame.f_globals):
        if tail and tail[0] is field:
            tail = tail[1:]
    if tail and type(tail[0]) is dict:
        if _is_running(frame):
            own_names = set(names)
            is_locals = bool(tail[0]) and all(
                type(key) is str and key in own_names for key in tail[0]
            )
        else:
            try:
                is_locals = tail[0] is frame.f_locals
            except Exception:
                is_locals = False
        if is_locals:
            tail = tail[1:]
    if tail and frame.f_trace is not None and tail[0] is frame.f_trace:
        tail = tail[1:]
    return tail


def _local_holding(frame: types.FrameType, target: object) -> str | None:
    """The one local of ``frame`` bound to ``target``, read from ``f_locals``.

    Up to 3.12 reading ``f_locals`` writes the locals into the frame, so only a
    frame no thread is running qualifies (garbage frames have all finished); from
    3.13 it is a read-only view of any frame.
    """
    if sys.version_info < (3, 13) and _is_running(frame):
        return None
    try:
        names = [
            name
            for name, value in frame.f_locals.items()
            if value is target and not name.startswith(_ASSERT_TEMPORARY)
        ]
    except Exception:
        return None
    return names[0] if len(names) == 1 else None


def _is_running(frame: types.FrameType) -> bool:
    # This thread's entry would be this very frame, which a local holding it would
    # turn into a cycle: this thread's stack is walked from the caller instead.
    tops = sys._current_frames()
    tops[threading.get_ident()] = sys._getframe(1)
    current: types.FrameType | None = None
    try:
        for top in tops.values():
            current = top
            while current is not None:
                if current is frame:
                    return True
                current = current.f_back
        return False
    finally:
        del tops, current


def is_dead_proxy(obj: object) -> bool:
    """A ``weakref.proxy`` whose referent is gone: touching it raises ReferenceError."""
    return type(obj) in (weakref.ProxyType, weakref.CallableProxyType)


def is_owned_part(owner: Any, part: object) -> bool:
    """True when ``part`` is an interpreter-made piece of ``owner`` that paths hide.

    A function's ``__closure__`` tuple and an instance's (or function's) ``__dict__`` are
    shown as one named reference (``__closure__[1] x``, ``.attr``) instead of two hops.
    """
    try:
        cls = type(owner)
        if cls is types.FunctionType and owner.__closure__ is part:
            return True
        if type(part) is dict and not is_one_of(cls, (dict, type)) and not issubclass(cls, type):
            return instance_dict(owner) is part
    except Exception:
        return False
    return False
