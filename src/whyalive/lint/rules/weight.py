"""Static evidence that a value cannot be heavy: what the light (opt-in) codes rest on.

A value is *light* when everything it can hold is a string, a number, a flag, ``None``, code
(functions, classes, modules) or something alive anyway (a module global, a logger): then a
cycle or cache that keeps it costs a few hundred bytes. The evidence, all from one file:

- how the value is built in its function: literals, f-strings, ``len()``-like builtins,
  string methods, displays and comprehensions of light parts, ``set()`` / ``[]`` that are
  only ever filled with light values and never handed to other code;
- annotations: ``str``, ``int``, ``bool``, ``list[str]``, ``type``, ``Path``, ``Literal[...]``
  (``Any``, ``Tensor``, ``Callable``, a class or no annotation: may be heavy);
- ``@functools.wraps(fn)``: ``fn`` is the wrapped function;
- for ``self``: the class and its same-file bases and subclasses store only light values on
  their instances, and its other bases are ``object``, ``nn.Module``, ``ABC``, ``Protocol``
  or ``Generic``.

Anything this module cannot read counts as possibly heavy, so a finding is demoted only on
positive evidence.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from whyalive.lint.rules.annotations import declares_light, last_name, light_annotation, words
from whyalive.lint.rules.fills import only_filled_with_light
from whyalive.lint.scopes import (
    FUNCTION_NODES,
    FUNCTION_OR_LAMBDA,
    Context,
    own_scope_nodes,
    walk_nodes,
)

__all__ = ["Weigher", "weigher"]


# Builtins whose result is a bool, number or string, whatever they are given.
_SCALAR_BUILTINS = words(
    """
    len int float str bool bytes complex isinstance issubclass hasattr callable id hash
    ord chr round repr format divmod abs ascii bin hex oct range type
    """
)
# Builtins that build a container from their arguments: light when those are.
_CONTAINER_BUILTINS = frozenset(
    {"set", "list", "tuple", "frozenset", "dict", "sorted", "reversed", "enumerate", "zip"}
)
# Methods that only strings have (or whose result is a string, a flag or a number).
_STRING_METHODS = words(
    """
    strip lstrip rstrip lower upper casefold title capitalize startswith endswith isdigit
    isalpha isalnum isidentifier isspace islower isupper join format removeprefix
    removesuffix zfill ljust rjust center splitlines encode decode partition rpartition
    """
)
# Methods shared with tensors/frames (`t.split(2)`): string methods only with string arguments.
_STRING_ARGUMENT_METHODS = frozenset({"split", "rsplit", "replace"})
_WEAK_CALLS = frozenset({"ref", "WeakMethod", "proxy", "getLogger", "get_logger"})
_Check = Callable[[ast.AST], bool]


def _params(node: ast.AST) -> Iterator[tuple[ast.arg, ast.AST | None]]:
    """Each parameter of a function with its default (``None`` when it has none)."""
    assert isinstance(node, FUNCTION_OR_LAMBDA)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    padded: list[ast.AST | None] = [None] * (len(positional) - len(args.defaults))
    yield from zip(positional, [*padded, *args.defaults], strict=True)
    yield from zip(args.kwonlyargs, args.kw_defaults, strict=True)
    for star in (args.vararg, args.kwarg):
        if star is not None:
            yield star, None


def _wrapped_names(function: ast.AST) -> set[str]:
    """Names given to ``@wraps(...)`` in ``function``'s own scope: they are functions."""
    found = set()
    for node in own_scope_nodes(getattr(function, "body", [])):
        if isinstance(node, FUNCTION_NODES):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and last_name(deco.func) == "wraps"
                    and deco.args
                    and isinstance(deco.args[0], ast.Name)
                ):
                    found.add(deco.args[0].id)
    return found


@dataclass(eq=False)
class _Scope:
    """A function's own bindings: name -> the statements (or parameters) that bind it."""

    node: ast.AST
    parent: ast.AST | None
    bound: dict[str, list[ast.AST]] = field(default_factory=dict)
    outer: set[str] = field(default_factory=set)  # global or nonlocal here
    ready: bool = False
    parents: dict[int, ast.AST] | None = None


def _bind(scope: _Scope, target: ast.AST, stmt: ast.AST) -> None:
    for sub in ast.walk(target):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            scope.bound.setdefault(sub.id, []).append(stmt)


class Weigher:
    """Lightness evidence for one module, built lazily and memoised (see the module docstring)."""

    def __init__(self, module: ast.AST) -> None:
        self._module = module
        self._scopes: dict[int, _Scope] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self._names: dict[tuple[int, str, frozenset[str]], bool] = {}
        self._pending: set[tuple[int, str, frozenset[str]]] = set()
        self._guessed = False
        self.instances: dict[int, bool] = {}
        self.subclasses: dict[str, list[ast.ClassDef]] = {}
        self.functions: dict[str, ast.AST] = {}
        self._index(module)

    def _index(self, module: ast.AST) -> None:
        stack: list[tuple[ast.AST, ast.AST | None]] = [(module, None)]
        while stack:
            node, function = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, FUNCTION_OR_LAMBDA):
                    self._scopes[id(child)] = _Scope(child, function)
                    stack.append((child, child))
                    # Undecorated: a decorator may return anything.
                    plain = isinstance(child, FUNCTION_NODES) and not child.decorator_list
                    if node is module and plain:
                        self.functions[child.name] = child  # type: ignore[union-attr]
                else:
                    if isinstance(child, ast.ClassDef) and node is module:
                        self.classes[child.name] = child
                    stack.append((child, function))
        for cls in self.classes.values():
            for base in cls.bases:
                self.subclasses.setdefault(last_name(base), []).append(cls)

    def scope(self, function: ast.AST) -> _Scope:
        """The bindings of ``function`` (a ``def`` or lambda of this module)."""
        scope = self._scopes[id(function)]
        if scope.ready:
            return scope
        scope.ready = True
        for param, _ in _params(function):
            scope.bound.setdefault(param.arg, []).append(param)
        body = getattr(function, "body", [])
        body = body if isinstance(body, list) else [body]  # a lambda's is one expression
        for node in own_scope_nodes(body):
            if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                scope.bound.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    scope.bound.setdefault(name, []).append(node)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                scope.outer.update(node.names)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(scope, target, node)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                _bind(scope, node.target, node)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        _bind(scope, item.optional_vars, node)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                scope.bound.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.NamedExpr):
                _bind(scope, node.target, node)
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for sub in ast.walk(node):  # a walrus in a comprehension binds here
                    if isinstance(sub, ast.NamedExpr):
                        _bind(scope, sub.target, sub)
        for stmt in walk_nodes(function):
            if isinstance(stmt, (ast.MatchAs, ast.MatchStar)) and stmt.name:
                scope.bound.setdefault(stmt.name, []).append(stmt)
        return scope

    # -- values ---------------------------------------------------------------------------

    def light_name(self, function: ast.AST | None, name: str, trusted: frozenset[str]) -> bool:
        """Whether every value ``name`` can have, read in ``function``, is light."""
        if name in trusted:
            return True
        while function is not None:
            scope = self.scope(function)
            if name in scope.bound:
                break
            function = scope.parent
        if function is None:
            return True  # a global or builtin: alive anyway
        key = (id(function), name, trusted)
        if key in self._pending:
            # A name built from itself (`i = i + 1`) adds nothing; results that leaned on
            # this guess are final only for the name that started the guess.
            self._guessed = True
            return True
        known = self._names.get(key)
        if known is not None:
            return known
        if name in _wrapped_names(function):
            self._names[key] = True  # `@wraps(name)`: the name is the wrapped function
            return True
        outer_guess, self._guessed = self._guessed, False
        self._pending.add(key)
        scope = self.scope(function)
        bindings = scope.bound[name]
        if any(declares_light(stmt) for stmt in bindings):
            light = True  # its declared type covers every value it gets (`dims: list[int]`)
        else:
            light = all(self._light_binding(function, name, stmt, trusted) for stmt in bindings)
            if light and any(_makes_container(stmt) for stmt in bindings):
                light = only_filled_with_light(self, function, name, trusted)
        if name in scope.outer and scope.parent is not None:
            light = light and self.light_name(scope.parent, name, trusted)
        self._pending.discard(key)
        if not self._guessed or not self._pending:
            self._names[key] = light
        self._guessed = outer_guess or (self._guessed and bool(self._pending))
        return light

    def _light_binding(
        self, function: ast.AST, name: str, stmt: ast.AST, trusted: frozenset[str]
    ) -> bool:
        if isinstance(stmt, ast.arg):
            return self._light_parameter(function, stmt)
        if isinstance(stmt, FUNCTION_NODES):
            return self.light_function(stmt, function, trusted)
        if isinstance(stmt, (ast.ClassDef, ast.Import, ast.ImportFrom)):
            return True
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.NamedExpr)):
            return self.light(stmt.value, function, trusted)
        if isinstance(stmt, ast.AnnAssign):
            return stmt.value is not None and (
                light_annotation(stmt.annotation) or self.light(stmt.value, function, trusted)
            )
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            return self.light(stmt.iter, function, trusted)
        return False  # `with` targets, caught exceptions, match captures

    def light_function(
        self, node: ast.AST, function: ast.AST | None, trusted: frozenset[str]
    ) -> bool:
        """Whether a nested ``def`` or lambda holds only light values: its defaults, and the
        variables of ``function`` (and further out) it reads."""
        assert isinstance(node, FUNCTION_OR_LAMBDA)
        own = self.scope(node).bound
        held = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        return all(self.light(d, function, trusted) for d in held) and all(
            self.light_name(function, sub.id, trusted)
            for sub in walk_nodes(node)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in own
        )

    def parents(self, function: ast.AST) -> dict[int, ast.AST]:
        """``id`` of each node in ``function`` -> the node it sits in (built once)."""
        scope = self.scope(function)
        if scope.parents is None:
            scope.parents = {
                id(c): n for n in walk_nodes(function) for c in ast.iter_child_nodes(n)
            }
        return scope.parents

    def binds(self, function: ast.AST, name: str) -> bool:
        """Whether ``function`` binds ``name`` in a way this module reads."""
        return name in self.scope(function).bound

    def _light_parameter(self, function: ast.AST, param: ast.arg) -> bool:
        if light_annotation(param.annotation):
            return True
        for arg, default in _params(function):
            if arg is param:
                return isinstance(default, ast.Constant) and default.value is not None
        return False

    def light(self, expr: ast.AST, function: ast.AST | None, trusted: frozenset[str]) -> bool:
        """Whether the value of ``expr``, evaluated in ``function``, is light."""
        return self._light(expr, function, trusted, {})

    def _light(
        self,
        expr: ast.AST,
        function: ast.AST | None,
        trusted: frozenset[str],
        local: dict[str, bool],
    ) -> bool:
        def rec(sub: ast.AST) -> bool:
            return self._light(sub, function, trusted, local)

        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.Compare)):
            return True
        if isinstance(expr, ast.Name):
            if expr.id in local:
                return local[expr.id]
            return self.light_name(function, expr.id, trusted)
        if isinstance(expr, (ast.Attribute, ast.Subscript, ast.Starred, ast.NamedExpr)):
            return rec(expr.value)
        if isinstance(expr, ast.UnaryOp):
            return isinstance(expr.op, ast.Not) or rec(expr.operand)
        if isinstance(expr, ast.BoolOp):
            return all(rec(v) for v in expr.values)
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Mult) and any(
                isinstance(side, (ast.List, ast.Tuple)) and rec(side)
                for side in (expr.left, expr.right)
            ):
                return True  # `[False] * n`: copies of the display's items
            return rec(expr.left) and rec(expr.right)
        if isinstance(expr, ast.IfExp):
            return rec(expr.body) and rec(expr.orelse)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return all(rec(e) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return all(rec(k) for k in expr.keys if k is not None) and all(
                rec(v) for v in expr.values
            )
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            inner = dict(local)
            for gen in expr.generators:
                items = self._light(gen.iter, function, trusted, inner)
                for sub in ast.walk(gen.target):
                    if isinstance(sub, ast.Name):
                        inner[sub.id] = items
            parts = [expr.key, expr.value] if isinstance(expr, ast.DictComp) else [expr.elt]
            return all(self._light(p, function, trusted, inner) for p in parts)
        if isinstance(expr, ast.Lambda):
            return self.light_function(expr, function, trusted)
        if isinstance(expr, ast.Call):
            return self._light_call(expr, rec) or self._returns_light(expr, function)
        return False

    def _returns_light(self, call: ast.Call, function: ast.AST | None) -> bool:
        """A call of a function of this module whose return annotation is light
        (``def count(...) -> int``), unless a local of that name hides it."""
        func = call.func
        if not isinstance(func, ast.Name) or func.id not in self.functions:
            return False
        scope = function
        while scope is not None:
            if func.id in self.scope(scope).bound:
                return False
            scope = self.scope(scope).parent
        return light_annotation(getattr(self.functions[func.id], "returns", None))

    def _light_call(self, call: ast.Call, rec: _Check) -> bool:
        func = call.func
        name = last_name(func)
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(func, ast.Name) and name in _SCALAR_BUILTINS:
            return True
        if isinstance(func, ast.Name) and name in _CONTAINER_BUILTINS:
            return all(rec(a) for a in arguments)
        if name.startswith(("is_", "has_")) or name in _WEAK_CALLS:
            return True
        if name in ("partial", "MethodType"):
            return all(rec(a) for a in arguments)
        if isinstance(func, ast.Attribute) and last_name(func.value) != "str":
            if name in _STRING_METHODS:
                return True
            if name in _STRING_ARGUMENT_METHODS:
                return all(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args
                )
        return False


def _makes_container(stmt: ast.AST) -> bool:
    """Whether a binding makes a new mutable container (``[]``, ``set()``, ``[x] * n``)."""
    value = getattr(stmt, "value", None)
    if isinstance(value, ast.BinOp):
        value = value.left if isinstance(value.left, ast.List) else value.right
    if isinstance(value, ast.Call):
        return last_name(value.func) in _CONTAINER_BUILTINS | {
            "defaultdict",
            "OrderedDict",
            "deque",
        }
    return isinstance(value, (ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp))


def weigher(ctx: Context) -> Weigher:
    """The module's :class:`Weigher`, built on first use."""
    found = ctx.memo.get(("weigher", 0))
    if not isinstance(found, Weigher):
        found = ctx.memo[("weigher", 0)] = Weigher(ctx.frames[0].node)
    return found
