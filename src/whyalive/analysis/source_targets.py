"""Where the line that made a reference may be: what to look for, and in which code.

From a cut's reference (read off the live cycle) to a :class:`StoreTarget` (an
attribute, a name, a key, an item, a hook registration, an exception handed to a
future) and to the code objects whose source may hold the statement, in the order
:mod:`whyalive.analysis.sourcelines` searches them: the methods of the holder's class and its
bases, the cycle's functions, bound methods, frames and partials (and the function that
made a nested one), then the methods of every class among the cycle's objects. Reads
only C-level slots of functions, methods and partials: no user code runs.
"""

from __future__ import annotations

import ast
import functools
import sys
import types
from collections.abc import Callable, Iterator
from typing import cast

from whyalive.analysis.cuts import is_registry_attribute
from whyalive.analysis.naming import cell_variable, is_instance_node, variable_of
from whyalive.analysis.origin import is_installed_file
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.statements import DEF_NODES, ParsedFile, StoreTarget, stores
from whyalive.guarded import read_attribute, type_module, type_mro, type_namespace
from whyalive.kinds.autograd_graph import NODE_HOOKS, NODE_PREHOOKS, TENSOR_HOOKS
from whyalive.words import edge_kinds as ek

HOOK_DICTS = frozenset({TENSOR_HOOKS, NODE_HOOKS, NODE_PREHOOKS})
"""Names of the C++ references from an autograd node to a hook dict."""


def module_file(cls: type) -> list[str]:
    """The file of the module that defines ``cls`` (a list: empty when it has none)."""
    module = sys.modules.get(type_module(cls) or "")
    filename = read_attribute(module, "__file__") if module is not None else None
    return [filename] if isinstance(filename, str) else []


def store_target(view: CycleView, edge: NamedEdge) -> StoreTarget | None:
    """What the statement that made ``edge`` stores, from the reference's kind and name."""
    kind, name = edge.name.kind, edge.name.name
    if kind == ek.ATTRIBUTE:
        return StoreTarget("attribute", name[1:]) if name[1:].isidentifier() else None
    if kind == ek.CELL:
        variable = cell_variable(view, edge.source)
        return StoreTarget("name", variable) if variable else None
    if kind == ek.LOCAL:
        variable = variable_of(edge)
        return StoreTarget("name", variable) if variable.isidentifier() else None
    if kind == ek.KEY and in_hook_registry(view, edge):
        fn = hook_function(view, edge.target)
        if fn is None:
            return None
        if fn.__name__ == "<lambda>":  # named by its line: the call it is written in
            return StoreTarget("hook", ("<lambda>", fn.__code__.co_firstlineno))
        return StoreTarget("hook", str(fn.__name__))
    if kind == ek.INDEX and name[1:-1].isdigit():
        index = int(name[1:-1])
        container = view.obj(edge.source)
        exact = type(container) is list or type(container) is tuple
        size = len(cast("list[object]", container)) if exact else None
        return StoreTarget("item", index, size - 1 - index if size is not None else None)
    if kind == ek.TRACEBACK and name == "__traceback__":
        return StoreTarget("exception", "")
    if kind != ek.KEY:
        return None
    key = _constant(name[1:-1]) if name.startswith("[") else None
    if not isinstance(key, (str, int)):
        return None
    held_by = (
        into.name.name[1:]
        for into in view.edges_into(edge.source)
        if into.name.kind == ek.ATTRIBUTE and is_instance_node(view.obj(into.source))
    )
    return StoreTarget("key", key, container=next(held_by, None))


def _constant(text: str) -> object:
    """The value of a literal key (``'me'``, ``3``); not ``ast.literal_eval``, whose
    recursive helper leaves a cycle behind on every call."""
    try:
        node = ast.parse(text, mode="eval").body
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return node.value if isinstance(node, ast.Constant) else None


def hook_function(view: CycleView, node: int) -> types.FunctionType | None:
    """The function a hook registry's entry holds: itself, or inside the wrapper a framework
    puts around it (a bound method, a partial, an object with a ``.hook``)."""
    seen = {node}
    frontier = [node]
    for _ in range(3):
        for current in frontier:
            fn = function_of(view.obj(current))
            if fn is not None:
                return fn
        frontier = [e.target for n in frontier for e in view.edges_from(n) if e.target not in seen]
        seen.update(frontier)
    return None


def in_hook_registry(view: CycleView, edge: NamedEdge) -> bool:
    """An entry of a hook registry: a dict held by an attribute such as ``._forward_hooks``,
    or one an autograd node holds in C++ (a tensor's ``register_hook`` dict, a node's)."""
    return any(
        is_registry_attribute(e.name) or (e.name.kind == ek.AUTOGRAD and e.name.name in HOOK_DICTS)
        for e in view.edges_into(edge.source)
    )


def codes_to_search(view: CycleView, edge: NamedEdge) -> list[tuple[types.CodeType, bool]]:
    """Code objects whose source may store the reference; True: search the enclosing def.

    A list, not a generator: a search stops at its first hit, and a generator left
    suspended is closed when it is freed, where an exception (an interrupt) is lost. The
    user's code comes before an installed package's, each in its own order: a traceback
    through torch's `_call_impl` holds frames whose lines store items too
    (`args_result = (args_result,)`), which made none of the user's references.
    """
    codes = list(dict.fromkeys(_codes_in_order(view, edge)))
    return sorted(codes, key=lambda found: is_installed_file(found[0].co_filename))


def _codes_in_order(view: CycleView, edge: NamedEdge) -> Iterator[tuple[types.CodeType, bool]]:
    kind = edge.name.kind
    if kind == ek.CELL:
        for into in view.edges_into(edge.source):
            fn = view.obj(into.source)
            if into.name.kind == ek.CLOSURE and type(fn) is types.FunctionType:
                yield fn.__code__, True
        return
    if kind == ek.LOCAL:
        frame = view.obj(edge.source)
        if type(frame) is types.FrameType:
            yield frame.f_code, False
        return
    if kind == ek.ATTRIBUTE:
        holder = type(view.obj(edge.source))
        yield from methods_of(holder)
        # A custom autograd.Function's ctx: `ctx.x = ...` is written in the Function's forward.
        function_class = type_namespace(holder).get("_forward_cls")
        if isinstance(function_class, type):
            yield from methods_of(function_class)
    if kind == ek.KEY and in_hook_registry(view, edge):
        fn = hook_function(view, edge.target)
        if fn is not None and ".<locals>." in fn.__qualname__:
            yield fn.__code__, True  # a nested hook is registered where it is defined
    for node in view.shown:
        obj = view.obj(node)
        function = function_of(obj)
        if function is not None:
            yield function.__code__, False
            if ".<locals>." in function.__qualname__:
                # A nested function patched onto an object (`m.forward = partial(new, m)`)
                # is stored by the function that made it.
                yield function.__code__, True
        elif type(obj) is types.FrameType:
            yield obj.f_code, False
    for node in view.shown:
        obj = view.obj(node)
        if is_instance_node(obj):
            yield from methods_of(type(obj))


def handed_over(
    method: object, parsed_of: Callable[[str], ParsedFile | None]
) -> tuple[str, ParsedFile, ast.Call] | None:
    """``self.handler.addFilter(self.only_mine)``: the call, in a method of the user's class,
    that handed the bound method ``self.<name>`` to another object (a library's list of
    filters, a future's callbacks), which keeps it where no statement of the user stores it."""
    if type(method) is not types.MethodType or type(method.__func__) is not types.FunctionType:
        return None
    name = method.__func__.__name__
    for code, _ in methods_of(type(method.__self__)):
        parsed = None if is_installed_file(code.co_filename) else parsed_of(code.co_filename)
        if parsed is None:
            continue
        for function in parsed.functions_by_line.get(code.co_firstlineno, ()):
            args = getattr(function, "args", None)
            params = [*args.posonlyargs, *args.args] if args is not None else []
            me = params[0].arg if params else None
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and any(
                    isinstance(a, ast.Attribute) and a.attr == name
                    and isinstance(a.value, ast.Name) and a.value.id == me
                    for a in (*node.args, *(k.value for k in node.keywords))
                ):  # fmt: skip
                    return code.co_filename, parsed, node
    return None


def methods_of(cls: type) -> Iterator[tuple[types.CodeType, bool]]:
    """The code of every method of ``cls`` and its bases (properties' and wrapped ones too)."""
    for klass in type_mro(cls):
        for value in type_namespace(klass).values():
            for function in _unwrapped(value):
                yield function.__code__, False


def _unwrapped(value: object) -> Iterator[types.FunctionType]:
    if type(value) in (staticmethod, classmethod):
        value = value.__func__  # type: ignore[attr-defined]
    if type(value) is property:
        for part in (value.fget, value.fset, value.fdel):
            if type(part) is types.FunctionType:
                yield part
        return
    if type(value) is types.FunctionType:
        yield value


def function_of(obj: object) -> types.FunctionType | None:
    """The Python function of a function, a bound method or an exact ``partial`` (read from
    C-level slots: no user code runs)."""
    if type(obj) is types.MethodType:
        obj = obj.__func__
    elif type(obj) is functools.partial:
        obj = obj.func
    return obj if type(obj) is types.FunctionType else None


def function_names(view: CycleView) -> set[str]:
    """Names of the functions in the cycle (a partial's too): a store naming one of them is
    the one that made the cycle, when several statements store the same name."""
    functions = (function_of(view.obj(node)) for node in view.shown)
    return {str(f.__name__) for f in functions if f is not None}


def outside_store(parsed: ParsedFile, target: StoreTarget) -> ast.stmt | None:
    """The first ``other.name = ...`` in a function of the file (an attribute set on an
    object other than ``self``), when every such store is in one function."""
    found: list[tuple[ast.stmt, ast.AST]] = []
    for node in ast.walk(parsed.tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        scope = parsed.enclosing(node)
        if not isinstance(scope, DEF_NODES) or not stores(node, target, parsed.tree):
            continue
        stored = node.targets[0] if isinstance(node, ast.Assign) else node.target
        base = stored.value if isinstance(stored, ast.Attribute) else None
        params = [*scope.args.posonlyargs, *scope.args.args]
        own = isinstance(parsed.parents.get(scope), ast.ClassDef) and params
        if isinstance(base, ast.Name) and not (own and base.id == params[0].arg):
            found.append((node, scope))
    if not found or len({id(scope) for _, scope in found}) > 1:
        return None
    return min((node for node, _ in found), key=lambda node: node.lineno)
