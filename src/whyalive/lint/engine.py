"""One AST pass over a module, dispatching each node to the rules that asked for its type."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from whyalive.lint.findings import LintFinding, Rule
from whyalive.lint.scopes import SCOPE_NODES, Context, Frame, frame_for, outer_and_inner
from whyalive.lint.symbols import child_fields

__all__ = ["lint_tree"]


_POP = ast.Pass()
_SCOPE_TYPES = frozenset(SCOPE_NODES)


class _Push(ast.AST):
    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame


def _dispatch_table(rules: Iterable[Rule]) -> dict[type[ast.AST], list[Rule]]:
    table: dict[type[ast.AST], list[Rule]] = {}
    for rule in rules:
        for node_type in rule.node_types:
            table.setdefault(node_type, []).append(rule)
    return table


def lint_tree(
    tree: ast.Module, source: str, filename: str, rules: Iterable[Rule]
) -> list[LintFinding]:
    """Run ``rules`` over an already parsed module and return their findings in order."""
    dispatch = _dispatch_table(rules)
    # Leaves no rule asked for are never pushed: they are most of the tree. So are
    # attributes of a name (`self.x`, `torch.nn`), whose only child is that name.
    skip = {ast.Name, ast.Constant}.difference(dispatch)
    attribute = ast.Attribute if ast.Attribute not in dispatch and ast.Name in skip else None
    ctx = Context(source, filename, [Frame(tree, "module", None)])
    findings: list[LintFinding] = []
    stack: list[ast.AST] = list(reversed(tree.body))
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        if node is _POP:
            ctx.frames.pop()
            continue
        cls = type(node)
        if cls is _Push:
            assert isinstance(node, _Push)
            ctx.frames.append(node.frame)
            continue
        wanted = dispatch.get(cls)
        if wanted:
            for rule in wanted:
                ctx.rule = rule
                try:
                    findings.extend(rule.check(node, ctx))
                except Exception as exc:  # one broken rule must not stop the whole run
                    findings.append(
                        LintFinding(
                            filename,
                            getattr(node, "lineno", 1),
                            getattr(node, "col_offset", 0),
                            "WAL000",
                            f"WAL000 internal error in {rule.code}: {type(exc).__name__}: {exc}",
                        )
                    )
        if cls in _SCOPE_TYPES:
            outer, inner = outer_and_inner(node)
            push(_POP)
            stack.extend(reversed(inner))
            push(_Push(frame_for(node, ctx.frame)))
            stack.extend(reversed(outer))
            continue
        for name in child_fields(cls):
            value = getattr(node, name, None)
            if value is None:
                continue
            if type(value) is list:
                for item in reversed(value):
                    kind = type(item)
                    if kind in skip or (kind is attribute and type(item.value) is ast.Name):
                        continue
                    if isinstance(item, ast.AST):
                        push(item)
            else:
                kind = type(value)
                if kind in skip or (kind is attribute and type(value.value) is ast.Name):
                    continue
                if isinstance(value, ast.AST):
                    push(value)
    findings.sort(key=lambda f: (f.line, f.col, f.code))
    return findings
