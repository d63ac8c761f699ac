"""Scope questions answered from the already parsed tree: which names a scope binds, which are
closure variables (free), parameters, imports or globals.

This is what the standard library's :mod:`symtable` answers, computed from the ``ast`` the
engine walks instead of parsing the source a second time. Names are kept as the source spells
them (no private-name mangling: two scopes never mix their names here). Comprehensions are
their own scopes on every Python (PEP 709's inlining on 3.12+ changes no closure), type
parameters are not scopes, and annotations are no uses (under PEP 649 they are evaluated in a
scope of their own, and before it a nested function's annotations are evaluated outside it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "COMPREHENSION_NODES",
    "FUNCTION_NODES",
    "SCOPE_NODES",
    "Scope",
    "Symbol",
    "build_scopes",
    "outer_and_inner",
]

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPE_NODES = (*FUNCTION_NODES, ast.Lambda, ast.ClassDef, *COMPREHENSION_NODES)

_PARAMETER, _ASSIGNED, _IMPORTED = 1, 2, 4
_BOUND = _PARAMETER | _ASSIGNED | _IMPORTED


@dataclass(frozen=True)
class Symbol:
    """One name of one scope, with ``symtable.Symbol``'s questions."""

    name: str
    flags: int
    scope: str
    """``local``, ``free``, ``global`` (declared or implicit)."""
    at_module: bool

    def is_parameter(self) -> bool:
        return bool(self.flags & _PARAMETER)

    def is_imported(self) -> bool:
        return bool(self.flags & _IMPORTED)

    def is_assigned(self) -> bool:
        return bool(self.flags & _ASSIGNED)

    def is_free(self) -> bool:
        return self.scope == "free"

    def is_local(self) -> bool:
        return self.scope == "local" or (self.at_module and bool(self.flags & _BOUND))

    def is_global(self) -> bool:
        return self.scope == "global" or (self.at_module and bool(self.flags & _BOUND))


@dataclass(eq=False)
class Scope:
    """The names of one scope: the module, a class body, a function, a lambda or a
    comprehension."""

    node: ast.AST
    kind: str
    """``module``, ``class`` or ``function`` (lambdas and comprehensions too)."""
    parent: Scope | None
    flags: dict[str, int] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    parameters: tuple[str, ...] = ()
    children: list[Scope] = field(default_factory=list)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    free: frozenset[str] = frozenset()

    def lookup(self, name: str) -> Symbol | None:
        """The symbol ``name`` of this scope, or ``None`` when the scope never mentions it."""
        return self.symbols.get(name)

    def functions_named(self, name: str) -> list[Scope]:
        """Child scopes made by ``def name`` (or ``async def``) directly in this scope."""
        return [
            c for c in self.children if isinstance(c.node, FUNCTION_NODES) and c.node.name == name
        ]

    def _bind(self, name: str, flag: int) -> None:
        self.flags[name] = self.flags.get(name, 0) | flag


def outer_and_inner(
    node: ast.AST, *, annotations: bool = True
) -> tuple[list[ast.AST], list[ast.AST]]:
    """Split a scope node's children into those evaluated outside it and those inside it
    (``annotations=False`` leaves out the annotations of a function's parameters and result)."""
    if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
        args = node.args
        outer: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if isinstance(node, FUNCTION_NODES):
            outer[:0] = node.decorator_list
            if annotations:
                every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                outer.extend(a.annotation for a in every if a is not None and a.annotation)
                if node.returns is not None:
                    outer.append(node.returns)
            return outer, list(node.body)
        return outer, [node.body]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords], list(node.body)
    assert isinstance(node, COMPREHENSION_NODES)
    first, *rest = node.generators
    inner: list[ast.AST] = [first.target, *first.ifs]
    for gen in rest:
        inner.extend((gen.target, gen.iter, *gen.ifs))
    if isinstance(node, ast.DictComp):
        inner.extend((node.key, node.value))
    else:
        inner.append(node.elt)
    return [first.iter], inner


def _target_names(target: ast.AST) -> Iterator[str]:
    for sub in ast.walk(target):
        if isinstance(sub, ast.Name):
            yield sub.id


def _function_scope(scope: Scope) -> Scope:
    """Where a walrus in a comprehension binds: the nearest scope that is not one."""
    while isinstance(scope.node, COMPREHENSION_NODES) and scope.parent is not None:
        scope = scope.parent
    return scope


def _parameters(node: ast.AST) -> tuple[str, ...]:
    args = node.args  # type: ignore[attr-defined]
    every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
    return tuple(a.arg for a in every if a is not None)


def _collect(module: ast.AST) -> tuple[Scope, dict[int, Scope], list[Scope]]:
    """One walk of the tree: every scope with what it binds, declares and reads."""
    root = Scope(module, "module", None)
    by_node: dict[int, Scope] = {id(module): root}
    order = [root]
    stack: list[tuple[ast.AST, Scope]] = [(n, root) for n in reversed(module.body)]  # type: ignore[attr-defined]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, (*FUNCTION_NODES, ast.Lambda, ast.ClassDef, *COMPREHENSION_NODES)):
            if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                scope._bind(node.name, _ASSIGNED)
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            child = Scope(node, kind, scope)
            if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
                child.parameters = _parameters(node)
                for name in child.parameters:
                    child._bind(name, _PARAMETER)
            scope.children.append(child)
            by_node[id(node)] = child
            order.append(child)
            outer, inner = outer_and_inner(node, annotations=False)
            stack.extend((n, child) for n in reversed(inner))
            stack.extend((n, scope) for n in reversed(outer))
            continue
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                scope.used.add(node.id)
                if node.id == "super" and scope.kind == "function":
                    scope.used.add("__class__")
            else:  # Store and Del both make the name local
                scope._bind(node.id, _ASSIGNED)
            continue
        if isinstance(node, ast.NamedExpr):
            target = _function_scope(scope)
            for name in _target_names(node.target):
                target._bind(name, _ASSIGNED)
                if target is not scope:
                    scope.used.add(name)
            stack.append((node.value, scope))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    scope._bind(alias.asname or alias.name.split(".")[0], _IMPORTED)
            continue
        if isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
            continue
        if isinstance(node, ast.Nonlocal):
            scope.declared_nonlocal.update(node.names)
            continue
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            scope._bind(node.name, _ASSIGNED)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            scope._bind(node.rest, _ASSIGNED)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.used.add(node.target.id)
        elif isinstance(node, ast.AnnAssign):
            # The annotation of a local is never evaluated; only the target binds.
            stack.append((node.target, scope))
            if node.value is not None:
                stack.append((node.value, scope))
            continue
        elif isinstance(node, ast.arg):
            continue  # parameters are bound above; their annotations are no uses
        stack.extend((child, scope) for child in reversed(list(ast.iter_child_nodes(node))))
    return root, by_node, order


def _visible(scope: Scope) -> set[str]:
    """Names bound in the enclosing functions, which a nested function may close over."""
    found: set[str] = set()
    outer = scope.parent
    while outer is not None and outer.kind != "module":
        if outer.kind == "function":
            found.update(
                n for n, f in outer.flags.items() if f & _BOUND and n not in outer.declared_global
            )
            found.update(outer.declared_nonlocal)
        outer = outer.parent
    return found


def build_scopes(module: ast.AST) -> tuple[Scope, dict[int, Scope]]:
    """The module's scope tree, and each scope by ``id`` of its node."""
    root, by_node, order = _collect(module)
    visible = {id(s): _visible(s) for s in order}
    # Children before parents: a name a child closes over and its parent does not bind is
    # a closure variable of the parent too (or, for a class, passes through it).
    for scope in reversed(order):
        needed = {n for c in scope.children for n in c.free}
        at_module = scope.kind == "module"
        local = {
            n
            for n, f in scope.flags.items()
            if f & _BOUND and n not in scope.declared_global and n not in scope.declared_nonlocal
        }
        if scope.kind == "class":
            needed.discard("__class__")  # the class makes the `__class__` cell of its methods
        names = {*scope.flags, *scope.used, *needed, *scope.declared_global}
        names |= scope.declared_nonlocal
        # A class binds nothing its methods can close over: what they need passes through.
        free = set(needed) if scope.kind == "class" else set()
        for name in names:
            if at_module or name in scope.declared_global:
                kind = "global"
            elif name in scope.declared_nonlocal:
                kind = "free"
            elif name in local:
                kind = "local"
            elif name in visible[id(scope)] or (name == "__class__" and _in_class(scope)):
                kind = "free"
            else:
                kind = "global"
            if kind == "free":
                free.add(name)
            scope.symbols[name] = Symbol(name, scope.flags.get(name, 0), kind, at_module)
        scope.free = frozenset(free)
    return root, by_node


def _in_class(scope: Scope) -> bool:
    outer = scope.parent
    while outer is not None:
        if outer.kind == "class":
            return True
        outer = outer.parent
    return False
