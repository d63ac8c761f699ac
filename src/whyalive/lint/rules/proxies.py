"""Where a ``weakref.proxy`` can stand in for an object that a patched method binds or captures.

A proxy forwards attribute access (and so method calls) to its object, and nothing else:
``type(proxy)`` is ``weakproxy``, ``isinstance`` checks fail, it cannot be hashed or weakly
referenced, and C functions given it raise. So WAL204 offers "bind (or capture)
``weakref.proxy(obj)``" only where the code that receives the object is in the file and uses
it through attributes alone: the function given to ``MethodType`` or ``partial`` (its
parameter that receives the object), or the closure that captures it.
"""

from __future__ import annotations

import ast

from whyalive.lint.scopes import FUNCTION_NODES, Context, walk_nodes

__all__ = ["closure_takes_proxy", "function_takes_proxy"]


def _used_through_attributes(function: ast.AST, name: str) -> bool:
    """Whether every use of ``name`` in ``function``'s body is ``name.attribute``."""
    body = getattr(function, "body", [])
    nodes = [n for part in (body if isinstance(body, list) else [body]) for n in walk_nodes(part)]
    values = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    return all(
        id(n) in values and isinstance(n.ctx, ast.Load)
        for n in nodes
        if isinstance(n, ast.Name) and n.id == name
    )


def _functions_named(ctx: Context, name: str) -> list[ast.AST]:
    """The ``def``s a name can call here: those in the current function, else the module's."""
    local = [table.node for table in ctx.local_def_tables(name)]
    if local:
        return local
    module = ctx.frames[0].node
    return [
        node
        for node in getattr(module, "body", [])
        if isinstance(node, FUNCTION_NODES) and node.name == name
    ]


def _parameter(function: ast.AST, index: int | None, keyword: str | None) -> str | None:
    args = getattr(function, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if keyword is not None:
        named = {*positional[len(args.posonlyargs) :], *(a.arg for a in args.kwonlyargs)}
        return keyword if keyword in named else None
    return positional[index] if index is not None and index < len(positional) else None


def function_takes_proxy(
    ctx: Context, function: ast.AST, index: int | None, keyword: str | None = None
) -> bool:
    """Whether ``function`` (a lambda, or a name of a ``def`` here) uses the argument it gets
    at position ``index`` (or as ``keyword``) through attributes alone."""
    candidates = (
        [function]
        if isinstance(function, ast.Lambda)
        else _functions_named(ctx, function.id)
        if isinstance(function, ast.Name)
        else []
    )
    if not candidates:
        return False  # code not in this file: a proxy may break it
    for candidate in candidates:
        parameter = _parameter(candidate, index, keyword)
        if parameter is None or not _used_through_attributes(candidate, parameter):
            return False
    return True


def closure_takes_proxy(ctx: Context, closure: ast.AST, name: str) -> bool:
    """Whether the lambda or nested function ``closure`` uses the variable ``name`` it
    captures through attributes alone."""
    if isinstance(closure, ast.Lambda):
        return _used_through_attributes(closure, name)
    if isinstance(closure, ast.Name):
        tables = ctx.local_def_tables(closure.id)
        return bool(tables) and all(_used_through_attributes(t.node, name) for t in tables)
    return False
