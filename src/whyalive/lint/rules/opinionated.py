"""9xx: opinionated rules, off by default (select them with ``--select WAL9``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.findings import Advice, LintFinding, snippet
from whyalive.lint.rules.annotations import last_name
from whyalive.lint.rules.autograd import is_hook_registrar, may_register_hook
from whyalive.lint.rules.object_stores import may_store_closure
from whyalive.lint.rules.shapes import (
    closure_frees,
    enclosing_function,
    held_values,
    method_self,
    root_name,
    store_sites,
)
from whyalive.lint.rules.weight import weigher
from whyalive.lint.scopes import FUNCTION_OR_LAMBDA, Context, Rule


def _check_any_closure_on_self(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    sites = [
        (where, what)
        for where, what in store_sites(node)
        if isinstance(node, ast.Call) or not isinstance(where, ast.Name)
    ]
    owner = method_self(ctx) if sites else None
    if owner is None:
        return
    for where, what in sites:
        if root_name(where) != owner.name:
            continue
        for held in held_values(what):
            found = closure_frees(held, ctx)
            # Closures that capture self are WAL202's, on by default.
            if found is not None and owner.name not in found[1]:
                advice = (
                    Advice(
                        "method",
                        f"prefer a method of the class (and `weakref.ref({owner.name})` inside "
                        f"the function if it ever needs `{owner.name}`)",
                    ),
                )
                yield ctx.report(
                    node, stmt=snippet(node), kind=found[0], self=owner.name, advice=advice
                )
                return


ANY_CLOSURE_ON_SELF = Rule(
    code="WAL901",
    name="closure-on-self",
    message=(
        "WAL901 `{stmt}` stores a {kind} on `{self}`; it makes no cycle today, but one use "
        "of `{self}` inside it will. {advice}"
    ),
    node_types=(ast.Assign, ast.AnnAssign, ast.Call),
    check=_check_any_closure_on_self,
    offers=("method",),
    may_report=may_store_closure,
    default_enabled=False,
    explanation="""\
Any lambda or nested function stored on `self`, even one that does not capture `self`.
Closures stored on instances tend to grow a reference to the instance later (WAL202), and
they capture the enclosing function's locals, which then live as long as the instance.
Off by default; select it with `--select WAL901` (or `WAL9`).""",
)


def _weak_reference(ctx: Context, name: str) -> bool:
    """Whether every binding of ``name`` in the function around is a weak reference
    (``weakref.ref(x)``, ``WeakMethod``, ``proxy``): capturing it keeps nothing alive."""
    function = enclosing_function(ctx)
    if function is None or not isinstance(function.node, FUNCTION_OR_LAMBDA):
        return False
    bound = weigher(ctx).scope(function.node).bound.get(name, [])
    return bool(bound) and all(
        isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Call)
        and last_name(stmt.value.func) in ("ref", "WeakMethod", "proxy")
        for stmt in bound
    )


def _check_any_hook_closure(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if not isinstance(func, ast.Attribute) or not is_hook_registrar(func.attr) or not node.args:
        return
    owner = root_name(func.value)
    for held in held_values(node.args[0]):
        found = closure_frees(held, ctx)
        # Hooks that capture the object they are registered on are WAL401's.
        if found is None or owner in found[1]:
            continue
        strong = sorted(n for n in found[1] if not _weak_reference(ctx, n))
        if strong:
            captured = ", ".join(f"`{n}`" for n in strong[:4])
            advice = (
                Advice(
                    "weak-ref",
                    "capture a `weakref.ref` to what it needs (or take it from the hook's "
                    "arguments when they carry it)",
                ),
            )
            yield ctx.report(
                node, call=snippet(node), kind=found[0], captured=captured, advice=advice
            )
            return


HOOK_CLOSURE = Rule(
    code="WAL902",
    name="hook-closure",
    message=(
        "WAL902 `{call}` registers a {kind} that captures {captured}; they live as long as "
        "the hook. {advice}"
    ),
    node_types=(ast.Call,),
    check=_check_any_hook_closure,
    offers=("weak-ref",),
    may_report=may_register_hook,
    default_enabled=False,
    explanation="""\
Any closure registered as a hook keeps what it captures alive as long as the hook is
registered, which for tensor hooks is as long as the autograd graph. Not a cycle unless the
captured objects reach the hook's owner (WAL401 catches the direct case). Off by default.""",
)

RULES: tuple[Rule, ...] = (ANY_CLOSURE_ON_SELF, HOOK_CLOSURE)
