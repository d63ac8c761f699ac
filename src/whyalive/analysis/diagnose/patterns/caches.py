"""Caches that hold their owner: ``lru_cache``/``cache`` on a method, class-level caches."""

from __future__ import annotations

import dis
import functools
import inspect
import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import WEAKEN
from whyalive.analysis.naming import chain, expression, is_instance_node, qualname_of, short_name
from whyalive.analysis.paths import CycleView
from whyalive.words import edge_kinds as ek


def _code_of(function: object) -> types.CodeType | None:
    """The code of a function or of a bound method's function; None for anything else,
    hostile objects included."""
    try:
        code = getattr(getattr(function, "__func__", function), "__code__", None)
    except Exception:  # a raising __getattr__
        return None
    return code if isinstance(code, types.CodeType) else None


def _reads_first_argument(code: types.CodeType | None) -> bool:
    """Whether the code reads its first parameter, its ``self`` (True when unknown)."""
    if code is None or code.co_argcount < 1:
        return True
    me = code.co_varnames[0]
    if me in code.co_cellvars:  # a nested function captures it
        return True
    for instruction in dis.get_instructions(code):
        if "LOAD_FAST" in instruction.opname or "LOAD_DEREF" in instruction.opname:
            names = instruction.argval  # a pair for 3.13's STORE_FAST_LOAD_FAST and the like
            if names == me or (isinstance(names, tuple) and me in names):
                return True
    return False


def _cache_alternatives(wrapped: object) -> tuple[str, str]:
    """The fixes that keep every call ``obj.method(...)`` working (a ``cached_property``
    would not: callers call the method): the results kept on the instance, and a
    module-level cache only when the method never reads ``self``."""
    code = _code_of(wrapped)
    starred = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    shape = (code.co_argcount, code.co_kwonlyargcount, code.co_flags & starred) if code else ()
    where = (
        "an attribute of `self` set on the first call and returned after"
        if shape == (1, 0, 0)  # nothing but `self`
        else "a dict on `self` keyed by the arguments, filled on the first call"
    )
    memo = f"the results on the instance instead ({where})"
    module = (
        ""
        if _reads_first_argument(code)
        else "; or, since the method does not read `self`, cache a module-level function of "
        "its arguments and call it from the method"
    )
    return memo, module


class MethodCachePattern:
    """``functools.lru_cache``/``cache`` wrappers and class-level caches inside a cycle."""

    name = "method-cache"
    title = "cache that holds its owner"

    def match(self, view: CycleView) -> PatternMatch | None:
        """An lru_cache wrapper among the members."""
        wrapper_type = type(functools.lru_cache(maxsize=None)(lambda: None))
        caches = [n for n in view.shown if type(view.obj(n)) is wrapper_type]
        if not caches:
            return None
        cache = caches[0]
        wrapped = getattr(view.obj(cache), "__wrapped__", None)
        if _captures_member(view, wrapped):
            # `lru_cache(...)(lambda x: self.weights.sum() * x)`: the loop runs through the
            # function's closure, not through arguments kept in the cache.
            return None
        name = qualname_of(wrapped) if wrapped is not None else "function"
        summary = f"`functools.lru_cache` of `{name}` is part of the cycle"
        explanation = (
            f"The cache of `{name}` keeps every argument it was called with, `self` included; "
            "when the cache itself is reachable from those arguments (a per-class or "
            "per-instance cache), the objects hold the cache and the cache holds the objects."
        )
        into = view.edges_into(cache)
        cut = into[:1]
        held_in = expression("self", into[:1]) if into else None
        stored = (
            f" Here the cache is stored in `{held_in}`: drop it (`del {held_in}`) when done."
            if held_in and into[0].name.kind == ek.ATTRIBUTE
            else ""
        )
        if any(issubclass(type(view.obj(n)), type) for n in view.shown):
            # A class-level cache: the class is always a cycle of its own, so the cut
            # is the cache's entry that holds the instance (and its heavy objects).
            owners = [n for n in view.shown if is_instance_node(view.obj(n))]
            steps = chain(view, cache, owners[0]) if owners else []
            entries = [e for e in steps if e.name.kind in (ek.KEY, ek.INDEX)]
            cut = entries[:1] or cut
            short = short_name(name)
            stored = f" Or empty the cache when done: `{short}.cache_clear()`."
        memo, module = _cache_alternatives(wrapped)
        fix = (
            f"Do not put `lru_cache`/`cache` on `{short_name(name)}` (a method): keep {memo}"
            f"{module}, so every call stays as it is.{stored}"
        )
        also = f"Or keep {memo}{module}.{stored}"
        remedy = None if any(issubclass(type(view.obj(n)), type) for n in view.shown) else WEAKEN
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, "WAL501", None, remedy, also
        )


def _captures_member(view: CycleView, function: object) -> bool:
    """Whether ``function`` is a closure one of whose cells holds an object of the cycle."""
    if type(function) is not types.FunctionType:
        return False
    members = {id(view.obj(n)) for n in view.shown}
    cells = function.__closure__ or ()
    return any(id(getattr(cell, "cell_contents", None)) in members for cell in cells)
