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
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from whyalive.lint.findings import Advice, snippet
from whyalive.lint.rules.object_stores import (
    MAY_HOLD,
    may_store_on_object,
    object_stores,
    patch_advice,
)
from whyalive.lint.rules.patch_facts import (
    MODULE_METHODS,
    FileFacts,
    FunctionFacts,
    arguments_deep,
    call_name,
    file_facts,
    function_facts,
    is_class_name,
    object_chain,
    object_text,
)
from whyalive.lint.rules.proxies import closure_takes_proxy, function_takes_proxy
from whyalive.lint.rules.shapes import (
    MethodSelf,
    closure_frees,
    decorator_name,
    enclosing_function,
    is_partial,
    method_self,
    released_in_finally,
)
from whyalive.lint.scopes import FUNCTION_NODES, Context, Frame

__all__ = ["Patch", "patch_of"]


@dataclass(frozen=True)
class Patch:
    """A store that puts on ``obj`` a callable that holds ``obj``."""

    obj: str
    what: str
    advice: tuple[Advice, ...]
    owner: MethodSelf | None
    """The enclosing method's ``self`` when ``obj`` is it (its class may prove it light)."""


def _method_for_a_class(expr: ast.AST, ctx: Context) -> bool:
    """A lambda or nested function whose first parameter is ``self``/``cls``: written to be
    stored on a class, where it does not bind the class's instances."""
    if isinstance(expr, ast.Lambda):
        params = [a.arg for a in (*expr.args.posonlyargs, *expr.args.args)]
    elif isinstance(expr, ast.Name):
        tables = ctx.local_def_tables(expr.id)
        function = tables[0] if tables else None
        params = list(function.parameters) if function is not None else []
    else:
        return False
    return bool(params) and (params[0] == "self" or is_class_name(params[0]))


class _Holding(NamedTuple):
    """An object a stored value keeps alive, and how (words for the message)."""

    obj: str
    what: str
    method: str | None = None
    """The bound method (``m.forward``) through which it holds ``obj``, if any."""
    captured: bool = False
    """Held as a closure variable (WAL202's when the object is the method's ``self``)."""
    kind: str = "binds"
    """``binds`` (``MethodType``, ``partial``), ``captures`` (a closure over it),
    ``calls-saved`` (a closure calling its saved bound method), ``saved`` (the bound method
    itself) or ``rewrap`` (a wrapper around it), which decides the fixes offered."""
    proxy_safe: bool = False
    """The code that receives ``obj`` uses it through attributes alone (:mod:`.proxies`)."""


class _Facts:
    """The file's and the function's facts, each computed on first use and kept in the memo."""

    def __init__(self, ctx: Context, function: Frame, me: MethodSelf | None) -> None:
        self._ctx = ctx
        self._function = function
        self._me = me

    @cached_property
    def file(self) -> FileFacts:
        key = ("patch-file-facts", 0)
        known = self._ctx.memo.get(key)
        if not isinstance(known, FileFacts):
            known = self._ctx.memo[key] = file_facts(self._ctx.frames[0].node)
        return known

    def is_method(self, owner: str, attr: str) -> bool:
        """Whether ``owner.attr`` reads a method: a plain method of the enclosing class on
        ``self``, or a method name of the file."""
        me = self._me
        if me is not None and owner == me.name:  # the class says; no need to read the file
            return attr in me.methods or attr in MODULE_METHODS
        return attr in self.file.method_names

    def bound_method(self, text: str, owners: set[str]) -> str | None:
        """The ``obj.attr`` that the expression ``text`` is the bound method of, for ``obj``
        one of ``owners``, or ``None``."""
        return self.function.bound_method(text, owners, self.is_method)

    @cached_property
    def function(self) -> FunctionFacts:
        key = ("patch-facts", id(self._function.node))
        known = self._ctx.memo.get(key)
        if not isinstance(known, FunctionFacts):
            known = self._ctx.memo[key] = function_facts(self._function.node, lambda: self.file)
        return known


def _holdings(
    value: ast.AST,
    target: str,
    owners: set[str],
    self_name: str | None,
    ctx: Context,
    facts: _Facts,
) -> Iterator[_Holding]:
    """What ``value`` keeps alive: objects bound by ``MethodType``/``partial``, captured by a
    closure, or reached through a bound method of theirs (saved in a local or an attribute,
    or wrapped)."""
    self_rooted = self_name is not None and self_name in owners
    # In order, outermost first, so the message names the most direct holding.
    pending = [value]
    for expr in pending:
        if isinstance(expr, ast.Call) and call_name(expr) == "MethodType" and len(expr.args) == 2:
            bound = object_text(expr.args[1])
            what = f"`{snippet(expr, 50)}`, a method bound to `{bound}`"
            yield _Holding(bound, what, proxy_safe=function_takes_proxy(ctx, expr.args[0], 0))
        elif is_partial(expr):
            assert isinstance(expr, ast.Call)
            given: list[tuple[int | None, str | None, ast.expr]] = [
                (i - 1, None, a) for i, a in enumerate(expr.args)
            ]
            given += [(None, k.arg, k.value) for k in expr.keywords]
            for index, keyword, arg in given:
                if object_chain(arg) is not None:
                    held = object_text(arg)
                    safe = bool(expr.args) and (index is None or index >= 0)
                    safe = safe and function_takes_proxy(ctx, expr.args[0], index, keyword)
                    yield _Holding(held, f"a `partial` that holds `{held}`", proxy_safe=safe)
            pending.extend((*expr.args, *(k.value for k in expr.keywords)))
        elif isinstance(expr, ast.NamedExpr):
            pending.append(expr.value)
        elif isinstance(expr, ast.IfExp):  # either branch may be what is stored
            pending.extend((expr.body, expr.orelse))
        elif isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            pending.extend(expr.elts)
        elif isinstance(expr, (ast.Dict, ast.BoolOp)):  # a dict's values; `a or b`
            pending.extend(expr.values)
        elif isinstance(expr, ast.Call) and call_name(expr) == "update_wrapper":
            pending.extend(expr.args[:2])
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
            if call_name(expr.func) == "wraps":  # functools.wraps(original)(wrapper)
                pending.extend((*expr.args, *expr.func.args[:1]))
        elif isinstance(expr, ast.Call):
            # `m.f = wrap(m.f)`: the wrapper holds the method it replaces.
            arguments = arguments_deep(expr) if expr is value and target else []
            # An alias of the method (`orig = m.f`, then `m.f = wrap(orig)`) spells `m.f`
            # a second time in the function: without that, no table is needed.
            through_alias = (
                not self_rooted
                and _spelled_twice(ctx, target)
                and any(_may_be_alias(ctx, a, reads=target) for a in arguments)
            )
            rewrap = target in arguments or (through_alias and target in facts.function.rewrapped)
            if rewrap and _is_method_text(target, facts):
                yield _rewrap(snippet(expr, 50), target)
        elif isinstance(expr, ast.Attribute):
            # `self.a = self.m` is WAL201's; another object's attribute needs evidence.
            owner = object_text(expr.value)
            if owner not in owners or owner == self_name:
                continue
            if expr.attr in facts.file.saved_methods:
                what = f"`{snippet(expr, 40)}`, where this file saves a bound method of `{owner}`"
                yield _Holding(owner, what, kind="saved")
            elif expr.attr in facts.file.method_names:
                text = object_text(expr)
                yield _Holding(owner, f"its own bound method `{text}`", text, kind="saved")
            elif (source := facts.bound_method(object_text(expr), owners)) is not None:
                yield _saved_method(object_text(expr), source)
        elif isinstance(expr, ast.Name) and _is_parameter(ctx, expr.id):
            continue  # an argument: neither a nested function nor a saved method
        else:
            found = closure_frees(expr, ctx)
            if found is None:
                # A local bound to `self.m` is WAL201's business (rare); others need evidence.
                if (
                    isinstance(expr, ast.Name)
                    and not self_rooted
                    and _may_be_alias(ctx, expr.id, target)
                ):
                    source = facts.bound_method(expr.id, owners)
                    if source is not None:
                        yield _saved_method(expr.id, source)
                    elif target in facts.function.wrappers.get(expr.id, ()) and (
                        _is_method_text(target, facts)
                    ):
                        yield _rewrap(expr.id, target)
                continue
            if _method_for_a_class(expr, ctx):
                continue
            kind, frees = found
            for original in facts.function.wrapped.get(object_text(expr), ()):
                method = facts.bound_method(object_text(original), owners)
                if method is not None:  # `@wraps(original)`: held as `__wrapped__`
                    what = f"a {kind} whose `__wrapped__` is the bound method `{method}`"
                    yield _Holding(method.rsplit(".", 1)[0], what, method, kind="calls-saved")
            for free in sorted(frees):
                saved = facts.bound_method(free, owners) if _may_be_alias(ctx, free) else None
                if saved is not None:
                    what = f"a {kind} that calls `{free}` (the bound method `{saved}`)"
                    yield _Holding(saved.rsplit(".", 1)[0], what, kind="calls-saved")
                else:
                    yield _Holding(
                        free,
                        f"a {kind} that captures `{free}`",
                        captured=True,
                        kind="captures",
                        proxy_safe=closure_takes_proxy(ctx, expr, free),
                    )


_KIND_ORDER = ("binds", "captures", "calls-saved", "rewrap", "saved")


def _kind_rank(holding: _Holding) -> int:
    return _KIND_ORDER.index(holding.kind)


def _is_method_text(dotted: str, facts: _Facts) -> bool:
    owner, attr = dotted.rsplit(".", 1)
    return facts.is_method(owner, attr)


def _rewrap(wrapper: str, target: str) -> _Holding:
    """``m.f = wrap(m.f)`` with ``f`` a method: the wrapper holds ``m.f``, bound to ``m``."""
    what = f"`{wrapper}`, a wrapper around its own bound method `{target}`"
    return _Holding(target.rsplit(".", 1)[0], what, target, kind="rewrap")


def _saved_method(name: str, source: str) -> _Holding:
    what = (
        f"`{name}`, the bound method `{source}`"
        if name != source
        else f"its own bound method `{source}`, read before `{source}` is patched"
    )
    return _Holding(source.rsplit(".", 1)[0], what, source, kind="saved")


def _is_parameter(ctx: Context, name: str) -> bool:
    """Whether ``name`` is a parameter of the innermost function (read from its signature,
    without building the file's symbol table)."""
    node = ctx.frame.node
    if not isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
        return False
    args = node.args
    every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
    return any(a is not None and a.arg == name for a in every)


def _spelled_twice(ctx: Context, text: str) -> bool:
    """Whether ``text`` occurs at least twice in the source of the function around."""
    function = enclosing_function(ctx)
    if function is None or not text:
        return False
    key = ("function-source", id(function.node))
    source = ctx.memo.get(key)
    if not isinstance(source, str):
        lines = ctx.memo.get(("lines", 0))
        if not isinstance(lines, list):
            lines = ctx.memo[("lines", 0)] = ctx.source.splitlines()
        node = function.node
        first, last = getattr(node, "lineno", 1), getattr(node, "end_lineno", None)
        source = ctx.memo[key] = "\n".join(lines[first - 1 : last])
    return source.count(text) >= 2


def _may_be_alias(ctx: Context, name: str, target: str = "", reads: str = "") -> bool:
    """Whether ``name`` may be a local that an assignment bound to another object's method
    (asked before the function's facts are computed): assigned here or in a function around,
    from an attribute (``original = m.forward``), a call given ``target`` (``new =
    wrap(m.forward)``) or by a binding other than ``=`` (a loop over pairs); with ``reads``,
    only from that very attribute."""
    scope = ctx.frame_table(ctx.frame)
    symbol = scope.lookup(name) if scope is not None else None
    if symbol is None or not (symbol.is_assigned() or symbol.is_free()):
        return False
    while scope is not None and name in scope.free:
        scope = scope.parent
    values = scope.values.get(name) if scope is not None else None
    if values is None:
        return True  # bound where these tables were not built: ask the function's facts
    return any(
        value is None
        or (isinstance(value, ast.Attribute) and (not reads or object_text(value) == reads))
        or (target and isinstance(value, ast.Call) and target in arguments_deep(value))
        for value in values
    )


def _local_root(ctx: Context, function: Frame, name: str) -> bool:
    """Whether ``name`` is a parameter or local of the function (or of one around it): an
    object that can die, unlike a module global, an import or a class."""
    table = ctx.frame_table(function)
    symbol = table.lookup(name) if table is not None else None
    if symbol is None:
        return False
    if symbol.is_global() or symbol.is_imported():
        return False
    node = function.node
    decorators = getattr(node, "decorator_list", [])
    if any(decorator_name(d) == "classmethod" for d in decorators):
        params = [*node.args.posonlyargs, *node.args.args]  # type: ignore[attr-defined]
        return not (params and params[0].arg == name)  # the class itself
    return True


def patch_of(node: ast.AST, ctx: Context) -> Patch | None:
    """The first store in ``node`` that puts on an object a callable holding that object,
    computed once per node (WAL204 and WAL904 both ask)."""
    if not may_store_on_object(node):
        return None
    key = ("patches", id(node))
    found = ctx.memo.get(key)
    if not isinstance(found, tuple):
        found = ctx.memo[key] = tuple(itertools.islice(_find_patches(node, ctx), 1))
    return found[0] if found else None


def _find_patches(node: ast.AST, ctx: Context) -> Iterator[Patch]:
    stores = [
        (obj, value, where, chain)
        for obj, value, where in object_stores(node)
        if isinstance(value, MAY_HOLD) and (chain := object_chain(obj)) is not None
    ]
    function = enclosing_function(ctx) if stores else None
    if function is None:
        return
    me = method_self(ctx)
    facts = _Facts(ctx, function, me)
    for obj, value, where, chain in stores:
        owners = {object_text(part) for part in chain}
        holdings = list(_holdings(value, where, owners, me.name if me else None, ctx, facts))
        for holding in holdings:
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
                or root.id in facts.function.classes
                or is_class_name(root.id)
                or id(node) in facts.function.overwritten
                or not _local_root(ctx, function, root.id)
            ):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and released_in_finally(
                ctx, node.targets[0] if isinstance(node, ast.Assign) else node.target, node.lineno
            ):
                continue
            own = is_self and method in own_methods
            # A closure that captures the object and calls its saved method is fixed as the
            # second: a weak proxy for the first would leave the bound method.
            these = [h for h in holdings if h.obj == held]
            worst = max(these, key=_kind_rank)
            proxy = all(h.proxy_safe for h in these)
            advice = patch_advice(worst.kind, held, worst.method, node, obj, where, own, proxy)
            yield Patch(held, what, advice, me if is_self else None)
