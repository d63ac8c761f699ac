"""5xx: caches that hold every instance they were called with."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from whyalive.lint.codetext import CodeText
from whyalive.lint.findings import Advice, LintFinding
from whyalive.lint.rules.annotations import light_annotation
from whyalive.lint.rules.instances import is_module_class, light_instance
from whyalive.lint.rules.weight import Weigher, weigher
from whyalive.lint.scopes import FUNCTION_NODES, Context, Rule, own_scope_nodes, walk_nodes

_CACHES = frozenset({"lru_cache", "cache"})
_NOT_INSTANCE = frozenset({"staticmethod", "classmethod"})


def _may_cache(text: CodeText) -> bool:
    """A cache decorator on an indented ``def`` (a method's decorator line is indented and
    holds the decorator's name, unless it opens a bracket it does not close on the line)."""
    return text.has_word(*_CACHES) and any(
        line.count("(") != line.count(")") or any(_word_in(w, line) for w in _CACHES)
        for line in text.indented_decorators()
    )


def _word_in(word: str, line: str) -> bool:
    return re.search(r"(?<!\w)" + word + r"(?!\w)", line) is not None


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


def _maxsize(deco: ast.AST, name: str) -> int | None:
    """How many entries the cache keeps: ``None`` for ``@cache``/``maxsize=None`` (no
    bound), 128 for a bare ``@lru_cache`` (its default), else the literal given."""
    if name == "cache":
        return None
    if not isinstance(deco, ast.Call):
        return 128
    given = [*deco.args[:1], *(k.value for k in deco.keywords if k.arg == "maxsize")]
    if not given:
        return 128
    value = given[0].value if isinstance(given[0], ast.Constant) else -1
    if value is None:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else -1


def _kept(bound: int | None, me: str) -> dict[str, str]:
    """What the message says the cache keeps, and for how long."""
    if bound is None or bound < 0:
        return {"kept": f"every `{me}` it is called with", "freed": "instances are never freed"}
    if bound == 1:
        return {
            "kept": f"the last `{me}` it was called with",
            "freed": "it stays alive until the method is called on another instance",
        }
    return {
        "kept": f"the `{me}`, arguments and result of its last {bound} calls",
        "freed": f"they stay alive until {bound} newer calls push them out",
    }


def _advice(method: ast.FunctionDef | ast.AsyncFunctionDef, me: str) -> tuple[Advice, ...]:
    """Fixes that keep every call ``obj.method(...)`` as it is."""
    args = method.args
    only_self = len(args.posonlyargs) + len(args.args) == 1 and not (
        args.vararg or args.kwarg or args.kwonlyargs
    )
    memo = (
        f"an attribute of `{me}` set on the first call and returned after"
        if only_self
        else f"a dict on `{me}` keyed by the arguments, filled on the first call"
    )
    instance = Advice("instance-memo", f"keep the results on the instance instead: {memo}")
    reads_self = any(
        isinstance(n, ast.Name) and n.id == me and isinstance(n.ctx, ast.Load)
        for stmt in method.body
        for n in walk_nodes(stmt)
    )
    if reads_self:
        return (instance,)
    return (
        instance,
        Advice(
            "module-function",
            f"cache a module-level function of the arguments instead (the method does not "
            f"read `{me}`) and call it from the method",
        ),
    )


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
            bound = _maxsize(deco, name[0])
            fields = {"deco": name[1], "cls": cls.name, "name": node.name, "self": args[0].arg}
            fields.update(_kept(bound, args[0].arg))
            assert ctx.rule is not None
            why = _why_light(ctx, cls, node, bound)
            if (why is not None) == (ctx.rule is LIGHT_METHOD_CACHE):
                advice = () if why is not None else _advice(node, args[0].arg)
                yield ctx.report(deco, fields, why=why or "", advice=advice)
            return


def _why_light(
    ctx: Context,
    cls: ast.ClassDef,
    method: ast.FunctionDef | ast.AsyncFunctionDef,
    bound: int | None,
) -> str | None:
    """Why all the cache keeps is light (``None`` when it may not be): instances
    (:mod:`.instances`), the other arguments (light annotations or literal defaults) and the
    results (a light return annotation, or every ``return`` value light). A cache of one
    entry on a method that takes nothing but ``self`` keeps one instance, the one used last:
    light unless the class is an ``nn.Module``."""
    found = weigher(ctx)
    if not _light_result(found, method):
        return None
    only_self = len(method.args.args) + len(method.args.posonlyargs) == 1 and not (
        method.args.vararg or method.args.kwarg or method.args.kwonlyargs
    )
    if bound == 1 and only_self and not is_module_class(found, cls):
        return (
            f"the method takes nothing but `{method.args.args[0].arg}`, `{cls.name}` is not a "
            "module with parameters, and the result is light"
        )
    if not light_instance(found, cls):
        return None
    me = frozenset({method.args.args[0].arg})
    scope = found.scope(method)
    params = [a.arg for a in (*method.args.posonlyargs, *method.args.args[1:])]
    params += [a.arg for a in (*method.args.kwonlyargs, method.args.vararg, method.args.kwarg) if a]
    if not all(found.light_name(method, p, me) for p in params if p in scope.bound):
        return None
    return (
        f"`{cls.name}` stores only strings, numbers, flags and code on its instances, and "
        "the arguments and results are light too"
    )


def _light_result(found: Weigher, method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if light_annotation(method.returns):
        return True
    me = frozenset({method.args.args[0].arg}) if method.args.args else frozenset()
    returns = [n for n in own_scope_nodes(method.body) if isinstance(n, ast.Return)]
    return all(r.value is None or found.light(r.value, method, me) for r in returns)


METHOD_CACHE = Rule(
    code="WAL501",
    name="method-cache",
    message=(
        "WAL501 `@{deco}` on method `{cls}.{name}` keeps {kept} in a cache owned by the "
        "class, so {freed} (flake8-bugbear B019). {advice}"
    ),
    node_types=FUNCTION_NODES,
    check=_check_method_cache,
    offers=("instance-memo", "module-function"),
    may_report=_may_cache,
    explanation="""\
`functools.lru_cache` and `functools.cache` on a method key the cache by the arguments,
`self` included. The cache belongs to the function on the class, which lives as long as the
class (usually the process), so every instance ever called, and everything it owns, stays
alive. This is not a cycle but the effect is the one whyalive reports as the
`method-cache` pattern. It is the same check as flake8-bugbear's B019: if you run both,
ignore one of them (`--extend-ignore B019` or `WAL501`).

`lru_cache(maxsize=N)` keeps the last N instances rather than all of them; the message says
which.

Fix, keeping every call `obj.method(...)` as it is: keep the results on the instance (an
attribute set on the first call, or a dict on `self` keyed by the arguments), or, when the
result depends only on the arguments, cache a module-level function of them and call it
from the method. (`functools.cached_property` is no fix for a method: callers would have
to read `obj.method` instead of calling it.)""",
)

LIGHT_METHOD_CACHE = Rule(
    code="WAL905",
    name="method-cache-holding-nothing-heavy",
    message=("WAL905 `@{deco}` on method `{cls}.{name}` keeps {kept}, but nothing heavy: {why}."),
    node_types=FUNCTION_NODES,
    check=_check_method_cache,
    default_enabled=False,
    may_report=_may_cache,
    explanation="""\
A WAL501 method cache where everything the cache keeps is light: the instances (their class
stores only strings, numbers, flags, `None`, code and loggers on `self`, see WAL904), the
other arguments (annotated `str`, `int`, `bool`, `list[str]`... or defaulting to a literal)
and the results (a light return annotation, or every `return` value built from light
parts); or a cache of one entry (`maxsize=1`) on a method that takes nothing but `self` and
returns something light, on a class that is not an `nn.Module`. The
instances still live as long as the class. Off by default; select it with
`--select WAL905` (or `WAL9`). The fixes are WAL501's.""",
)

RULES: tuple[Rule, ...] = (METHOD_CACHE,)
OPT_IN_RULES: tuple[Rule, ...] = (LIGHT_METHOD_CACHE,)
