"""Containers only ever filled with light values: ``names = set()`` then ``names.add(s.strip())``.

A container is light when every use of its name, in its function and the functions inside
it, reads it or puts light values in it; handing it to other code (``f(names)``,
``other = names``, ``return names``) could fill it with anything."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from whyalive.lint.rules.annotations import words
from whyalive.lint.rules.item_uses import items_read_as_scalars, says_scalar
from whyalive.lint.scopes import FUNCTION_OR_LAMBDA

if TYPE_CHECKING:
    from whyalive.lint.rules.weight import Weigher

__all__ = ["FILLERS", "only_filled_with_light"]


# Container methods that put their arguments in; methods that only read.
FILLERS = frozenset(
    {"append", "appendleft", "add", "extend", "extendleft", "insert", "update", "setdefault"}
)
_READERS = words(
    """
    get keys values items copy index count pop popleft popitem discard remove clear
    difference union intersection issubset issuperset isdisjoint symmetric_difference
    difference_update intersection_update sort reverse __contains__ __len__
    """
)
_READING_BUILTINS = words(
    """
    len sorted list tuple set frozenset any all sum min max enumerate zip iter reversed
    print repr str bool isinstance
    """
)
# Where a use of a container only reads it (tests, loops, f-strings, indexes).
_READING_PARENTS = (
    *(ast.Compare, ast.BoolOp, ast.UnaryOp, ast.If, ast.While, ast.IfExp, ast.Assert),
    *(ast.FormattedValue, ast.For, ast.AsyncFor, ast.comprehension, ast.Delete),
    *(ast.Subscript, ast.Expr),
)


def only_filled_with_light(
    w: Weigher, function: ast.AST, name: str, trusted: frozenset[str]
) -> bool:
    """Whether every use of ``name`` in ``function`` (and functions in it) only reads it
    or puts light values in it: never hands it to code that could fill it. A value named as
    a number or a string (``m.head_dim``) counts as light when the items are read only as
    such (:mod:`.item_uses`)."""
    named: list[ast.AST] = []  # values light by their names, items taken out by index
    stack: list[tuple[ast.AST, ast.AST, ast.AST]] = [(function, function, function)]
    while stack:
        node, parent, where = stack.pop()
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load) and not _reads_or_fills(
                w, node, parent, where, trusted, named
            ):
                return False
            continue
        if node is not function and isinstance(node, FUNCTION_OR_LAMBDA):
            if name in w.scope(node).bound:
                continue  # its own variable of that name
            where = node
        children = ast.iter_child_nodes(node)
        stack.extend((child, node, where) for child in children)
    return not named or items_read_as_scalars(w, function, name)


def _light_fill(
    w: Weigher, value: ast.AST, where: ast.AST, trusted: frozenset[str], named: list[ast.AST]
) -> bool:
    if w.light(value, where, trusted):
        return True
    if says_scalar(value):
        named.append(value)
        return True
    return False


def _reads_or_fills(
    w: Weigher,
    node: ast.AST,
    parent: ast.AST,
    where: ast.AST,
    trusted: frozenset[str],
    named: list[ast.AST],
) -> bool:
    parents = w.parents(where)
    # Climb through `x[k]` and `x.attr` to the expression that uses the value.
    used: ast.AST = node
    while isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is used:
        if isinstance(parent, ast.Attribute):
            call = parents.get(id(parent))
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr in FILLERS:
                    return all(
                        _light_fill(w, a, where, trusted, named)
                        for a in (*call.args, *(k.value for k in call.keywords))
                    )
                return parent.attr in _READERS
        if isinstance(parent.ctx, ast.Del):
            return True
        if isinstance(parent.ctx, ast.Store):
            store = parents.get(id(parent))
            value = getattr(store, "value", None)
            return value is not None and _light_fill(w, value, where, trusted, named)
        taker = parents.get(id(parent))
        if (
            isinstance(parent, ast.Subscript)
            and isinstance(taker, ast.Assign)
            and [type(t) for t in taker.targets] == [ast.Name]
        ):
            # `dim = dims[i]`: an item taken out, fine when items are read as numbers
            # or strings (and nothing can fill them through the new name).
            named.append(parent)
            return True
        used, parent = parent, parents.get(id(parent), parent)
    if isinstance(parent, ast.AugAssign) and parent.target is used:
        return _light_fill(w, parent.value, where, trusted, named)
    if isinstance(parent, ast.Call):
        if used is parent.func:
            return True
        return (isinstance(parent.func, ast.Name) and parent.func.id in _READING_BUILTINS) or (
            isinstance(parent.func, ast.Attribute) and parent.func.attr == "join"
        )
    return isinstance(parent, _READING_PARENTS)
