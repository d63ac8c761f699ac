"""Scopes of a module being walked, and the scope tables that answer scope questions.

Scope questions (is this name a closure variable? which function owns it?) are answered by
:mod:`whyalive.lint.symbols` from the tree the engine already walks, built lazily: most files
never need it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from whyalive.lint.codetext import CodeText
from whyalive.lint.findings import Advice, Capture, LintFinding, TextEdit, advice_sentence
from whyalive.lint.symbols import (
    COMPREHENSION_NODES,
    FUNCTION_NODES,
    SCOPE_NODES,
    Scope,
    build_scopes,
    child_fields,
    outer_and_inner,
    walk_nodes,
)

__all__ = [
    "COMPREHENSION_NODES",
    "FUNCTION_NODES",
    "FUNCTION_OR_LAMBDA",
    "SCOPE_NODES",
    "Context",
    "Frame",
    "frame_for",
    "outer_and_inner",
    "own_scope_nodes",
    "walk_nodes",
]

FUNCTION_OR_LAMBDA = (*FUNCTION_NODES, ast.Lambda)


@dataclass(eq=False)
class Frame:
    """A scope being walked: the module, a class body, a function, a lambda or a comprehension."""

    node: ast.AST
    kind: str
    parent: Frame | None
    self_name: str | None = None


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


def _in_class(frame: Frame) -> bool:
    outer: Frame | None = frame
    while outer is not None:
        if outer.kind == "class":
            return True
        outer = outer.parent
    return False


def own_scope_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Yield ``nodes`` and their descendants, without entering nested scopes' bodies."""
    stack = list(nodes)
    stack.reverse()
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        yield node
        cls = type(node)
        if cls in _SCOPE_TYPES:
            outer, _ = outer_and_inner(node)
            stack.extend(reversed(outer))
            continue
        for name in child_fields(cls):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in reversed(value):
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)


_SCOPE_TYPES = frozenset(SCOPE_NODES)


@dataclass(frozen=True)
class Rule:
    """A lint rule: its code, message template, the node types it inspects and its check.

    ``may_report`` is its test on the text: false only for a file the rule cannot report
    on, which then need not be parsed for it (``None``: every file is parsed). ``offers``
    names every fix its messages can offer (``Advice.key``); each has a case that runs it in
    tests/lint_cases/advice."""

    code: str
    name: str
    message: str
    node_types: tuple[type[ast.AST], ...]
    check: Callable[[ast.AST, Context], Iterable[LintFinding]]
    default_enabled: bool = True
    explanation: str = ""
    may_report: Callable[[CodeText], bool] | None = None
    offers: tuple[str, ...] = ()


@dataclass(eq=False)
class Context:
    """What a rule may ask while it checks a node: the scope stack, symbol tables, memos."""

    source: str
    filename: str
    frames: list[Frame]
    rule: Rule | None = None
    memo: dict[tuple[str, int], object] = field(default_factory=dict)
    _scopes: dict[int, Scope] | None = None

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
        advice: tuple[Advice, ...] = (),
        **fields: str,
    ) -> LintFinding:
        """Build a finding at ``node`` from the current rule's message template, filled from
        ``found``, ``fields`` and the ``advice`` sentence (its ``{advice}`` field)."""
        assert self.rule is not None
        fields = {**(found or {}), **fields}
        if advice:
            fields["advice"] = advice_sentence(advice)
        return LintFinding(
            self.filename,
            getattr(node, "lineno", 1),
            getattr(node, "col_offset", 0),
            self.rule.code,
            self.rule.message.format(**fields),
            captures,
            edits,
            tuple(a.key for a in advice),
        )

    def frame_table(self, frame: Frame) -> Scope | None:
        """The scope table of ``frame``, built on first use for the outermost function around
        it (with every scope inside), or for a module or class body alone."""
        if self._scopes is None:
            self._scopes = {}
        known = self._scopes.get(id(frame.node))
        if known is not None:
            return known
        top, in_class = frame, False
        outer = frame.parent
        while outer is not None:
            if outer.kind == "class":
                in_class = True
            elif outer.kind != "module":
                top, in_class = outer, False
            outer = outer.parent
        shallow = top.kind in ("module", "class")
        self._scopes.update(build_scopes(top.node, in_class=in_class, shallow=shallow))
        return self._scopes.get(id(frame.node))

    def table_of(self, node: ast.AST) -> Scope | None:
        """The scope table of a scope node that sits directly in the current frame."""
        return self.child_table(self.frame, node)

    def child_table(self, frame: Frame, node: ast.AST) -> Scope | None:
        """The scope table of a scope node that sits in ``frame``."""
        if self.frame_table(frame) is None:
            return None
        assert self._scopes is not None
        known = self._scopes.get(id(node))
        if known is None and frame.kind in ("module", "class"):
            # A function directly in a module or class is the top of its own tables.
            in_class = frame.kind == "class" or _in_class(frame)
            self._scopes.update(build_scopes(node, in_class=in_class))
            known = self._scopes.get(id(node))
        return known

    def frees_of(self, node: ast.AST) -> frozenset[str]:
        """Closure variables of a scope node in the current frame (empty when unknown)."""
        table = self.table_of(node)
        return table.free if table is not None else frozenset()

    def local_def_tables(self, name: str) -> list[Scope]:
        """Tables of functions named ``name`` defined directly in the current frame."""
        table = self.frame_table(self.frame)
        return table.functions_named(name) if table is not None else []
