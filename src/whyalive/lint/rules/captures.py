"""What a recursion group keeps alive: each closure variable's kind, heavy ones first.

A capture's kind says whether it can hold a heavy object (see
:data:`whyalive.lint.findings.HEAVY_CAPTURE_KINDS`); the evidence for the light kinds comes from
:mod:`whyalive.lint.rules.weight`.
"""

from __future__ import annotations

import ast
import re

from whyalive.lint.findings import Capture, snippet
from whyalive.lint.rules.instances import light_instance
from whyalive.lint.rules.shapes import decorator_name, scope_node
from whyalive.lint.rules.weight import weigher
from whyalive.lint.scopes import (
    FUNCTION_NODES,
    FUNCTION_OR_LAMBDA,
    Context,
    Frame,
    own_scope_nodes,
)
from whyalive.lint.symbols import Scope, Symbol

__all__ = ["group_captures", "is_scalar", "lookup"]

# Names that usually hold data rather than code; listed first among the captures.
_HEAVY_NAME = re.compile(
    r"tensor|state|(^|_)sd($|_)|cache|output|(^|_)outs?($|_)|grad|weight|param|buffer|"
    r"model|batch|data|array|ckpt|checkpoint|hidden|logit|result|input|self",
    re.IGNORECASE,
)
_LIGHT_ORDER = {"function": 0, "class": 1, "module": 2, "constant": 3, "light": 4, "light-self": 5}


def _value_kind(value: ast.AST) -> str:
    if isinstance(value, ast.Lambda):
        return "function"
    return "constant" if is_scalar(value) else "local"


def _binding_kinds(ctx: Context, frame: Frame) -> dict[str, set[str]]:
    """For each name bound in ``frame``: the kinds of value its bindings give it.

    Augmented assignments keep a name's kind (``i += step`` leaves an int an int); every
    binding this walk does not understand (``with``, ``except``, walrus in a comprehension)
    leaves the name unrecorded, which :func:`_classify` reads as a data local.
    """
    key = ("binding-kinds", id(frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, dict):
        return cached
    kinds: dict[str, set[str]] = {}

    def bind(target: ast.AST, kind: str) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                kinds.setdefault(sub.id, set()).add(kind)

    for node in own_scope_nodes(getattr(frame.node, "body", [])):
        if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            kinds.setdefault(node.name, set()).add(kind)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                kinds.setdefault(name, set()).add("module")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, _value_kind(node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            bind(node.target, _value_kind(node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            counts = (
                isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "range"
            )
            bind(node.target, "constant" if counts else "local")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, "local")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            kinds.setdefault(node.name, set()).add("local")
    ctx.memo[key] = kinds
    return kinds


# Calls that return a bool, a number or a string.
_SCALAR_CALLS = frozenset(
    {
        "len",
        "int",
        "float",
        "str",
        "bool",
        "isinstance",
        "issubclass",
        "hasattr",
        "callable",
        "id",
        "hash",
        "ord",
        "chr",
        "round",
        "repr",
        "format",
    }
)
_SCALAR_TYPES = frozenset({"bool", "int", "float", "str", "complex", "None", "Literal"})


def is_scalar(value: ast.AST) -> bool:
    """Whether ``value`` is an expression whose result is a bool, number, string or ``None``.

    Literals, comparisons, ``not``, f-strings, arithmetic on those, ``len()``-like builtins
    and predicate calls (``x.is_ready()``, ``has_grad(t)``).
    """
    if isinstance(value, (ast.Constant, ast.Compare, ast.JoinedStr)):
        return True
    if isinstance(value, ast.UnaryOp):
        return isinstance(value.op, ast.Not) or is_scalar(value.operand)
    if isinstance(value, ast.BoolOp):
        return all(is_scalar(v) for v in value.values)
    if isinstance(value, ast.BinOp):
        return is_scalar(value.left) and is_scalar(value.right)
    if isinstance(value, ast.Tuple):
        return all(is_scalar(v) for v in value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in _SCALAR_CALLS or name.startswith(("is_", "has_"))
    return False


def _is_scalar_annotation(annotation: ast.AST | None) -> bool:
    if annotation is None:
        return False
    for sub in ast.walk(annotation):
        if isinstance(sub, ast.Name) and sub.id not in (*_SCALAR_TYPES, "Optional"):
            return False
        if isinstance(sub, ast.Attribute) and sub.attr not in ("Optional", "Literal"):
            return False
        if (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and not _SCALAR_TYPES.issuperset(sub.value.replace("|", " ").split())
        ):
            return False  # a string annotation: only plain scalar names are read
    return True


def _scalar_parameter(scope: Frame, name: str) -> bool:
    """A parameter annotated as a scalar (``flag: bool``) or defaulting to one (``n=3``)."""
    node = scope.node
    if not isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
        return False
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: dict[str, ast.AST] = dict(
        zip(
            [a.arg for a in positional[len(positional) - len(args.defaults) :]],
            args.defaults,
            strict=True,
        )
    )
    defaults.update(
        (a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    )
    for arg in (*positional, *args.kwonlyargs):
        if arg.arg == name:
            if _is_scalar_annotation(arg.annotation):
                return True
            default = defaults.get(name)
            return isinstance(default, ast.Constant) and default.value is not None
    return False


def lookup(table: Scope | None, name: str) -> Symbol | None:
    return table.lookup(name) if table is not None else None


def _light(ctx: Context, scope: Frame, name: str) -> bool:
    """Whether every value ``name`` gets in ``scope`` is light (:mod:`.weight`)."""
    found = weigher(ctx)
    node = scope.node
    return (
        isinstance(node, FUNCTION_OR_LAMBDA)
        and found.binds(node, name)
        and found.light_name(node, name, frozenset())
    )


def _classify(ctx: Context, frame: Frame, name: str) -> Capture:
    """What the closure variable ``name`` of a function in ``frame`` is."""
    if name == "__class__":
        return Capture(name, "class")
    scope: Frame | None = frame
    while scope is not None and scope.kind != "module":
        if scope.kind != "class":
            symbol = lookup(ctx.frame_table(scope), name)
            if symbol is not None and not symbol.is_free():
                if scope.self_name == name:
                    owner = scope.parent.node if scope.parent is not None else None
                    light = isinstance(owner, ast.ClassDef) and light_instance(weigher(ctx), owner)
                    return Capture(name, "light-self" if light else "self")
                if symbol.is_parameter():
                    if _scalar_parameter(scope, name):
                        return Capture(name, "constant")
                    return Capture(name, "light" if _light(ctx, scope, name) else "parameter")
                if symbol.is_imported():
                    return Capture(name, "module")
                kinds = _binding_kinds(ctx, scope).get(name, set())
                if len(kinds) == 1 and "local" not in kinds:
                    return Capture(name, next(iter(kinds)))
                return Capture(name, "light" if _light(ctx, scope, name) else "local")
        scope = scope.parent
    return Capture(name, "local")


def _held_by_functions(ctx: Context, frame: Frame, nodes: list[ast.AST]) -> list[Capture]:
    """Defaults and caching decorators: what the functions hold besides their cells."""
    held: list[Capture] = []
    table = ctx.frame_table(frame)
    for node in nodes:
        scope = scope_node(node)
        assert isinstance(scope, (*FUNCTION_NODES, ast.Lambda))
        args = scope.args
        for default in (*args.defaults, *args.kw_defaults):
            if default is None or isinstance(default, ast.Constant):
                continue
            if isinstance(default, ast.Name):
                symbol = lookup(table, default.id)
                if symbol is None or symbol.is_global() or not symbol.is_local():
                    continue  # a global: alive anyway
                held.append(_classify(ctx, frame, default.id))
            else:
                held.append(Capture(snippet(default, 30), "default"))
        for deco in getattr(scope, "decorator_list", []):
            target = deco.func if isinstance(deco, ast.Call) else deco
            if "cache" in decorator_name(deco):
                held.append(Capture(f"@{snippet(target, 30)}", "cache"))
    return held


def _rank(capture: Capture) -> tuple[int, int, int, str]:
    looks_heavy = bool(_HEAVY_NAME.search(capture.name))
    return (
        0 if capture.heavy else 1,
        0 if looks_heavy else 1,
        _LIGHT_ORDER.get(capture.kind, -1),
        capture.name,
    )


def group_captures(
    ctx: Context, frame: Frame, cells: set[str], nodes: list[ast.AST]
) -> tuple[Capture, ...]:
    """Everything a group's cycle keeps: its closure variables ``cells`` and what
    its functions (``nodes``) hold themselves, heavy captures first."""
    captured = {_classify(ctx, frame, name) for name in cells}
    return tuple(sorted({*captured, *_held_by_functions(ctx, frame, nodes)}, key=_rank))
