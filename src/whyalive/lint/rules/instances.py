"""Can an instance hold something heavy? Evidence from its class, for the findings that keep
``self`` (bound methods and closures on ``self``, callbacks, method caches).

Instances of a class are light when its bases are ``object``, ``nn.Module``, ``ABC``,
``Protocol``, ``Generic`` or light classes of the same file, and the methods of the class
and of its same-file subclasses store only light values on ``self``
(:mod:`whyalive.lint.rules.weight` says which values are light), or when ``__init__`` first
makes ``self.__dict__`` a dict the class holds. What other files store on an instance (a
subclass elsewhere, code that sets attributes from outside) is not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.rules.annotations import last_name, light_annotation
from whyalive.lint.rules.fills import FILLERS
from whyalive.lint.rules.weight import Weigher
from whyalive.lint.scopes import FUNCTION_NODES, FUNCTION_OR_LAMBDA, walk_nodes

__all__ = ["base_names", "is_module_class", "light_instance"]

# Bases whose own instances hold nothing heavy (nn.Module's dicts start empty).
_LIGHT_BASES = frozenset({"object", "Module", "ABC", "Protocol", "Generic"})
# Methods an instance uses to keep what it is given (`nn.Module.register_buffer`).
_KEEPING_METHODS = frozenset({"__init__", "__setattr__", "__setitem__"})
_KEEPING_PREFIXES = ("register", "add_", "set_")


def light_instance(w: Weigher, cls: ast.ClassDef) -> bool:
    """Whether instances of ``cls`` hold only light values: its bases are light, and its
    methods and those of same-file bases and subclasses store only light values on
    ``self``."""
    known = w.instances.get(id(cls))
    if known is not None:
        return known
    w.instances[id(cls)] = True  # a class hierarchy that loops adds nothing
    light = all(_light_base(w, base) for base in cls.bases)
    light = light and (_shares_class_state(cls) or _stores_light(w, cls))
    for sub in w.subclasses.get(cls.name, []):
        light = light and light_instance(w, sub)
    w.instances[id(cls)] = light
    return light


def base_names(w: Weigher, cls: ast.ClassDef) -> Iterator[tuple[str, bool]]:
    """The bases of ``cls`` and of its same-file bases, each class once: a base's last name
    and whether this file defines it (then its own bases follow)."""
    seen: set[int] = set()
    pending = [cls]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for base in current.bases:
            name = last_name(base)
            here = isinstance(base, ast.Name) and name in w.classes
            yield name, here
            if here:
                pending.append(w.classes[name])


def is_module_class(w: Weigher, cls: ast.ClassDef) -> bool:
    """Whether ``cls`` is an ``nn.Module`` (a base named ``Module``, directly or through
    classes of the same file): its instances are what holds parameters and buffers."""
    return any(name == "Module" for name, _ in base_names(w, cls))


def _shares_class_state(cls: ast.ClassDef) -> bool:
    """``self.__dict__ = self._shared_state`` first thing in ``__init__`` (the Borg idiom):
    every attribute lands in a dict the class holds, alive as long as the class anyway."""
    shared = {
        t.id
        for stmt in cls.body
        if isinstance(stmt, (ast.Assign, ast.AnnAssign))
        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        if isinstance(t, ast.Name)
    }
    for stmt in cls.body:
        if isinstance(stmt, FUNCTION_NODES) and stmt.name == "__init__" and stmt.args.args:
            me = stmt.args.args[0].arg
            body = [s for s in stmt.body if not isinstance(s, ast.Expr)]  # docstrings
            first = body[0] if body else None
            return (
                isinstance(first, ast.Assign)
                and len(first.targets) == 1
                and isinstance(first.targets[0], ast.Attribute)
                and first.targets[0].attr == "__dict__"
                and _is_name(first.targets[0].value, me)
                and isinstance(first.value, ast.Attribute)
                and first.value.attr in shared
                and (_is_name(first.value.value, me) or _is_name(first.value.value, cls.name))
            )
    return False


def _light_base(w: Weigher, base: ast.AST) -> bool:
    name = last_name(base)
    if isinstance(base, ast.Name) and name in w.classes:
        return light_instance(w, w.classes[name])
    return name in _LIGHT_BASES


def _declared_light(cls: ast.ClassDef, methods: list[ast.AST]) -> frozenset[str]:
    """Attributes declared with a light type, in the class body (`rank: int`) or on the
    instance in a method (`self._rank: Optional[int] = None`): every value they get is."""
    declared = {
        stmt.target.id
        for stmt in cls.body
        if isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and light_annotation(stmt.annotation)
    }
    for method in methods:
        me = method.args.args[0].arg  # type: ignore[attr-defined]
        for node in walk_nodes(method):
            target = getattr(node, "target", None)
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == me
                and light_annotation(node.annotation)
            ):
                declared.add(target.attr)
    return frozenset(declared)


def _stores_light(w: Weigher, cls: ast.ClassDef) -> bool:
    if any(
        isinstance(stmt, ast.AnnAssign) and not light_annotation(stmt.annotation)
        for stmt in cls.body
    ):
        return False  # a dataclass or NamedTuple field that may be heavy
    methods: list[ast.AST] = []
    for stmt in cls.body:
        if not isinstance(stmt, FUNCTION_NODES) or not stmt.args.args:
            continue
        decorators = {last_name(d) for d in stmt.decorator_list}
        if not decorators & {"staticmethod", "classmethod"}:
            methods.append(stmt)
    declared = _declared_light(cls, methods)
    for method in methods:
        trusted = frozenset({method.args.args[0].arg})  # type: ignore[attr-defined]
        if not _method_stores_light(w, method, trusted, declared):
            return False
    return True


def _method_stores_light(
    w: Weigher, method: ast.AST, trusted: frozenset[str], declared: frozenset[str]
) -> bool:
    (me,) = trusted
    stack: list[tuple[ast.AST, ast.AST]] = [(method, method)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, FUNCTION_OR_LAMBDA) and node is not method:
            if me in w.scope(node).bound:
                continue
            where = node
        for target, value in _stores(node):
            if _declared_attribute(target, me, declared):
                continue
            if _rooted_at(target, me) and not w.light(value, where, trusted):
                return False
        if isinstance(node, ast.Call) and _keeps_arguments(node, me):
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if not all(w.light(a, where, trusted) for a in arguments):
                return False
        stack.extend((child, where) for child in ast.iter_child_nodes(node))
    return True


def _stores(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield target, node.value
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        yield node.target, node.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in FILLERS
    ):
        for arg in (*node.args, *(k.value for k in node.keywords)):
            yield node.func.value, arg


def _declared_attribute(target: ast.AST, me: str, declared: frozenset[str]) -> bool:
    """``self.x = ...`` where ``x`` is declared with a light type."""
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == me
        and target.attr in declared
    )


def _rooted_at(target: ast.AST, name: str) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_rooted_at(e, name) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _rooted_at(target.value, name)
    if not isinstance(target, (ast.Attribute, ast.Subscript)):
        return False
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return isinstance(target, ast.Name) and target.id == name


def _keeps_arguments(call: ast.Call, me: str) -> bool:
    """``self.register_buffer(...)``, ``setattr(self, ...)``, ``super().__init__(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "setattr" and bool(call.args) and _is_name(call.args[0], me)
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    on_self = _is_name(owner, me) or (
        isinstance(owner, ast.Call) and last_name(owner.func) == "super"
    )
    if func.attr == "__setattr__" and call.args and _is_name(call.args[0], me):
        return True
    keeps = func.attr in _KEEPING_METHODS or func.attr.lstrip("_").startswith(_KEEPING_PREFIXES)
    return on_self and keeps


def _is_name(expr: ast.AST, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name
