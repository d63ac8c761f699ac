"""What a container holds, read from how its items are used: ``dims.append(m.head_dim)``,
then only ``len(dims)``, ``d // 2 for d in dims`` and ``f"{d}"``.

A value filled in from an attribute or variable whose name says it is a number or a string
(``head_dim``, ``num_layers``, ``name``, ``prefix``) is light when every read of the
container's items also says so: the items are compared, formatted, used in arithmetic with a
literal, given to ``int()``/``range()``/``len()``, used as a key, or given to a string method.
Each alone is weak (a tensor can be compared, or summed); together they are the evidence.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from whyalive.lint.rules.annotations import words
from whyalive.lint.scopes import FUNCTION_OR_LAMBDA

if TYPE_CHECKING:
    from whyalive.lint.rules.weight import Weigher

__all__ = ["items_read_as_scalars", "says_scalar"]

# Last words of names that hold a number, a size or a string.
_SCALAR_WORDS = words(
    """
    dim dims ndim size sizes numel count counts len length lengths rank ranks name names
    key keys path paths prefix suffix dtype device step steps epoch epochs width height
    depth
    """
)
_SCALAR_PREFIXES = ("num_", "n_", "is_", "has_", "use_")
# Calls whose arguments are read as numbers or strings.
_SCALAR_CALLS = words(
    "int float str bool range round abs len hash isinstance divmod min max print chr ord"
)
_STRING_METHODS = words(
    """
    strip lstrip rstrip lower upper startswith endswith split rsplit replace format
    isdigit isidentifier join partition rpartition removeprefix removesuffix is_integer
    bit_length
    """
)
# Calls that give back one item of the container, or its items in another order.
_ITEM_CALLS = words("min max sum")
_ITEM_METHODS = words("pop popleft get")
_REORDERING = words("sorted reversed list tuple set iter")
_TRUTH_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)


def says_scalar(expr: ast.AST) -> bool:
    """Whether ``expr`` is an attribute or variable whose name says number or string."""
    if isinstance(expr, ast.Attribute):
        name = expr.attr
    elif isinstance(expr, ast.Name):
        name = expr.id
    else:
        return False
    name = name.lower().strip("_")
    return name.rsplit("_", 1)[-1] in _SCALAR_WORDS or name.startswith(_SCALAR_PREFIXES)


def items_read_as_scalars(w: Weigher, function: ast.AST, name: str) -> bool:
    """Whether the container ``name`` of ``function`` has its items read (at least once),
    and only as numbers or strings, there and in the functions inside it."""
    read = False
    stack: list[tuple[ast.AST, ast.AST]] = [(function, function)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            items = _items(node, w.parents(where))
            if items is None:
                continue  # read as a whole: `len(dims)`, `if dims`, `x in dims`, a fill
            if not items or not all(_scalar(w, item, where, 0) for item in items):
                return False
            read = True
            continue
        if node is not function and isinstance(node, FUNCTION_OR_LAMBDA):
            if name in w.scope(node).bound:
                continue
            where = node
        stack.extend((child, where) for child in ast.iter_child_nodes(node))
    return read


def _items(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST] | None:
    """The expressions or loop targets that hold items of the container ``node`` reads;
    ``None`` when the read does not take items out (``[]``: items go where this module does
    not follow them)."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        called = parent.func.id
        if called in _REORDERING and node in parent.args:
            return _loop_targets(parent, parents.get(id(parent)))
        if called in _ITEM_CALLS and node in parent.args:
            return [parent]
        return None if called in ("len", "bool", "any", "all", "isinstance") else []
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = parents.get(id(parent))
        if parent.attr in _ITEM_METHODS and isinstance(call, ast.Call) and call.func is parent:
            return [call]
        if parent.attr == "join":
            return []
        return None  # fills and other whole-container methods: judged by the caller
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return [parent] if isinstance(parent.ctx, ast.Load) else None
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
        return _loop_targets(node, parent)
    if isinstance(parent, ast.FormattedValue):
        return [node]  # the items are formatted
    return None


def _loop_targets(iterable: ast.AST, loop: ast.AST | None) -> list[ast.AST]:
    if isinstance(loop, (ast.For, ast.AsyncFor, ast.comprehension)) and loop.iter is iterable:
        return [loop.target] if isinstance(loop.target, ast.Name) else []
    return []


def _scalar(w: Weigher, item: ast.AST, where: ast.AST, depth: int) -> bool:
    """Whether every use of ``item`` (an expression, or a loop target name) reads it as a
    number or a string."""
    if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
        return _name_read_as_scalar(w, item.id, where, depth)
    parents = w.parents(where)
    parent = parents.get(id(item))
    if isinstance(parent, (ast.FormattedValue, ast.Compare, ast.BoolOp, ast.UnaryOp)):
        return True
    if isinstance(parent, _TRUTH_TESTS):
        return parent.test is item
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is item else parent.left
        return isinstance(other, ast.Constant) and isinstance(other.value, (int, float, str))
    if isinstance(parent, ast.Call):
        func = parent.func
        if isinstance(func, ast.Name):
            return func.id in _SCALAR_CALLS and item in parent.args
        return isinstance(func, ast.Attribute) and func.attr == "join"
    if isinstance(parent, ast.Attribute):  # `d.startswith("x")`
        call = parents.get(id(parent))
        return parent.attr in _STRING_METHODS and isinstance(call, ast.Call) and call.func is parent
    if isinstance(parent, ast.Subscript):
        return parent.slice is item  # used as a key or an index
    if (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
        and depth < 3
    ):
        return _name_read_as_scalar(w, parent.targets[0].id, where, depth + 1)
    return False


def _name_read_as_scalar(w: Weigher, name: str, where: ast.AST, depth: int) -> bool:
    """Whether the variable ``name`` is read in ``where`` (comprehensions included), and
    only as a number or a string."""
    found = False
    stack: list[ast.AST] = [where]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            if not _scalar(w, node, where, depth):
                return False
            found = True
            continue
        if node is where or not isinstance(node, FUNCTION_OR_LAMBDA):
            stack.extend(ast.iter_child_nodes(node))
    return found
