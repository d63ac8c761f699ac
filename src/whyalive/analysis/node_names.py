"""How a live object reads in a report: its type's name, a label, where its code is.

Every read is guarded as in :mod:`whyalive.analysis.edges`: the objects may be post-mortem
garbage or hostile, so names come through ``type(o)`` checks and C-level descriptors.
"""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from whyalive.guarded import (
    is_in_mro,
    is_one_of,
    type_module,
    type_namespace,
    type_qualname,
    type_short_name,
)

_MAX_REPR = 60
_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


@dataclass(frozen=True)
class NodeName:
    """How an object reads: type, label, and where it lives in code."""

    type_name: str
    label: str
    location: str | None


def type_name(obj: object) -> str:
    """``module.Qualname`` of the object's type, builtins without a module."""
    cls = type(obj)
    module = type_module(cls)
    qualname = type_qualname(cls)
    if module is None or module == "builtins":
        return qualname
    return f"{module}.{qualname}"


def safe_repr(obj: object, limit: int = _MAX_REPR) -> str:
    """A repr that never raises and never runs user code for non-builtin types."""
    if type(obj) in (str, int, float, bool, type(None), bytes):
        text = repr(obj)
    else:
        text = f"<{type_name(obj)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def source_place(filename: str, line: int) -> str:
    """``file.py:LINE`` (file name only: stable across machines).

    Code typed into IPython or a Jupyter notebook reads as the cell it came from,
    ``In [2], line 3``, not as the kernel's hashed file (``281543413.py:3``).
    """
    cell = _cell_name(filename)
    if cell is not None:
        return f"{cell}, line {line}"
    return f"{os.path.basename(filename)}:{line}"


def _cell_name(filename: str) -> str | None:
    """``In [2]`` when IPython compiled ``filename`` from a cell; read, never imported."""
    ipython = sys.modules.get("IPython")
    if ipython is None or not (filename.endswith(".py") or filename.startswith("<")):
        return None
    try:
        shell = ipython.get_ipython()
        named = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # an IPython without the cell map, or a shell half torn down
        return None
    if not named or not isinstance(named[1], str) or not named[1].startswith("In["):
        return None
    return f"In [{named[1][3:].rstrip(']')}]"


def code_location(code: types.CodeType) -> str:
    """``file.py:LINE`` of a code object's first line (see :func:`source_place`)."""
    return source_place(code.co_filename, code.co_firstlineno)


def code_of(obj: Any) -> types.CodeType | None:
    cls = type(obj)
    if cls is types.FunctionType:
        return obj.__code__  # type: ignore[no-any-return]
    if cls is types.FrameType:
        return obj.f_code  # type: ignore[no-any-return]
    if is_one_of(cls, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        for attr in ("gi_code", "cr_code", "ag_code"):
            code = getattr(obj, attr, None)
            if type(code) is types.CodeType:
                return code
    return None


def code_qualname(code: types.CodeType, owner: Any = None) -> str:
    """``co_qualname`` (3.11+); on 3.10 the function's or generator's ``__qualname__``,
    or for a frame the method of a class of its module whose code it runs."""
    found = getattr(code, "co_qualname", None)
    if found is None and type(owner) in (types.FunctionType, *_GENERATORS):
        found = owner.__qualname__
    if found is None and type(owner) is types.FrameType:
        found = _method_qualname(code, owner.f_globals)
    return str(found or code.co_name)


def _method_qualname(code: types.CodeType, namespace: dict[str, Any]) -> str | None:
    """``Protocol.connection_lost``: a class of ``namespace`` whose own function runs
    ``code`` (read through type's descriptors: a metaclass's hooks never run)."""
    try:
        for value in list(namespace.values()):
            if not is_in_mro(type(value), type):
                continue
            held = type_namespace(value).get(code.co_name)
            function = getattr(held, "__func__", held)  # a staticmethod or classmethod
            if type(function) is types.FunctionType and function.__code__ is code:
                return str(function.__qualname__)
    except Exception:  # a namespace that cannot be read names the code alone
        return None
    return None


def name_node(obj: object, variable: str | None = None) -> NodeName:
    """Name an object; ``variable`` is the user's name for it when a path knows one."""
    try:
        return _name_node(obj, variable)
    except Exception:  # a half-dead object still gets its type's name
        return NodeName(safe_type_name(obj), safe_type_name(obj), None)


def safe_type_name(obj: object) -> str:
    try:
        return type_name(obj)
    except Exception:
        return "object"


def _name_node(obj: Any, variable: str | None) -> NodeName:
    cls = type(obj)
    tname = type_name(obj)
    suffix = f" {variable}" if variable else ""
    code = code_of(obj)
    if code is not None:
        if cls is types.FrameType:
            line = obj.f_lineno
            where = source_place(code.co_filename, line)
            return NodeName(tname, f"frame of {code_qualname(code, obj)}", where)
        kind = "function" if cls is types.FunctionType else type_short_name(cls)
        return NodeName(tname, f"{kind} {code_qualname(code, obj)}", code_location(code))
    if cls is types.MethodType:
        func = obj.__func__
        func_code = code_of(func)
        fname = code_qualname(func_code, func) if func_code else safe_repr(func)
        loc = code_location(func_code) if func_code else None
        return NodeName(tname, f"bound method {fname}", loc)
    if cls is types.CellType:
        return NodeName(tname, f"cell{suffix}", None)
    if cls is types.TracebackType:
        frame = obj.tb_frame
        where = source_place(frame.f_code.co_filename, obj.tb_lineno)
        return NodeName(tname, f"traceback in {code_qualname(frame.f_code, frame)}", where)
    if issubclass(cls, type):
        return NodeName(tname, f"class {type_qualname(obj)}", None)
    if issubclass(cls, BaseException):
        return NodeName(tname, f"{type_qualname(cls)} exception{suffix}", None)
    if is_one_of(cls, (list, dict, tuple, set, frozenset)):
        try:
            size = len(obj)
        except Exception:
            size = -1
        count = f" of {size}" if size >= 0 else ""
        return NodeName(tname, f"{type_short_name(cls)}{suffix}{count}".strip(), None)
    return NodeName(tname, f"{type_qualname(cls)} object{suffix}", None)
