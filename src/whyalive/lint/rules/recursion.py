"""Recursion groups of nested functions: who refers to whom, what they capture, do they escape.

A *recursion group* is a strongly connected component of "refers to by name" among the
functions one function defines (``def`` or a lambda assigned to a local): one function that
calls itself, or siblings that call each other. Each group is one cycle through closure
cells, so the 1xx rules report each group once.
"""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass

from whyalive.lint.engine import FUNCTION_NODES, Capture, Context, Frame, own_scope_nodes, snippet
from whyalive.lint.rules.shapes import bindings

__all__ = ["RecursionGroup", "escape_of", "is_scalar", "mangle", "recursion_groups", "unmangle"]

# Names that usually hold data rather than code; listed first among the captures.
_HEAVY_NAME = re.compile(
    r"tensor|state|(^|_)sd($|_)|cache|output|(^|_)outs?($|_)|grad|weight|param|buffer|"
    r"model|batch|data|array|ckpt|checkpoint|hidden|logit|result|input|self",
    re.IGNORECASE,
)
# Builtins that consume a generator expression before they return.
_CONSUMERS = frozenset(
    {"sum", "any", "all", "list", "tuple", "set", "frozenset", "sorted", "min", "max", "dict"}
)
_CONSUMER_METHODS = frozenset({"join", "extend", "update"})
# Decorators that do not hand the function to anyone else.
_SAFE_DECORATORS = frozenset({"lru_cache", "cache", "wraps"})
_LIGHT_ORDER = {"function": 0, "class": 1, "module": 2, "constant": 3}


@dataclass(frozen=True)
class RecursionGroup:
    """Nested functions of one enclosing function that reach themselves through closure cells.

    ``nodes`` are the defining statements in source order (the first is where the group is
    reported); ``escape`` says how one of them leaves the enclosing function (``None`` when
    none does, so deleting the name there is safe).
    """

    names: tuple[str, ...]
    nodes: tuple[ast.AST, ...]
    captures: tuple[Capture, ...]
    escape: str | None

    @property
    def heavy(self) -> bool:
        """Whether any capture can hold a heavy object."""
        return any(c.heavy for c in self.captures)


def _private_prefix(frame: Frame) -> str:
    """``_Owner`` for frames inside class ``Owner`` (private names get it), else ``""``."""
    scope: Frame | None = frame
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    owner = getattr(scope.node, "name", "").lstrip("_") if scope is not None else ""
    return f"_{owner}" if owner else ""


def mangle(name: str, frame: Frame) -> str:
    """``name`` as the symbol table spells it inside ``frame`` (private names of a class)."""
    if not name.startswith("__") or name.endswith("__"):
        return name
    return _private_prefix(frame) + name


def unmangle(key: str, frame: Frame) -> str:
    """A symbol table name as the source spells it: the inverse of :func:`mangle`."""
    prefix = _private_prefix(frame)
    if prefix and key.startswith(prefix + "__") and not key.endswith("__"):
        return key[len(prefix) :]
    return key


def _defined_functions(frame: Frame) -> list[tuple[str, ast.AST]]:
    found: list[tuple[str, ast.AST]] = []
    for node in own_scope_nodes(getattr(frame.node, "body", [])):
        if isinstance(node, FUNCTION_NODES):
            found.append((node.name, node))
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Lambda)
        ):
            found.append((node.targets[0].id, node))
    return found


def _scope_node(node: ast.AST) -> ast.AST:
    return node.value if isinstance(node, ast.Assign) else node


def _strong_components(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of names that reach each other (small graphs: one reach set per name)."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(edges[current])
        reach[start] = seen
    groups: list[list[str]] = []
    placed: set[str] = set()
    for name in edges:
        if name in placed or name not in reach[name]:
            continue
        group = [name, *(o for o in edges if o != name and name in reach[o] and o in reach[name])]
        placed.update(group)
        groups.append(group)
    return groups


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


def _lookup(table: symtable.SymbolTable | None, name: str) -> symtable.Symbol | None:
    if table is None:
        return None
    try:
        return table.lookup(name)
    except KeyError:
        return None


def _classify(ctx: Context, frame: Frame, key: str, name: str) -> Capture:
    """What the closure variable ``key`` (``name`` as written) of a function in ``frame`` is."""
    if key == "__class__":
        return Capture(name, "class")
    scope: Frame | None = frame
    while scope is not None and scope.kind != "module":
        if scope.kind != "class":
            symbol = _lookup(ctx.frame_table(scope), key)
            if symbol is not None and not symbol.is_free():
                if scope.self_name == name:
                    return Capture(name, "self")
                if symbol.is_parameter():
                    scalar = _scalar_parameter(scope, name)
                    return Capture(name, "constant" if scalar else "parameter")
                if symbol.is_imported():
                    return Capture(name, "module")
                kinds = _binding_kinds(ctx, scope).get(name, set())
                if len(kinds) == 1 and "local" not in kinds:
                    return Capture(name, next(iter(kinds)))
                return Capture(name, "local")
        scope = scope.parent
    return Capture(name, "local")


def _held_by_functions(ctx: Context, frame: Frame, nodes: list[ast.AST]) -> list[Capture]:
    """Defaults and caching decorators: what the functions hold besides their cells."""
    held: list[Capture] = []
    table = ctx.frame_table(frame)
    for node in nodes:
        scope = _scope_node(node)
        assert isinstance(scope, (*FUNCTION_NODES, ast.Lambda))
        args = scope.args
        for default in (*args.defaults, *args.kw_defaults):
            if default is None or isinstance(default, ast.Constant):
                continue
            if isinstance(default, ast.Name):
                symbol = _lookup(table, mangle(default.id, frame))
                if symbol is None or symbol.is_global() or not symbol.is_local():
                    continue  # a global: alive anyway
                held.append(_classify(ctx, frame, mangle(default.id, frame), default.id))
            else:
                held.append(Capture(snippet(default, 30), "default"))
        for deco in getattr(scope, "decorator_list", []):
            target = deco.func if isinstance(deco, ast.Call) else deco
            if "cache" in _decorator_name(deco):
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


def _decorator_name(deco: ast.AST) -> str:
    target = deco.func if isinstance(deco, ast.Call) else deco
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _consumed(genexp: ast.AST, parent: ast.AST | None) -> bool:
    if not isinstance(parent, ast.Call) or genexp not in parent.args:
        return False
    func = parent.func
    if isinstance(func, ast.Name):
        return func.id in _CONSUMERS
    return isinstance(func, ast.Attribute) and func.attr in _CONSUMER_METHODS


def _use_escape(node: ast.Name, parent: ast.AST | None, names: frozenset[str]) -> str | None:
    """How a read of a group member's name hands the function out (``None``: a plain call)."""
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return None
        if isinstance(parent.func, ast.Name) and parent.func.id in names:
            return None  # passed to itself or to a sibling of its group
        return f"passed to `{snippet(parent.func, 30)}`"
    if isinstance(parent, ast.keyword):
        return "passed on as a keyword argument"
    if isinstance(parent, ast.Return):
        return "returned"
    if isinstance(parent, (ast.Yield, ast.YieldFrom)):
        return "yielded"
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        target = parent.targets[0] if isinstance(parent, ast.Assign) else parent.target
        return f"stored in `{snippet(target, 30)}`"
    return f"used as a value in `{snippet(parent, 30)}`" if parent is not None else "used"


def escape_of(
    ctx: Context, frame: Frame, names: frozenset[str], members: frozenset[int]
) -> str | None:
    """How one of the functions ``names`` (statements ``members``) outlives ``frame``'s call.

    Conservative: any use other than a call (or passing a member to a member) counts, and so
    does a use inside a lambda, a nested function that itself escapes, or a generator
    expression that is not consumed on the spot.
    """
    for stmt in own_scope_nodes(getattr(frame.node, "body", [])):
        if id(stmt) in members and isinstance(stmt, FUNCTION_NODES):
            for deco in stmt.decorator_list:
                if _decorator_name(deco) not in _SAFE_DECORATORS:
                    return f"decorated with `@{snippet(deco, 30)}`"
    helpers = {name: node for name, node in _defined_functions(frame) if id(node) not in members}
    # (node, parent, reason a use here escapes whatever it is)
    stack: list[tuple[ast.AST, ast.AST | None, str | None]] = [
        (n, None, None) for n in getattr(frame.node, "body", [])
    ]
    while stack:
        node, parent, inherited = stack.pop()
        if isinstance(node, ast.Name):
            if node.id in names and isinstance(node.ctx, ast.Load):
                reason = inherited or _use_escape(node, parent, names)
                if reason is not None:
                    return reason
            continue
        if isinstance(node, (ast.Nonlocal, ast.Global)) and names.intersection(node.names):
            return f"rebound through `{type(node).__name__.lower()}`"
        reason = inherited
        if reason is None and id(node) not in members:
            if isinstance(node, ast.Lambda):
                reason = "captured by a lambda"
            elif isinstance(node, ast.GeneratorExp) and not _consumed(node, parent):
                reason = "captured by a generator expression"
            elif isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                helper = helpers.get(getattr(node, "name", ""))
                reason = f"captured by `{getattr(node, 'name', '?')}`"
                if helper is node and isinstance(node, FUNCTION_NODES):
                    key = ("escape", id(node))
                    if key not in ctx.memo:
                        ctx.memo[key] = reason  # cut recursion between helpers
                        ctx.memo[key] = escape_of(
                            ctx, frame, frozenset({node.name}), frozenset({id(node)})
                        )
                    inner = ctx.memo[key]
                    reason = None if inner is None else f"{reason}, which is {inner}"
        stack.extend((child, node, reason) for child in ast.iter_child_nodes(node))
    return None


def recursion_groups(ctx: Context, frame: Frame) -> dict[int, RecursionGroup]:
    """The recursion groups of ``frame``'s nested functions, keyed by ``id`` of the first node.

    Groups whose cycle is broken (a name deleted or rebound after its definition) are left
    out.
    """
    key = ("recursion-groups", id(frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, dict):
        return cached
    table = ctx.frame_table(frame)
    defined: dict[str, list[ast.AST]] = {}
    frees: dict[str, set[str]] = {}
    for name, node in _defined_functions(frame) if table is not None else []:
        symbol = _lookup(table, mangle(name, frame))
        child = ctx.child_table(frame, _scope_node(node))
        if symbol is None or not symbol.is_local() or child is None:
            continue
        defined.setdefault(name, []).append(node)
        frees.setdefault(name, set()).update(
            s.get_name() for s in child.get_symbols() if s.is_free()
        )
    by_key = {mangle(name, frame): name for name in defined}
    edges = {name: {by_key[k] for k in frees[name] if k in by_key} for name in defined}
    found = bindings(ctx, frame)
    groups: dict[int, RecursionGroup] = {}
    for names in _strong_components(edges):
        nodes = sorted(
            (n for name in names for n in defined[name]),
            key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
        )
        last = max(getattr(n, "lineno", 0) for n in nodes)
        if any(found.cleared_after(name, last) for name in names):
            continue
        keys = {mangle(n, frame) for n in names}
        captured = {
            k: _classify(ctx, frame, k, unmangle(k, frame))
            for name in names
            for k in frees[name]
            if k not in keys
        }
        captures = sorted({*captured.values(), *_held_by_functions(ctx, frame, nodes)}, key=_rank)
        ordered = tuple(dict.fromkeys(_name_of(n) for n in nodes))
        members = frozenset(i for n in nodes for i in (id(n), id(_scope_node(n))))
        escape = escape_of(ctx, frame, frozenset(names), members)
        groups[id(nodes[0])] = RecursionGroup(ordered, tuple(nodes), tuple(captures), escape)
    ctx.memo[key] = groups
    return groups


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Assign):
        target = node.targets[0]
        assert isinstance(target, ast.Name)
        return target.id
    return str(getattr(node, "name", "?"))
