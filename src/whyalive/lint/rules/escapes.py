"""Does a nested function outlive the call that made it? (returned, stored, passed on)

When it does, ``del name`` in the enclosing function would make its next recursive call fail
with ``NameError``, so the 1xx rules then offer only the fixes that keep it working.
"""

from __future__ import annotations

import ast

from whyalive.lint.findings import snippet
from whyalive.lint.rules.shapes import decorator_name, defined_functions
from whyalive.lint.scopes import FUNCTION_NODES, Context, Frame, own_scope_nodes

__all__ = ["escape_of"]

# Builtins that consume a generator expression before they return.
_CONSUMERS = frozenset(
    {"sum", "any", "all", "list", "tuple", "set", "frozenset", "sorted", "min", "max", "dict"}
)
_CONSUMER_METHODS = frozenset({"join", "extend", "update"})
# Decorators that do not hand the function to anyone else.
_SAFE_DECORATORS = frozenset({"lru_cache", "cache", "wraps"})


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
                if decorator_name(deco) not in _SAFE_DECORATORS:
                    return f"decorated with `@{snippet(deco, 30)}`"
    helpers = {name: node for name, node in defined_functions(frame) if id(node) not in members}
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
