"""5xx: caches that hold every instance they were called with."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.findings import LintFinding, Rule
from whyalive.lint.scopes import FUNCTION_NODES, Context

_CACHES = frozenset({"lru_cache", "cache"})
_NOT_INSTANCE = frozenset({"staticmethod", "classmethod"})


def _decorator_name(deco: ast.AST) -> tuple[str, str] | None:
    """``(short name, as written)`` of a decorator, looking through one call."""
    target = deco.func if isinstance(deco, ast.Call) else deco
    if isinstance(target, ast.Name):
        return target.id, target.id
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "functools"
    ):
        return target.attr, f"functools.{target.attr}"
    return None


def _check_method_cache(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, FUNCTION_NODES)
    if ctx.frame.kind != "class" or not node.decorator_list:
        return
    names = [_decorator_name(d) for d in node.decorator_list]
    if any(n is not None and n[0] in _NOT_INSTANCE for n in names):
        return
    args = [*node.args.posonlyargs, *node.args.args]
    if not args:
        return
    for deco, name in zip(node.decorator_list, names, strict=True):
        if name is not None and name[0] in _CACHES:
            yield ctx.report(
                deco,
                deco=name[1],
                cls=getattr(ctx.frame.node, "name", "?"),
                name=node.name,
                self=args[0].arg,
            )
            return


METHOD_CACHE = Rule(
    code="WAL501",
    name="method-cache",
    message=(
        "WAL501 `@{deco}` on method `{cls}.{name}` keeps every `{self}` it is called with in "
        "a cache owned by the class, so instances are never freed (flake8-bugbear B019). "
        "Cache a module-level function of the values it needs, or use "
        "`functools.cached_property`."
    ),
    node_types=FUNCTION_NODES,
    check=_check_method_cache,
    explanation="""\
`functools.lru_cache` and `functools.cache` on a method key the cache by the arguments,
`self` included. The cache belongs to the function on the class, which lives as long as the
class (usually the process), so every instance ever called, and everything it owns, stays
alive. This is not a cycle but the effect is the one whyalive reports as the
`method-cache` pattern. It is the same check as flake8-bugbear's B019: if you run both,
ignore one of them (`--extend-ignore B019` or `WAL501`).

Fix: move the cached computation to a module-level function of the values it needs,
use `functools.cached_property` for per-instance values, or build a per-instance cache in
`__init__` from a plain function (not from a bound method, which would be WAL201).""",
)

RULES: tuple[Rule, ...] = (METHOD_CACHE,)
