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
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from symtable import Function
from typing import NamedTuple

from whyalive.lint.findings import snippet
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


def _chain(expr: ast.AST) -> list[ast.AST] | None:
    """``expr`` and each object it is reached from (``[a.b.c, a.b, a]``), or ``None`` when the
    chain goes through a call or a class (``type(m).f``, ``m.__class__.f``: alive anyway)."""
    chain: list[ast.AST] = []
    while True:
        chain.append(expr)
        if isinstance(expr, ast.Name):
            return chain
        if isinstance(expr, ast.Subscript) or (
            isinstance(expr, ast.Attribute) and expr.attr != "__class__"
        ):
            expr = expr.value
        else:
            return None


def _stores(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST, str, str]]:
    """``(object stored on, stored value, where, how to undo it)`` for each store onto an
    object; ``where`` is the attribute (``m.forward``), or empty for an item of a container."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) or (
                isinstance(target, ast.Attribute) and not _is_dunder(target.attr)
            ):
                where = snippet(target, 40) if isinstance(target, ast.Attribute) else ""
                yield target.value, node.value, where, f"`del {snippet(target, 40)}`"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "setattr" and len(node.args) == 3 and not node.keywords:
            obj, name, value = node.args
            constant = name.value if isinstance(name, ast.Constant) else None
            if not (isinstance(constant, str) and _is_dunder(constant)):
                where = f"{snippet(obj, 40)}.{constant}" if isinstance(constant, str) else ""
                yield obj, value, where, f"`delattr({snippet(obj, 30)}, {snippet(name, 30)})`"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        index = STORE_METHODS.get(node.func.attr)
        if index is not None and len(node.args) > index:
            container = node.func.value
            yield container, node.args[index], "", f"remove it from `{snippet(container, 30)}`"


def _is_dunder(attr: str) -> bool:
    """Special methods are looked up on the type, so setting one means a class or a module
    (alive anyway), not an instance."""
    return attr.startswith("__") and attr.endswith("__")


# Python's names for a class by convention, like `self` for an instance.
_CLASS_NAMES = frozenset({"cls", "klass", "mcs", "metacls"})


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
    return bool(params) and params[0] in ("self", *_CLASS_NAMES)


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _makes_callable(value: ast.AST, local_defs: set[str]) -> bool:
    """Whether ``value`` is a new callable: a lambda, a nested ``def``, ``MethodType``,
    ``partial`` or a ``functools`` wrapper."""
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.Name):
        return value.id in local_defs
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Call):
        return _call_name(value.func) == "wraps"
    return isinstance(value, ast.Call) and _call_name(value) in _WRAPPERS


_WRAPPERS = frozenset({"MethodType", "partial", "update_wrapper"})


@dataclass(frozen=True)
class _FunctionFacts:
    """What one pass over a function tells about the objects it patches."""

    bound_methods: dict[str, str]
    """Expressions that are bound methods, mapped to the ``obj.attr`` they read: a local
    bound to ``obj.attr`` and used as a callable (called, or wrapped by ``functools.wraps``
    or ``update_wrapper``), and ``obj.attr`` itself where the function patches it with a new
    callable (read before, it is the original method)."""
    classes: frozenset[str]
    """Names that are classes: by convention (``cls``), annotated ``type``, or given a
    special method (``X.__init__ = ...``)."""
    overwritten: frozenset[int]
    """Ids of assignments that the very next statement assigns again (``m.f = a`` then
    ``m.f = b``): their value is dropped at once."""
    wrapped: dict[str, list[ast.expr]]
    """Nested functions decorated with ``functools.wraps(x)``: their ``__wrapped__`` is ``x``."""
    rewrapped: frozenset[str]
    """``m.f`` where ``m.f = wrap(m.f)``: a call given the very attribute it replaces, the
    decorator shape (``torch.compile(self.forward)``) whose result holds its argument."""


def _function_facts(function: Frame) -> _FunctionFacts:
    read: dict[str, str] = {}
    used_as_callable: set[str] = set()
    local_defs: set[str] = set()
    patched: list[tuple[ast.Attribute, ast.expr]] = []
    classes = set(_CLASS_NAMES)
    overwritten: set[int] = set()
    wrapped: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function.node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not function.node:
            local_defs.add(node.name)
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and _call_name(deco) == "wraps":
                    wrapped.setdefault(node.name, []).extend(deco.args[:1])
        elif isinstance(node, ast.arg) and node.annotation is not None:
            annotation = node.annotation
            if isinstance(annotation, ast.Subscript):
                annotation = annotation.value
            if isinstance(annotation, ast.Name) and annotation.id in ("type", "Type"):
                classes.add(node.arg)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Attribute):
                if _chain(value.value) is not None and not value.attr.startswith("__"):
                    read[target.id] = snippet(value, 40)
            elif isinstance(target, ast.Attribute):
                if _is_dunder(target.attr) and isinstance(target.value, ast.Name):
                    classes.add(target.value.id)
                patched.append((target, value))
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                used_as_callable.add(node.func.id)
            name = _call_name(node)
            originals = node.args[:1] if name == "wraps" else node.args[1:2]
            if name in ("wraps", "update_wrapper"):
                used_as_callable.update(a.id for a in originals if isinstance(a, ast.Name))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for first, second in itertools.pairwise(block):
                    if isinstance(first, ast.Assign) and isinstance(second, ast.Assign):
                        targets = [ast.dump(t) for t in first.targets]
                        if targets == [ast.dump(t) for t in second.targets]:
                            overwritten.add(id(first))
    bound = {name: source for name, source in read.items() if name in used_as_callable}
    rewrapped: set[str] = set()
    for attribute, new_value in patched:
        text = snippet(attribute, 40)
        if _makes_callable(new_value, local_defs):
            bound[text] = text
        elif isinstance(new_value, ast.Call) and any(
            snippet(arg, 40) == text for arg in new_value.args
        ):
            rewrapped.add(text)
    return _FunctionFacts(
        bound, frozenset(classes), frozenset(overwritten), wrapped, frozenset(rewrapped)
    )


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


def _holdings(
    value: ast.AST, target: str, ctx: Context, facts: Callable[[], _FunctionFacts]
) -> Iterator[_Holding]:
    """What
    ``value`` keeps alive: objects bound by ``MethodType``/``partial``, captured by a closure,
    or reached through a bound method saved in a local."""
    # In order, outermost first, so the message names the most direct holding.
    pending = [value]
    for expr in pending:
        if isinstance(expr, ast.Call) and _call_name(expr) == "MethodType" and len(expr.args) == 2:
            bound = snippet(expr.args[1], 40)
            yield _Holding(bound, f"`{snippet(expr, 50)}`, a method bound to `{bound}`")
        elif is_partial(expr):
            assert isinstance(expr, ast.Call)
            for arg in (expr.func, *expr.args, *(k.value for k in expr.keywords)):
                if _chain(arg) is not None:
                    held = snippet(arg, 40)
                    yield _Holding(held, f"a `partial` that holds `{held}`")
            pending.extend((*expr.args, *(k.value for k in expr.keywords)))
        elif isinstance(expr, ast.IfExp):  # either branch may be what is stored
            pending.extend((expr.body, expr.orelse))
        elif isinstance(expr, ast.BoolOp):
            pending.extend(expr.values)
        elif isinstance(expr, ast.Call) and _call_name(expr) == "update_wrapper":
            pending.extend(expr.args[:2])
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
            if _call_name(expr.func) == "wraps":  # functools.wraps(original)(wrapper)
                pending.extend((*expr.args, *expr.func.args[:1]))
        elif isinstance(expr, ast.Call):
            # `m.f = wrap(m.f)`: the wrapper holds the method it replaces.
            if target in facts().rewrapped and any(snippet(a, 40) == target for a in expr.args):
                what = f"`{snippet(expr, 50)}`, a wrapper around its own bound method `{target}`"
                yield _Holding(target.rsplit(".", 1)[0], what, target, True)
        elif (
            isinstance(expr, (ast.Name, ast.Attribute))
            and snippet(expr, 40) in facts().bound_methods
        ):
            name = snippet(expr, 40)
            source = facts().bound_methods[name]
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
            for original in facts().wrapped.get(snippet(expr), ()):
                method = facts().bound_methods.get(snippet(original, 40))
                if method is not None:  # `@wraps(original)`: held as `__wrapped__`
                    what = f"a {kind} whose `__wrapped__` is the bound method `{method}`"
                    yield _Holding(method.rsplit(".", 1)[0], what, method)
            for free in sorted(frees):
                if free in facts().bound_methods:
                    source = facts().bound_methods[free]
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

    def facts() -> _FunctionFacts:
        key = ("patch-facts", id(function.node))
        known = ctx.memo.get(key)
        if not isinstance(known, _FunctionFacts):
            known = ctx.memo[key] = _function_facts(function)
        return known

    me = method_self(ctx)
    for obj, value, where, undo in _stores(node):
        chain = _chain(obj)
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
                or root.id in facts().classes
                or id(node) in facts().overwritten
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
