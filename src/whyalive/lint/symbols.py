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
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "COMPREHENSION_NODES",
    "FUNCTION_NODES",
    "SCOPE_NODES",
    "Scope",
    "Symbol",
    "build_scopes",
    "child_fields",
    "outer_and_inner",
    "walk_nodes",
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
    comprehension.

    A scope holds its children and only a weak reference to its parent: the lint runs
    inside whyalive's own analysis (naming the rule that flags a cut), where it must leave
    no cyclic garbage; whoever holds the tables holds every scope of them."""

    node: ast.AST
    kind: str
    """``module``, ``class`` or ``function`` (lambdas and comprehensions too)."""
    up: weakref.ReferenceType[Scope] | None
    flags: dict[str, int] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    parameters: tuple[str, ...] = ()
    children: list[Scope] = field(default_factory=list)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    free: frozenset[str] = frozenset()
    values: dict[str, list[ast.AST | None]] = field(default_factory=dict)
    """For each name bound here: the value of each ``name = value`` (``None`` for any other
    binding: a loop target, ``with``, an import, a parameter...)."""

    @property
    def parent(self) -> Scope | None:
        """The scope around this one (``None`` at the top of the tables)."""
        return self.up() if self.up is not None else None

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


_SCOPE_TYPES = frozenset(SCOPE_NODES)
_DEF_TYPES = frozenset({*FUNCTION_NODES, ast.ClassDef})
# Fields that never hold a node worth visiting (contexts, operators, names, flags).
_SKIPPED_FIELDS = frozenset(
    {"ctx", "op", "id", "arg", "attr", "name", "names", "level", "kind", "type_comment"}
)
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that may hold nodes, reversed (a stack pops them in order)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in reversed(cls._fields) if f not in _SKIPPED_FIELDS)
    return found


def walk_nodes(top: ast.AST) -> list[ast.AST]:
    """``top`` and every node under it, in source order (like :func:`ast.walk`, without the
    context and operator nodes, and a few times faster)."""
    found: list[ast.AST] = []
    stack = [top]
    pop, push, keep = stack.pop, stack.append, found.append
    while stack:
        node = pop()
        keep(node)
        # The child loop is written out in each walker (here, `_collect`, the engine,
        # `own_scope_nodes`): a helper call per node makes a walk half as slow again.
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in reversed(value):
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)
    return found


def _open_scope(node: ast.AST, scope: Scope | None) -> Scope:
    kind = "class" if type(node) is ast.ClassDef else "function"
    child = Scope(node, kind, weakref.ref(scope) if scope is not None else None)
    if kind == "function" and not isinstance(node, COMPREHENSION_NODES):
        child.parameters = _parameters(node)
        for name in child.parameters:
            child._bind(name, _PARAMETER)
    if scope is not None:
        scope.children.append(child)
    return child


def _collect(top: ast.AST, shallow: bool) -> list[Scope]:
    """One walk of ``top``: every scope in it with what it binds, declares and reads
    (``shallow``: ``top``'s own statements only, not the scopes inside them)."""
    root = Scope(top, "module", None) if isinstance(top, ast.Module) else _open_scope(top, None)
    order = [root]
    if isinstance(top, ast.Module) or (shallow and root.kind == "class"):
        body = list(getattr(top, "body", []))
    else:
        body = outer_and_inner(top, annotations=False)[1]
    stack: list[tuple[ast.AST, Scope]] = [(n, root) for n in reversed(body)]
    pop, push = stack.pop, stack.append
    valued: set[int] = set()  # targets of `name = value`, whose value is recorded
    while stack:
        node, scope = pop()
        cls = type(node)
        if cls is ast.Name:
            if type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                scope.used.add(node.id)  # type: ignore[attr-defined]
                if node.id == "super" and scope.kind == "function":  # type: ignore[attr-defined]
                    scope.used.add("__class__")
            else:  # Store and Del both make the name local
                scope._bind(node.id, _ASSIGNED)  # type: ignore[attr-defined]
                if id(node) not in valued:
                    scope.values.setdefault(node.id, []).append(None)  # type: ignore[attr-defined]
            continue
        if cls is ast.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    valued.add(id(target))
                    scope.values.setdefault(target.id, []).append(node.value)  # type: ignore[attr-defined]
        if cls in _SCOPE_TYPES:
            if cls in _DEF_TYPES:
                scope._bind(node.name, _ASSIGNED)  # type: ignore[attr-defined]
            outer, inner = outer_and_inner(node, annotations=False)
            if not shallow:
                child = _open_scope(node, scope)
                order.append(child)
                stack.extend((n, child) for n in reversed(inner))
            stack.extend((n, scope) for n in reversed(outer))
            continue
        if cls is ast.NamedExpr:
            target = _function_scope(scope)
            for name in _target_names(node.target):  # type: ignore[attr-defined]
                target._bind(name, _ASSIGNED)
                if target is not scope:
                    scope.used.add(name)
            push((node.value, scope))  # type: ignore[attr-defined]
            continue
        if cls is ast.Import or cls is ast.ImportFrom:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name != "*":
                    scope._bind(alias.asname or alias.name.split(".")[0], _IMPORTED)
            continue
        if cls is ast.Global:
            scope.declared_global.update(node.names)  # type: ignore[attr-defined]
            continue
        if cls is ast.Nonlocal:
            scope.declared_nonlocal.update(node.names)  # type: ignore[attr-defined]
            continue
        if cls is ast.AnnAssign:
            # The annotation of a local is never evaluated; only the target binds.
            push((node.target, scope))  # type: ignore[attr-defined]
            if node.value is not None:  # type: ignore[attr-defined]
                push((node.value, scope))  # type: ignore[attr-defined]
            continue
        if cls is ast.AugAssign and type(node.target) is ast.Name:  # type: ignore[attr-defined]
            scope.used.add(node.target.id)  # type: ignore[attr-defined]
        elif cls in (ast.ExceptHandler, ast.MatchAs, ast.MatchStar) and node.name:  # type: ignore[attr-defined]
            scope._bind(node.name, _ASSIGNED)  # type: ignore[attr-defined]
        elif cls is ast.MatchMapping and node.rest:  # type: ignore[attr-defined]
            scope._bind(node.rest, _ASSIGNED)  # type: ignore[attr-defined]
        for name in child_fields(cls):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in reversed(value):
                    if isinstance(item, ast.AST):
                        push((item, scope))
            elif isinstance(value, ast.AST):
                push((value, scope))
    return order


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


def build_scopes(
    top: ast.AST, *, in_class: bool = False, shallow: bool = False
) -> dict[int, Scope]:
    """The scope tree of ``top`` (a module, or a function with every scope inside it), each
    scope by ``id`` of its node. ``top`` is read as if nothing around it bound a name a
    closure could use, true of a module-level function or a method (``in_class``: one whose
    ``super()`` reads the class's ``__class__`` cell). ``shallow`` reads a module's or class's
    own statements only."""
    order = _collect(top, shallow)
    by_node = {id(s.node): s for s in order}
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
            elif name in visible[id(scope)] or (name == "__class__" and _in_class(scope, in_class)):
                kind = "free"
            else:
                kind = "global"
            if kind == "free":
                free.add(name)
            scope.symbols[name] = Symbol(name, scope.flags.get(name, 0), kind, at_module)
        scope.free = frozenset(free)
    return by_node


def _in_class(scope: Scope, top_in_class: bool) -> bool:
    outer = scope.parent
    while outer is not None:
        if outer.kind == "class":
            return True
        outer = outer.parent
    return top_in_class
