"""Recursion groups of nested functions: who refers to whom, what they capture, do they escape.

A *recursion group* is a strongly connected component of "refers to by name" among the
functions one function defines (``def`` or a lambda assigned to a local): one function that
calls itself, or siblings that call each other. Each group is one cycle through closure
cells, so the 1xx rules report each group once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from whyalive.lint.findings import Capture
from whyalive.lint.rules.captures import group_captures, lookup
from whyalive.lint.rules.escapes import escape_of
from whyalive.lint.rules.shapes import bindings, defined_functions, scope_node
from whyalive.lint.scopes import Context, Frame

__all__ = ["RecursionGroup", "recursion_groups"]


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
    for name, node in defined_functions(frame) if table is not None else []:
        symbol = lookup(table, name)
        child = ctx.child_table(frame, scope_node(node))
        if symbol is None or not symbol.is_local() or child is None:
            continue
        defined.setdefault(name, []).append(node)
        frees.setdefault(name, set()).update(child.free)
    edges = {name: {k for k in frees[name] if k in defined} for name in defined}
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
        cells = {k for name in names for k in frees[name] if k not in names}
        captures = group_captures(ctx, frame, cells, nodes)
        ordered = tuple(dict.fromkeys(_name_of(n) for n in nodes))
        members = frozenset(i for n in nodes for i in (id(n), id(scope_node(n))))
        escape = escape_of(ctx, frame, frozenset(names), members)
        groups[id(nodes[0])] = RecursionGroup(ordered, tuple(nodes), captures, escape)
    ctx.memo[key] = groups
    return groups


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Assign):
        target = node.targets[0]
        assert isinstance(target, ast.Name)
        return target.id
    return str(getattr(node, "name", "?"))
