"""Shapes of code that several rule families look for: stores, closures, bound methods."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from whyalive.lint.scopes import FUNCTION_NODES, Context, Frame, own_scope_nodes

# Container methods that keep their argument: (method name, index of the kept argument).
STORE_METHODS: dict[str, int] = {
    "append": 0,
    "appendleft": 0,
    "add": 0,
    "extend": 0,
    "put": 0,
    "put_nowait": 0,
    "insert": 1,
    "setdefault": 1,
}


def is_registrar(attr: str) -> bool:
    """Whether a method named ``attr`` registers a callback (``register_*``, ``add_*_hook``)."""
    name = attr.lstrip("_").lower()
    if name.startswith("register") or name in ("subscribe", "add_done_callback"):
        return True
    return name.startswith("add_") and any(
        word in name for word in ("hook", "callback", "listener", "handler", "observer")
    )


def keeps_argument(callee: str) -> bool:
    """Whether a call of this name keeps what it is given: a container method of
    :data:`STORE_METHODS`, ``setattr`` or a registrar (the rules' tests on the text)."""
    return callee in STORE_METHODS or callee == "setattr" or is_registrar(callee)


def root_name(expr: ast.AST) -> str | None:
    """The variable an attribute/subscript chain starts from: ``self`` for ``self.a[0].b``."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def is_partial(call: ast.AST) -> bool:
    """Whether ``call`` is ``functools.partial(...)`` (or an imported ``partial(...)``)."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "partial") or (
        isinstance(func, ast.Attribute) and func.attr == "partial"
    )


def held_values(value: ast.AST) -> Iterator[ast.AST]:
    """Expressions that storing ``value`` keeps alive directly (displays and partials opened)."""
    stack = [value]
    while stack:
        expr = stack.pop()
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            stack.extend(expr.elts)
        elif isinstance(expr, ast.Dict):
            stack.extend(expr.values)
        elif isinstance(expr, ast.Starred):
            stack.append(expr.value)
        elif is_partial(expr):
            assert isinstance(expr, ast.Call)
            stack.extend(expr.args)
            stack.extend(k.value for k in expr.keywords)
        else:
            yield expr


def store_sites(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """``(where, what)`` pairs for an assignment or a container call that stores a value."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if not isinstance(target, (ast.Tuple, ast.List)):
                yield target, node.value
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        if node.value is not None:
            yield node.target, node.value
    elif isinstance(node, ast.NamedExpr):
        yield node.target, node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        index = STORE_METHODS.get(node.func.attr)
        if index is not None and len(node.args) > index:
            yield node.func.value, node.args[index]


@dataclass(frozen=True)
class MethodSelf:
    """The instance parameter of the method that encloses the current node."""

    name: str
    method: Frame
    methods: frozenset[str]


def method_self(ctx: Context) -> MethodSelf | None:
    """The enclosing method's ``self`` (through nested closures), unless it is shadowed."""
    shadowing: set[str] = set()
    for frame in reversed(ctx.frames):
        if frame.kind in ("module", "class"):
            return None
        if frame.self_name is not None and frame.parent is not None:
            if frame.self_name in shadowing:
                return None
            return MethodSelf(frame.self_name, frame, class_methods(ctx, frame.parent))
        node = frame.node
        if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
            args = node.args
            shadowing.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return None


_NOT_BOUND = ("property", "staticmethod", "classmethod", "setter", "getter", "deleter")


def class_methods(ctx: Context, class_frame: Frame) -> frozenset[str]:
    """Names defined by ``def`` in a class body that give bound methods when read on ``self``."""
    key = ("methods", id(class_frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, frozenset):
        return cached
    names: set[str] = set()
    body = getattr(class_frame.node, "body", [])
    for stmt in body:
        if isinstance(stmt, FUNCTION_NODES) and not any(
            any(word in ast.unparse(deco) for word in _NOT_BOUND) for deco in stmt.decorator_list
        ):
            names.add(stmt.name)
    result = frozenset(names)
    ctx.memo[key] = result
    return result


def bound_method_of(expr: ast.AST, owner: MethodSelf) -> str | None:
    """The method name when ``expr`` is ``self.method`` for a method of the enclosing class."""
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == owner.name
        and expr.attr in owner.methods
    ):
        return expr.attr
    return None


_DEF_NAME = re.compile(r"def\s+(\w+)")


def defines(ctx: Context, name: str) -> bool:
    """Whether the file has a ``def name`` (the names are read once per file, by a regular
    expression: far cheaper than the scope tables it spares)."""
    key = ("def-names", 0)
    names = ctx.memo.get(key)
    if not isinstance(names, frozenset):
        # Without `\b` the search is twenty times faster; a few extra names are harmless.
        names = ctx.memo[key] = frozenset(_DEF_NAME.findall(ctx.source))
    return name in names


def closure_frees(expr: ast.AST, ctx: Context) -> tuple[str, frozenset[str]] | None:
    """For a lambda or a nested function named here: (how to call it, its closure variables)."""
    if isinstance(expr, ast.Lambda):
        return "lambda", ctx.frees_of(expr)
    if isinstance(expr, ast.Name) and ctx.frame.kind != "module" and defines(ctx, expr.id):
        tables = ctx.local_def_tables(expr.id)
        if tables:
            frees: set[str] = set()
            for table in tables:
                frees.update(table.free)
            return f"nested function `{expr.id}`", frozenset(frees)
    return None


@dataclass(frozen=True)
class Bindings:
    """Where a function's own scope clears (``del x``, ``x = None``, ``x = 0``) or rebinds names.

    An assignment whose value reads the name itself (``f = lru_cache(f)``) rebinds it without
    clearing it: the new value may still hold the old one.
    """

    cleared: dict[str, tuple[int, ...]]
    bound: dict[str, tuple[int, ...]]

    def cleared_after(self, name: str, line: int) -> bool:
        """Whether ``name`` is deleted, or set to a value not built from it, below ``line``."""
        return any(at > line for at in self.cleared.get(name, ()))

    def rebound_after(self, name: str, line: int) -> bool:
        """Whether ``name`` is cleared or assigned again below ``line``."""
        return self.cleared_after(name, line) or any(at > line for at in self.bound.get(name, ()))


def _bound_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def bindings(ctx: Context, frame: Frame) -> Bindings:
    """The :class:`Bindings` of a function frame, computed once per function."""
    key = ("bindings", id(frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, Bindings):
        return cached
    cleared: dict[str, list[int]] = {}
    bound: dict[str, list[int]] = {}
    for node in own_scope_nodes(getattr(frame.node, "body", [])):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Delete):
            for target in node.targets:
                for name in _bound_names(target):
                    cleared.setdefault(name, []).append(line)
        elif isinstance(node, ast.Assign):
            # Any new value drops the old one, unless it is built from it (`f = cache(f)`).
            read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            for target in node.targets:
                for name in _bound_names(target):
                    (bound if name in read else cleared).setdefault(name, []).append(line)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)) and (
            not isinstance(node, ast.AnnAssign) or node.value is not None
        ):
            for name in _bound_names(node.target):
                bound.setdefault(name, []).append(line)
    result = Bindings(
        {k: tuple(v) for k, v in cleared.items()}, {k: tuple(v) for k, v in bound.items()}
    )
    ctx.memo[key] = result
    return result


def released_in_finally(ctx: Context, target: ast.AST, line: int) -> bool:
    """Whether ``target`` (``self.f``) is deleted or assigned again in a ``finally`` below
    ``line``, in the function around the current node: then no path keeps the store (a new
    value is judged on its own)."""
    function = enclosing_function(ctx)
    if function is None:
        return False
    key = ("finally-releases", id(function.node))
    cached = ctx.memo.get(key)
    released: dict[str, list[int]] = cached if isinstance(cached, dict) else {}
    if not isinstance(cached, dict):
        for node in own_scope_nodes(getattr(function.node, "body", [])):
            for stmt in own_scope_nodes(getattr(node, "finalbody", [])):
                if isinstance(stmt, (ast.Delete, ast.Assign)):
                    for where in stmt.targets:
                        released.setdefault(ast.unparse(where), []).append(stmt.lineno)
                elif isinstance(stmt, ast.Call):
                    removed = _attribute_removed(stmt)
                    if removed is not None:
                        released.setdefault(removed, []).append(stmt.lineno)
        ctx.memo[key] = released
    return any(at > line for at in released.get(ast.unparse(target), ()))


def _attribute_removed(call: ast.Call) -> str | None:
    """``obj.name`` for ``delattr(obj, "name")``, ``obj.__dict__.pop("name")`` or
    ``vars(obj).pop("name")``."""
    func, args = call.func, call.args
    if isinstance(func, ast.Name) and func.id == "delattr" and len(args) == 2:
        obj, name = args
    elif isinstance(func, ast.Attribute) and func.attr == "pop" and args:
        holder, name = func.value, args[0]
        if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
            obj = holder.value
        elif (
            isinstance(holder, ast.Call)
            and isinstance(holder.func, ast.Name)
            and holder.func.id == "vars"
            and len(holder.args) == 1
        ):
            obj = holder.args[0]
        else:
            return None
    else:
        return None
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return f"{ast.unparse(obj)}.{name.value}"
    return None


def enclosing_function(ctx: Context) -> Frame | None:
    """The innermost function frame (``def`` or ``async def``) around the current node."""
    for frame in reversed(ctx.frames):
        if frame.kind == "function":
            return frame
        if frame.kind in ("module", "class"):
            return None
    return None


def defined_functions(frame: Frame) -> list[tuple[str, ast.AST]]:
    """``(name, statement)`` for each ``def`` and lambda assigned to a name in ``frame``'s body."""
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


def scope_node(node: ast.AST) -> ast.AST:
    """The function node of a :func:`defined_functions` statement (the lambda of ``f = ...``)."""
    return node.value if isinstance(node, ast.Assign) else node


def decorator_name(deco: ast.AST) -> str:
    """A decorator's last name, looking through one call: ``lru_cache`` for ``@f.lru_cache()``."""
    target = deco.func if isinstance(deco, ast.Call) else deco
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""
