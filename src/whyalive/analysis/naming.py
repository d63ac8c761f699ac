"""How the analysis finds the user's names: closure variables, code expressions, chains.

It reads the live cycle; the phrasing of what it finds is :mod:`whyalive.words`.
Shared by the patterns, the source-line search and the report builder, so a cycle is
named the same way in its summary, its cut and its fix.
"""

from __future__ import annotations

import ast
import functools
import types
from collections import deque

from whyalive.analysis.node_names import code_qualname, name_node
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.guarded import type_module, type_qualname
from whyalive.words import chain_words, quoted_label
from whyalive.words import edge_kinds as ek


def label(view: CycleView, node: int, variable: str | None = None) -> str:
    """``function `f.<locals>.g` (file.py:12)``: how a sentence names a node."""
    named = name_node(view.obj(node), variable)
    return quoted_label(named.label, named.location)


def qualname_of(obj: object) -> str:
    """The qualified name of a function's or method's code, else the type's name."""
    if type(obj) is types.MethodType:
        obj = obj.__func__
    if type(obj) is types.FunctionType:
        # A plain function's __qualname__ is a C-level slot: no user code runs.
        return str(obj.__qualname__)
    return type_qualname(type(obj))


def code_qualname_of(obj: object) -> str:
    """The qualified name of the code a function runs, where its ``def`` is
    (``add_logging.<locals>.forward``): ``functools.wraps`` rewrites ``__qualname__``, never
    the code's. Else :func:`qualname_of`; a method's attribute name is its ``__qualname__``'s
    (a decorator's wrapper runs other code under the method's name)."""
    if type(obj) is types.MethodType:
        obj = obj.__func__
    if type(obj) is types.FunctionType:
        return code_qualname(obj.__code__, obj)
    return qualname_of(obj)


def enclosing_function(qualname: str) -> str:
    """``stage_backward.<locals>.helper`` -> ``stage_backward``."""
    head, sep, _ = qualname.rpartition(".<locals>.")
    return head if sep else qualname


def cell_variable(view: CycleView, cell: int) -> str | None:
    """The closure variable a cell stands for, from a function that holds it."""
    for edge in view.edges_into(cell):
        if edge.name.kind == ek.CLOSURE:
            return edge.name.name.split(" ", 1)[1]
    return view.closure_variable(view.obj(cell))


def chain(view: CycleView, start: int, goal: int) -> list[NamedEdge]:
    """Shortest chain of shown edges from ``start`` to ``goal`` inside the cycle."""
    parent: dict[int, NamedEdge | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal and node != start:
            break
        for edge in view.edges_from(node):
            if edge.target not in parent or (edge.target == goal == start):
                parent[edge.target] = edge
                if edge.target == goal:
                    queue.clear()
                    break
                queue.append(edge.target)
    if goal not in parent or parent[goal] is None:
        return []
    steps: list[NamedEdge] = []
    node = goal
    while True:
        step = parent[node]
        if step is None:
            break
        steps.append(step)
        node = step.source
        if node == start:
            break
    return steps[::-1]


def path_words(view: CycleView, steps: list[NamedEdge]) -> str:
    """``.cb`` or ``.hooks -> [0]``: the names along a chain of references."""
    return chain_words([edge.name.name for edge in steps])


def captured_variables(view: CycleView, fn_node: int, skip: str | None) -> list[str]:
    """Closure variables of a function other than ``skip``."""
    fn = view.obj(fn_node)
    if type(fn) is not types.FunctionType:
        return []
    return [name for name in fn.__code__.co_freevars if name != skip]


def variable_of(edge: NamedEdge) -> str:
    """``me`` for ``local me``; the edge's name otherwise."""
    name = edge.name.name
    return name.split(" ", 1)[1] if name.startswith("local ") else name


def accessor(edge: NamedEdge) -> str | None:
    """The Python that follows this reference: ``.cb``, ``['k']``, ``[3]``; ``""`` for a cell.

    None when the reference has no spelling in code (a set item, a frame's local, a
    truncated key).
    """
    name, kind = edge.name.name, edge.name.kind
    if kind == ek.CELL:
        return ""
    if kind == ek.ATTRIBUTE and name[1:].isidentifier():
        return name
    if kind in (ek.KEY, ek.INDEX) and name.startswith("[") and is_python(f"x{name}"):
        return name
    return None


def expression(base: str, steps: list[NamedEdge]) -> str | None:
    """``base`` followed by each step's accessor: ``self.hooks[0]``; None if one has none."""
    parts = [base]
    for step in steps:
        part = accessor(step)
        if part is None:
            return None
        parts.append(part)
    return "".join(parts)


def deletion(view: CycleView, base: str, steps: list[NamedEdge]) -> str | None:
    """What ``del`` can take out to drop the end of ``steps``: the whole chain when its last
    step is an entry of a mutable container or an attribute, else the longest part of it
    that is (``self._cache[0]`` for ``self._cache[0][1]``: a tuple's items cannot be
    deleted; ``self.encoders`` for ``self.encoders['json']`` when another entry of that dict
    closes the loop too); None when no part can be."""
    for end in range(len(steps), 0, -1):
        step = steps[end - 1]
        holder = type(view.obj(step.source))
        if step.name.kind in (ek.KEY, ek.INDEX) and issubclass(holder, _IMMUTABLE):
            continue
        if step.name.kind in (ek.KEY, ek.INDEX) and len(view.edges_from(step.source)) > 1:
            continue  # `{"json": self.to_json, "csv": self.to_csv}`: one entry out frees nothing
        if step.name.kind == ek.ATTRIBUTE and step.name.name.startswith(".__"):
            continue  # `.__wrapped__`: a wrapper keeps what it wraps in a slot of its own too
        if step.name.kind not in (ek.ATTRIBUTE, ek.KEY, ek.INDEX):
            continue
        return expression(base, steps[:end])
    return None


# Containers whose entries no `del` can remove.
_IMMUTABLE = (tuple, frozenset, str, bytes, types.MappingProxyType)


@functools.lru_cache(maxsize=4096)  # keys and indexes repeat across thousands of paths
def is_python(text: str) -> bool:
    """True when ``text`` parses as a Python expression or statement."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def short_name(qualname: str) -> str:
    """``f.<locals>.Model.forward`` -> ``Model.forward``: the part a reader can write."""
    return qualname.rpartition(".<locals>.")[2]


def is_instance_node(obj: object) -> bool:
    """True for an instance of a user class (not a builtin, a class or an exception)."""
    cls = type(obj)
    return type_module(cls) != "builtins" and not issubclass(cls, (type, BaseException))


def holder_code(view: CycleView, node: int) -> str | None:
    """How the user's code names ``node``: a variable holding it, else ``self`` for an instance."""
    for edge in view.edges_into(node):
        if edge.name.kind in (ek.LOCAL, ek.CELL):
            named = reference_code(view, edge, owner=False)
            if named:
                return named
    if is_instance_node(view.obj(node)):
        return "self"
    for edge in view.edges_into(node):
        if edge.name.kind == ek.ATTRIBUTE and is_instance_node(view.obj(edge.source)):
            return expression("self", [edge])
    return None


def reference_code(view: CycleView, edge: NamedEdge, *, owner: bool = True) -> str | None:
    """The expression that names the reference ``edge``: ``frame``, ``self.cb``, ``xs[0]``.

    None when the code has no name for it (an interpreter link, an unnamed holder).
    """
    kind = edge.name.kind
    if kind == ek.LOCAL:
        name = variable_of(edge)
        return name if name.isidentifier() else None
    if kind == ek.CELL:
        return cell_variable(view, edge.source)
    if kind in (ek.ATTRIBUTE, ek.KEY, ek.INDEX) and owner:
        base = holder_code(view, edge.source)
        return expression(base, [edge]) if base else None
    return None
