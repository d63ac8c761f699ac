"""The one reader of attributes that user code controls: type names and plain attributes.

``type(obj).__qualname__`` looks like a harmless read, but a metaclass can define
``__getattribute__`` or a property of that name, and a class body can set
``__module__`` to anything. Every name read here goes through ``type``'s own
descriptors, which run no user code, and every other read catches what the user's
code raises; none of these functions ever raises.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import is_
from typing import Any, Generic, TypeVar

_Answer = TypeVar("_Answer")

_TYPE_NAME = type.__dict__["__name__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_DICT = type.__dict__["__dict__"]

_FALLBACK = "object"


def type_short_name(cls: type) -> str:
    """``cls.__name__``, read without running a metaclass's code."""
    try:
        return str(_TYPE_NAME.__get__(cls))
    except Exception:
        return _FALLBACK


def type_qualname(cls: type) -> str:
    """``cls.__qualname__``, read without running a metaclass's code."""
    try:
        return str(_TYPE_QUALNAME.__get__(cls))
    except Exception:
        return _FALLBACK


def type_module(cls: type) -> str | None:
    """``cls.__module__`` when it is a string (a class body may set it to anything)."""
    try:
        module = _TYPE_MODULE.__get__(cls)
    except Exception:
        return None
    return module if type(module) is str else None


def type_mro(cls: type) -> tuple[type, ...]:
    """``cls.__mro__`` (the class and its bases), or just ``(cls,)`` when it cannot be read."""
    try:
        return tuple(_TYPE_MRO.__get__(cls))
    except Exception:
        return (cls,)


def type_namespace(cls: type) -> dict[str, object]:
    """A copy of the class's own namespace (``cls.__dict__``), or ``{}``."""
    try:
        return dict(_TYPE_DICT.__get__(cls))
    except Exception:
        return {}


def is_type_namespace(cls: type, target: object) -> bool:
    """Whether ``target`` is the dict behind ``cls.__dict__`` (which shows it only through a
    new mappingproxy each time)."""
    try:
        proxy = _TYPE_DICT.__get__(cls)
    except Exception:
        return False
    return type(target) is dict and any(held is target for held in gc.get_referents(proxy))


def instance_dict(obj: object) -> dict[str, object] | None:
    """The dict ``obj`` keeps its attributes in, read by ``object``'s own lookup (a
    class's ``__getattr__`` never runs); None when it has none or it is no dict. On
    3.11+ asking makes one for an instance that kept its attributes inline."""
    try:
        found = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return found if type(found) is dict else None


def read_attribute(obj: object, name: str, default: object = None) -> object:
    """``getattr(obj, name, default)``, with ``default`` also when the user's code raises."""
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


def sizeof(obj: object) -> int:
    """``sys.getsizeof(obj)``, or 0 when the object's ``__sizeof__`` raises."""
    try:
        return int(sys.getsizeof(obj))
    except Exception:
        return 0


# CPython 3.12.0-3.12.5 and 3.13 before 3.13.0rc2: the C `_asyncio` module's traversal lists
# the freed objects of its free list (docs/architecture.md, "GC rules" 11).
_TRAVERSAL_LISTS_FREED = (3, 12) <= sys.version_info[:2] <= (3, 13) and (
    sys.version_info < (3, 12, 6) or (3, 13) <= sys.version_info < (3, 13, 0, "candidate", 2)
)
_MODULE_DICT: Any = vars(type(sys))["__dict__"]


def unsafe_to_traverse() -> object | None:
    """The module whose ``gc.get_referents()`` hands out freed objects here, when loaded.

    Dropping that answer frees them a second time and loops the collector's lists: a
    walk over the whole heap takes that module's dict for its referents instead
    (:func:`module_dict`).
    """
    module = sys.modules.get("_asyncio") if _TRAVERSAL_LISTS_FREED else None
    return module if type(module) is type(sys) else None


def module_dict(module: object) -> dict[str, object]:
    """A module's ``__dict__``, read through the module type's own descriptor."""
    return _MODULE_DICT.__get__(module)  # type: ignore[no-any-return]


def by_identity(items: Iterable[object]) -> dict[int, Any]:
    """``id(item) -> item``, each item once (at C speed): a set of classes would hash each
    one, which runs its metaclass's ``__hash__``."""
    listed = list(items)
    return dict(zip(map(id, listed), listed, strict=True))


def distinct_types(objects: Iterable[object]) -> list[type]:
    """The types of ``objects``, each once, told apart by identity."""
    return list(by_identity(map(type, objects)).values())


def is_one_of(cls: object, classes: Iterable[object]) -> bool:
    """``cls in classes``, by identity: ``in`` compares with ``==``, which runs the
    metaclass's ``__eq__`` of a user's class before the builtin one's."""
    return any(map(is_, repeat(cls), classes))


def is_in_mro(cls: type, base: object) -> bool:
    """Whether ``base`` is one of ``cls``'s bases (or ``cls``), by identity: ``base in mro``
    would compare with each class's metaclass ``__eq__``."""
    return is_one_of(base, type_mro(cls))


class TypeMemo(Generic[_Answer]):
    """``decide(cls)``, asked once per class and remembered by the class's identity: a dict
    keyed by the class would hash it, which runs its metaclass's ``__hash__``."""

    def __init__(self, decide: Callable[[type], _Answer]) -> None:
        self._decide = decide
        self.known: dict[int, tuple[type, _Answer]] = {}
        """``id(cls) -> (cls, answer)``: a hot loop may read it inline (the class must be
        checked by identity, as :meth:`__call__` does), and asks the memo when it is missing."""

    def __call__(self, cls: type) -> _Answer:
        known = self.known.get(id(cls))
        if known is None or known[0] is not cls:  # the class kept: its id is not reused
            known = self.known[id(cls)] = (cls, self._decide(cls))
        return known[1]
