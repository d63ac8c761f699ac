"""Methods patched onto the object they hold: ``model.forward = MethodType(new_forward, model)``.

Monkey-patching a method onto one object (a model's ``forward``, a module's ``extra_repr``)
binds the object into the new callable (``MethodType``, ``functools.partial``, a closure
that uses it or calls its original bound method) and then stores that callable on the same
object: the object holds itself. Saving the original bound method on the object
(``module._old_forward = module.forward``), or assigning it back to undo a patch, is the
same cycle. The finder here serves WAL204 (:mod:`.self_refs`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from symtable import Function
from typing import NamedTuple

from whyalive.lint.findings import snippet
from whyalive.lint.rules.patch_facts import (
    CLASS_NAMES,
    FileFacts,
    FunctionFacts,
    call_name,
    file_facts,
    function_facts,
    is_dunder,
    object_chain,
)
from whyalive.lint.rules.shapes import (
    STORE_METHODS,
    MethodSelf,
    closure_frees,
    enclosing_function,
    is_partial,
    method_self,
    released_in_finally,
)
from whyalive.lint.scopes import Context, Frame

__all__ = ["Patch", "patches"]


@dataclass(frozen=True)
class Patch:
    """A store that puts on ``obj`` a callable that holds ``obj``."""

    obj: str
    what: str
    fix: str
    owner: MethodSelf | None
    """The enclosing method's ``self`` when ``obj`` is it (its class may prove it light)."""


def _stores(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST, str, str]]:
    """``(object stored on, stored value, where, how to undo it)`` for each store onto an
    object; ``where`` is the attribute (``m.forward``), or empty for an item of a container."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) or (
                isinstance(target, ast.Attribute) and not is_dunder(target.attr)
            ):
                where = snippet(target, 40) if isinstance(target, ast.Attribute) else ""
                yield target.value, node.value, where, f"`del {snippet(target, 40)}`"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "setattr" and len(node.args) == 3 and not node.keywords:
            obj, name, value = node.args
            constant = name.value if isinstance(name, ast.Constant) else None
            if not (isinstance(constant, str) and is_dunder(constant)):
                where = f"{snippet(obj, 40)}.{constant}" if isinstance(constant, str) else ""
                yield obj, value, where, f"`delattr({snippet(obj, 30)}, {snippet(name, 30)})`"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        index = STORE_METHODS.get(node.func.attr)
        if index is not None and len(node.args) > index:
            container = node.func.value
            yield container, node.args[index], "", f"remove it from `{snippet(container, 30)}`"


def _method_for_a_class(expr: ast.AST, ctx: Context) -> bool:
    """A lambda or nested function whose first parameter is ``self``/``cls``: written to be
    stored on a class, where it does not bind the class's instances."""
    if isinstance(expr, ast.Lambda):
        params = [a.arg for a in (*expr.args.posonlyargs, *expr.args.args)]
    elif isinstance(expr, ast.Name):
        tables = ctx.local_def_tables(expr.id)
        function = tables[0] if tables else None
        params = list(function.get_parameters()) if isinstance(function, Function) else []
    else:
        return False
    return bool(params) and params[0] in ("self", *CLASS_NAMES)


class _Holding(NamedTuple):
    """An object a stored value keeps alive, and how (words for the message)."""

    obj: str
    what: str
    method: str | None = None
    """The bound method (``m.forward``) through which it holds ``obj``, if any."""
    class_method_only: bool = False
    """True when the evidence holds only for a plain method of the enclosing class."""
    captured: bool = False
    """Held as a closure variable (WAL202's when the object is the method's ``self``)."""


class _Facts:
    """The file's and the function's facts, each computed on first use and kept in the memo."""

    def __init__(self, ctx: Context, function: Frame) -> None:
        self._ctx = ctx
        self._function = function

    @cached_property
    def file(self) -> FileFacts:
        key = ("patch-file-facts", 0)
        known = self._ctx.memo.get(key)
        if not isinstance(known, FileFacts):
            known = self._ctx.memo[key] = file_facts(self._ctx.frames[0].node)
        return known

    @cached_property
    def function(self) -> FunctionFacts:
        key = ("patch-facts", id(self._function.node))
        known = self._ctx.memo.get(key)
        if not isinstance(known, FunctionFacts):
            known = self._ctx.memo[key] = function_facts(self._function.node, self.file)
        return known


def _holdings(value: ast.AST, target: str, ctx: Context, facts: _Facts) -> Iterator[_Holding]:
    """What ``value`` keeps alive: objects bound by ``MethodType``/``partial``, captured by a
    closure, or reached through a bound method of theirs (saved in a local or an attribute,
    or wrapped)."""
    # In order, outermost first, so the message names the most direct holding.
    pending = [value]
    for expr in pending:
        if isinstance(expr, ast.Call) and call_name(expr) == "MethodType" and len(expr.args) == 2:
            bound = snippet(expr.args[1], 40)
            yield _Holding(bound, f"`{snippet(expr, 50)}`, a method bound to `{bound}`")
        elif is_partial(expr):
            assert isinstance(expr, ast.Call)
            for arg in (expr.func, *expr.args, *(k.value for k in expr.keywords)):
                if object_chain(arg) is not None:
                    held = snippet(arg, 40)
                    yield _Holding(held, f"a `partial` that holds `{held}`")
            pending.extend((*expr.args, *(k.value for k in expr.keywords)))
        elif isinstance(expr, ast.IfExp):  # either branch may be what is stored
            pending.extend((expr.body, expr.orelse))
        elif isinstance(expr, ast.BoolOp):
            pending.extend(expr.values)
        elif isinstance(expr, ast.Call) and call_name(expr) == "update_wrapper":
            pending.extend(expr.args[:2])
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
            if call_name(expr.func) == "wraps":  # functools.wraps(original)(wrapper)
                pending.extend((*expr.args, *expr.func.args[:1]))
        elif isinstance(expr, ast.Call):
            # `m.f = wrap(m.f)`: the wrapper holds the method it replaces.
            if expr is value and target in facts.function.rewrapped:
                what = f"`{snippet(expr, 50)}`, a wrapper around its own bound method `{target}`"
                known = target.rsplit(".", 1)[-1] in facts.file.method_names
                yield _Holding(target.rsplit(".", 1)[0], what, target, not known)
        elif isinstance(expr, ast.Attribute) and expr.attr in facts.file.saved_methods:
            owner = snippet(expr.value, 40)
            what = f"`{snippet(expr, 40)}`, where this file saves a bound method of `{owner}`"
            yield _Holding(owner, what)
        elif (
            isinstance(expr, (ast.Name, ast.Attribute))
            and snippet(expr, 40) in facts.function.bound_methods
        ):
            name = snippet(expr, 40)
            source = facts.function.bound_methods[name]
            what = (
                f"`{name}`, the bound method `{source}`"
                if name != source
                else f"its own bound method `{source}`, read before `{source}` is patched"
            )
            yield _Holding(source.rsplit(".", 1)[0], what, source)
        else:
            found = closure_frees(expr, ctx)
            if found is None or _method_for_a_class(expr, ctx):
                continue
            kind, frees = found
            for original in facts.function.wrapped.get(snippet(expr), ()):
                method = facts.function.bound_methods.get(snippet(original, 40))
                if method is not None:  # `@wraps(original)`: held as `__wrapped__`
                    what = f"a {kind} whose `__wrapped__` is the bound method `{method}`"
                    yield _Holding(method.rsplit(".", 1)[0], what, method)
            for free in sorted(frees):
                if free in facts.function.bound_methods:
                    source = facts.function.bound_methods[free]
                    what = f"a {kind} that calls `{free}` (the bound method `{source}`)"
                    yield _Holding(source.rsplit(".", 1)[0], what)
                else:
                    yield _Holding(free, f"a {kind} that captures `{free}`", captured=True)


def _local_root(ctx: Context, function: Frame, name: str) -> bool:
    """Whether ``name`` is a parameter or local of the function (or of one around it): an
    object that can die, unlike a module global, an import or a class."""
    table = ctx.frame_table(function)
    if table is None:
        return False
    try:
        symbol = table.lookup(name)
    except KeyError:
        return False
    if symbol.is_global() or symbol.is_imported():
        return False
    node = function.node
    is_classmethod = any(
        "classmethod" in ast.unparse(d) for d in getattr(node, "decorator_list", [])
    )
    return not (is_classmethod and symbol.is_parameter())


def patches(node: ast.AST, ctx: Context) -> list[Patch]:
    """The stores in ``node`` that put on an object a callable holding that object (at most
    one: the first store found), computed once per node."""
    key = ("patches", id(node))
    found = ctx.memo.get(key)
    if not isinstance(found, list):
        found = ctx.memo[key] = list(_find_patches(node, ctx))
    return found


def _find_patches(node: ast.AST, ctx: Context) -> Iterator[Patch]:
    function = enclosing_function(ctx)
    if function is None:
        return

    facts = _Facts(ctx, function)
    me = method_self(ctx)
    for obj, value, where, undo in _stores(node):
        chain = object_chain(obj)
        if chain is None:
            continue
        owners = {snippet(part, 40) for part in chain}
        for holding in _holdings(value, where, ctx, facts):
            held, what, saved_method = holding.obj, holding.what, holding.method
            if held not in owners:
                continue
            root = chain[-1]
            assert isinstance(root, ast.Name)
            is_self = me is not None and held == me.name
            method = (saved_method or "").rsplit(".", 1)[-1]
            own_methods = me.methods if me is not None else frozenset()
            if (
                # WAL202 owns closures that capture `self` and are stored on it; `self.m`
                # is a bound method only when `m` is a plain method of the class.
                (is_self and holding.captured)
                or (is_self and saved_method is not None and method not in own_methods)
                or (holding.class_method_only and not is_self)
                or root.id in facts.function.classes
                or id(node) in facts.function.overwritten
                or not _local_root(ctx, function, root.id)
            ):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and released_in_finally(
                ctx, node.targets[0] if isinstance(node, ast.Assign) else node.target, node.lineno
            ):
                continue
            if saved_method is not None:
                fix = (
                    f"Keep or wrap the function instead (`type({held}).{method}`, called with "
                    f"`{held}`), and undo a patch with `del {held}.{method}` rather than by "
                    "assigning the bound method back."
                )
            else:
                fix = (
                    f"Undo it when done ({undo}; the class's own method shows through again), "
                    f"or make it hold `weakref.proxy({held})` instead of `{held}`."
                )
            yield Patch(held, what, fix, me if is_self else None)
            return
