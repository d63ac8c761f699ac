"""Scopes of a module being walked, and the symbol tables that answer scope questions.

Scope questions (is this name a closure variable? which function owns it?) are answered by
the standard library's :mod:`symtable`, built lazily: most files never need it, and building
it costs about half as much as parsing.
"""

from __future__ import annotations

import ast
import symtable
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from whyalive.lint.findings import Capture, LintFinding, Rule, TextEdit

__all__ = [
    "COMPREHENSION_NODES",
    "FUNCTION_NODES",
    "FUNCTION_OR_LAMBDA",
    "SCOPE_NODES",
    "Context",
    "Frame",
    "frame_for",
    "mangle",
    "outer_and_inner",
    "own_scope_nodes",
    "unmangle",
]

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTION_OR_LAMBDA = (*FUNCTION_NODES, ast.Lambda)
SCOPE_NODES = (*FUNCTION_NODES, ast.Lambda, ast.ClassDef, *COMPREHENSION_NODES)

_TABLE_NAMES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}
_PLAIN_TABLE_TYPES = frozenset({"function", "class", "module"})
_UNRESOLVED = object()


@dataclass(eq=False)
class Frame:
    """A scope being walked: the module, a class body, a function, a lambda or a comprehension."""

    node: ast.AST
    kind: str
    parent: Frame | None
    self_name: str | None = None
    table: object = _UNRESOLVED


def _is_decorated_with(node: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name) and target.id in names:
            return True
        if isinstance(target, ast.Attribute) and target.attr in names:
            return True
    return False


def _first_param(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    params = [*node.args.posonlyargs, *node.args.args]
    return params[0].arg if params else None


def frame_for(node: ast.AST, parent: Frame) -> Frame:
    if isinstance(node, FUNCTION_NODES):
        self_name = None
        if parent.kind == "class" and not _is_decorated_with(node, {"staticmethod", "classmethod"}):
            self_name = _first_param(node)
        return Frame(node, "function", parent, self_name)
    if isinstance(node, ast.Lambda):
        return Frame(node, "lambda", parent)
    if isinstance(node, ast.ClassDef):
        return Frame(node, "class", parent)
    return Frame(node, "comprehension", parent)


def outer_and_inner(node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """Split a scope node's children into those evaluated outside it and those inside it."""
    if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
        args = node.args
        outer: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if isinstance(node, FUNCTION_NODES):
            outer[:0] = node.decorator_list
            every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            outer.extend(a.annotation for a in every if a is not None and a.annotation is not None)
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


def _children(node: ast.AST) -> Iterator[ast.AST]:
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    yield item


def own_scope_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Yield ``nodes`` and their descendants, without entering nested scopes' bodies."""
    stack = list(nodes)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPE_NODES):
            outer, _ = outer_and_inner(node)
            stack.extend(reversed(outer))
        else:
            stack.extend(reversed(list(_children(node))))


@dataclass(eq=False)
class Context:
    """What a rule may ask while it checks a node: the scope stack, symbol tables, memos."""

    source: str
    filename: str
    frames: list[Frame]
    rule: Rule | None = None
    memo: dict[tuple[str, int], object] = field(default_factory=dict)
    _module_table: object = _UNRESOLVED
    _child_index: dict[int, dict[tuple[str, int], list[symtable.SymbolTable]]] = field(
        default_factory=dict
    )
    _node_tables: dict[int, symtable.SymbolTable | None] = field(default_factory=dict)

    @property
    def frame(self) -> Frame:
        """The innermost scope that contains the node being checked."""
        return self.frames[-1]

    def report(
        self,
        node: ast.AST,
        found: Mapping[str, str] | None = None,
        /,
        *,
        captures: tuple[Capture, ...] = (),
        edits: tuple[TextEdit, ...] = (),
        **fields: str,
    ) -> LintFinding:
        """Build a finding at ``node`` from the current rule's message template, filled from
        ``found`` and ``fields``."""
        assert self.rule is not None
        fields = {**(found or {}), **fields}
        return LintFinding(
            self.filename,
            getattr(node, "lineno", 1),
            getattr(node, "col_offset", 0),
            self.rule.code,
            self.rule.message.format(**fields),
            captures,
            edits,
        )

    def frame_table(self, frame: Frame) -> symtable.SymbolTable | None:
        """The symbol table of ``frame`` (``None`` when it cannot be built or matched)."""
        if frame.table is _UNRESOLVED:
            if frame.parent is None:
                frame.table = self._build_module_table()
            else:
                frame.table = self._resolve(frame.node, self.frame_table(frame.parent))
        table = frame.table
        return table if isinstance(table, symtable.SymbolTable) else None

    def table_of(self, node: ast.AST) -> symtable.SymbolTable | None:
        """The symbol table of a scope node that sits directly in the current frame."""
        return self.child_table(self.frame, node)

    def child_table(self, frame: Frame, node: ast.AST) -> symtable.SymbolTable | None:
        """The symbol table of a scope node that sits directly in ``frame``."""
        return self._resolve(node, self.frame_table(frame))

    def frees_of(self, node: ast.AST) -> frozenset[str]:
        """Closure variables of a scope node in the current frame (empty when unknown)."""
        table = self.table_of(node)
        if table is None:
            return frozenset()
        return frozenset(s.get_name() for s in table.get_symbols() if s.is_free())

    def local_def_tables(self, name: str) -> list[symtable.SymbolTable]:
        """Tables of functions named ``name`` defined directly in the current frame."""
        table = self.frame_table(self.frame)
        if table is None:
            return []
        return [
            child
            for child in table.get_children()
            if child.get_name() == name and child.get_type() == "function"
        ]

    def _build_module_table(self) -> symtable.SymbolTable | None:
        if self._module_table is _UNRESOLVED:
            try:
                self._module_table = symtable.symtable(self.source, self.filename, "exec")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._module_table = None
        table = self._module_table
        return table if isinstance(table, symtable.SymbolTable) else None

    def _resolve(
        self, node: ast.AST, parent: symtable.SymbolTable | None
    ) -> symtable.SymbolTable | None:
        key = id(node)
        if key in self._node_tables:
            return self._node_tables[key]
        found = None
        if parent is not None:
            if isinstance(node, (*COMPREHENSION_NODES, ast.Lambda)):
                name = _TABLE_NAMES[type(node)]
            else:
                name = getattr(node, "name", "")
            candidates = self._index(parent).get((name, getattr(node, "lineno", 0)))
            if candidates:
                # Same name on one line (two lambdas): hand them out in walk order.
                found = candidates.pop(0)
            elif isinstance(node, COMPREHENSION_NODES):
                # Inlined comprehensions (PEP 709, 3.12+) live in their parent's table.
                found = parent
        self._node_tables[key] = found
        return found

    def _index(
        self, table: symtable.SymbolTable
    ) -> dict[tuple[str, int], list[symtable.SymbolTable]]:
        index = self._child_index.get(id(table))
        if index is None:
            index = {}
            pending = list(table.get_children())
            while pending:
                child = pending.pop(0)
                if str(child.get_type()) not in _PLAIN_TABLE_TYPES:
                    # Type-parameter and annotation scopes (3.12+) sit between a
                    # scope and its functions; look through them.
                    pending.extend(child.get_children())
                    continue
                index.setdefault((child.get_name(), child.get_lineno()), []).append(child)
            self._child_index[id(table)] = index
        return index


def _private_prefix(frame: Frame) -> str:
    """``_Owner`` for frames inside class ``Owner`` (private names get it), else ``""``."""
    scope: Frame | None = frame
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    owner = getattr(scope.node, "name", "").lstrip("_") if scope is not None else ""
    return f"_{owner}" if owner else ""


def mangle(name: str, frame: Frame) -> str:
    """``name`` as the symbol table spells it inside ``frame`` (private names of a class)."""
    if not name.startswith("__") or name.endswith("__"):
        return name
    return _private_prefix(frame) + name


def unmangle(key: str, frame: Frame) -> str:
    """A symbol table name as the source spells it: the inverse of :func:`mangle`."""
    prefix = _private_prefix(frame)
    if prefix and key.startswith(prefix + "__") and not key.endswith("__"):
        return key[len(prefix) :]
    return key
