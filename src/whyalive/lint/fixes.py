"""Always-safe fixes as text edits: built by rules, applied by ``whyalive lint --fix``.

Edits are insertions at token positions, so the rest of the file (formatting, comments) is
kept byte for byte. A file is written only if the edited text still compiles.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import io
import tokenize
from collections.abc import Iterable

from whyalive.lint.findings import TextEdit
from whyalive.lint.scopes import FUNCTION_NODES

__all__ = ["SourceTokens", "apply_edits", "self_argument_edits", "unified_diff"]

_LAYOUT = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)


class SourceTokens:
    """The significant tokens of a module (or of its lines ``first`` to ``last``, a whole
    statement), found by position."""

    def __init__(self, source: str, first: int = 1, last: int | None = None) -> None:
        self.lines = source.split("\n")
        text = "\n".join(self.lines[first - 1 : last]) + "\n"
        self.tokens = [
            t._replace(
                start=(t.start[0] + first - 1, t.start[1]), end=(t.end[0] + first - 1, t.end[1])
            )
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in _LAYOUT
        ]
        self._starts = [t.start for t in self.tokens]

    def char_col(self, line: int, byte_col: int) -> int:
        """An AST column (UTF-8 bytes) as a column in characters."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def index_at(self, line: int, col: int) -> int:
        """The index of the token that starts at ``(line, col)`` (characters)."""
        index = bisect.bisect_left(self._starts, (line, col))
        if index == len(self.tokens) or self._starts[index] != (line, col):
            raise LookupError((line, col))
        return index

    def closing_paren(self, node: ast.Call) -> int:
        """The index of the ``)`` that ends a call ``node``."""
        line, col = node.end_lineno or 0, node.end_col_offset or 0
        return self.index_at(line, self.char_col(line, col) - 1)


def _insert_before_close(tokens: SourceTokens, close: int, text: str) -> TextEdit:
    """Add one item (``text``) at the end of the bracketed list that ``close`` ends."""
    before = tokens.tokens[close - 1]
    line, col = before.end
    if before.string == "(":
        return TextEdit(line, col, text)
    if before.string == ",":
        return TextEdit(line, col, f" {text},")
    return TextEdit(line, col, f", {text}")


def _signature_edit(
    tokens: SourceTokens, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> TextEdit:
    """Add keyword-only parameter ``name`` to the signature of ``node``."""
    name_at = tokens.index_at(node.lineno, tokens.char_col(node.lineno, node.col_offset))
    while tokens.tokens[name_at].string != node.name:
        name_at += 1
    depth, opened, kwarg_at = 0, None, None
    close = name_at
    for close in range(name_at + 1, len(tokens.tokens)):
        token = tokens.tokens[close]
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            depth += 1
            if depth == 1 and token.string == "(":
                opened = close
        elif token.string in ")]}":
            depth -= 1
            if depth == 0 and opened is not None:
                break
        elif token.string == "**" and depth == 1 and opened is not None:
            kwarg_at = close  # the last one at depth 1 starts `**kwargs`
    args = node.args
    keyword_only = args.vararg is not None or bool(args.kwonlyargs)
    if kwarg_at is not None and args.kwarg is not None:
        line, col = tokens.tokens[kwarg_at].start
        return TextEdit(line, col, f"{name}, " if keyword_only else f"*, {name}, ")
    return _insert_before_close(tokens, close, name if keyword_only else f"*, {name}")


def self_argument_edits(
    tokens: SourceTokens,
    outer: ast.AST,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[TextEdit, ...]:
    """Make nested function ``node`` take itself as a keyword-only argument.

    Every call ``walk(...)`` inside ``outer`` becomes ``walk(..., walk=walk)`` and the
    signature gains ``*, walk``: inside ``walk`` the name is then its own parameter, not a
    closure cell of ``outer``, so no cycle is made. Returns no edits when some call already
    passes a keyword of that name.
    """
    name = node.name
    edits = [_signature_edit(tokens, node, name)]
    for sub in ast.walk(outer):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
            if any(k.arg == name for k in sub.keywords):
                return ()
            edits.append(_insert_before_close(tokens, tokens.closing_paren(sub), f"{name}={name}"))
    return tuple(edits)


def apply_edits(source: str, edits: Iterable[TextEdit]) -> str:
    """``source`` with every insertion made (later positions first, so none moves another)."""
    lines = source.split("\n")
    for edit in sorted(set(edits), reverse=True):
        text = lines[edit.line - 1]
        lines[edit.line - 1] = text[: edit.col] + edit.text + text[edit.col :]
    return "\n".join(lines)


def compiles(source: str, filename: str) -> bool:
    """Whether ``source`` still compiles (the last check before a fixed file is written)."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def unified_diff(path: str, before: str, after: str) -> str:
    """The change as a unified diff with ``a/`` and ``b/`` paths, as ``git diff`` prints it."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
        )
    )


def is_fixable_def(node: ast.AST) -> bool:
    """A plain (undecorated) ``def``: the only shape :func:`self_argument_edits` handles."""
    return isinstance(node, FUNCTION_NODES) and not node.decorator_list
