"""5xx: caches that hold every instance they were called with."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.findings import LintFinding, Rule
from whyalive.lint.rules.annotations import light_annotation
from whyalive.lint.rules.instances import light_instance
from whyalive.lint.rules.weight import weigher
from whyalive.lint.scopes import FUNCTION_NODES, Context, own_scope_nodes

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
            cls = ctx.frame.node
            assert isinstance(cls, ast.ClassDef)
            fields = {"deco": name[1], "cls": cls.name, "name": node.name, "self": args[0].arg}
            assert ctx.rule is not None
            if _caches_only_light(ctx, cls, node) == (ctx.rule is LIGHT_METHOD_CACHE):
                yield ctx.report(deco, fields)
            return


def _caches_only_light(
    ctx: Context, cls: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef
) -> bool:
    """Whether all the cache keeps is light: instances (:mod:`.instances`), the other
    arguments (light annotations or literal defaults) and the results (a light return
    annotation, or every ``return`` value light)."""
    found = weigher(ctx)
    if not light_instance(found, cls):
        return False
    me = frozenset({method.args.args[0].arg})
    scope = found.scope(method)
    params = [a.arg for a in (*method.args.posonlyargs, *method.args.args[1:])]
    params += [a.arg for a in (*method.args.kwonlyargs, method.args.vararg, method.args.kwarg) if a]
    if not all(found.light_name(method, p, me) for p in params if p in scope.bound):
        return False
    if light_annotation(method.returns):
        return True
    returns = [n for n in own_scope_nodes(method.body) if isinstance(n, ast.Return)]
    return all(r.value is None or found.light(r.value, method, me) for r in returns)


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

LIGHT_METHOD_CACHE = Rule(
    code="WAL905",
    name="method-cache-holding-nothing-heavy",
    message=(
        "WAL905 `@{deco}` on method `{cls}.{name}` keeps every `{self}` it is called with, "
        "but `{cls}` stores only strings, numbers, flags and code on its instances, and the "
        "arguments and results are light too."
    ),
    node_types=FUNCTION_NODES,
    check=_check_method_cache,
    default_enabled=False,
    explanation="""\
A WAL501 method cache where everything the cache keeps is light: the instances (their class
stores only strings, numbers, flags, `None`, code and loggers on `self`, see WAL904), the
other arguments (annotated `str`, `int`, `bool`, `list[str]`... or defaulting to a literal)
and the results (a light return annotation, or every `return` value built from light
parts). The instances still live as long as the class. Off by default; select it with
`--select WAL905` (or `WAL9`). The fixes are WAL501's.""",
)

RULES: tuple[Rule, ...] = (METHOD_CACHE,)
OPT_IN_RULES: tuple[Rule, ...] = (LIGHT_METHOD_CACHE,)
