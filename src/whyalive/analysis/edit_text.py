"""The lines of an edit: replacements at exact positions, and the facts an edit is built on.

:class:`EditBuffer` collects text replacements for one file, by (line, column) in
characters (the AST gives UTF-8 byte columns: :func:`chars` converts), and renders the
contiguous range of whole lines they cover, old and new. :class:`Target` is what
:mod:`whyalive.analysis.fix_edits` knows about the statement behind one label of a cut.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

from whyalive.analysis.naming import is_python
from whyalive.analysis.statements import DEF_NODES, ParsedFile, SourceHit

# An edit spans at most this many lines (two labels stored in one `__init__`).
MAX_EDIT_LINES = 40
_WEAKREF_OFFSET = type.__dict__["__weakrefoffset__"]


@dataclass(frozen=True)
class Target:
    """A cut label's statement and the live facts an edit needs about it."""

    hit: SourceHit
    holder_class: type | None = None
    """The class of the object the loop comes back to (its methods are bound methods)."""
    holder_weak: bool = True
    """Whether that object (the one a proxy would point to) supports weak references."""
    value_weak: bool = True
    """Whether the stored value supports weak references (for wrapping the value)."""
    value_shared: bool = False
    """Other objects of the cycle refer to the stored value too (a list's node that its
    neighbours link to): the value is not a new object built for the holder, so the holder
    may be owned through it and must not be made weak inside it."""
    labels: frozenset[str] = frozenset()
    """Attribute names every one of which this fix weakens (reads of them are weak already)."""
    capture: ast.AST | None = None
    """For a closure variable: the ``def``/``lambda`` that captures it."""
    variable: str | None = None
    """For ``delete``: the variable to delete; for a capture: the captured name."""
    proxy_ok: bool = True
    """Whether the code the stored callable runs (a bound or partial function) works given
    a proxy of the holder where it now gets the holder (it uses it through attributes)."""


def weak_referenceable(obj: object) -> bool:
    """Whether ``weakref.proxy(obj)`` works (read from the type: no user code runs)."""
    try:
        return bool(_WEAKREF_OFFSET.__get__(type(obj)))
    except Exception:
        return False


@dataclass
class EditBuffer:
    """Replacements in one file, by absolute (line, column) in characters."""

    parsed: ParsedFile
    filename: str
    changes: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    first: int = 0
    last: int = 0
    needs: dict[int, tuple[int, set[str]]] = field(default_factory=dict)
    """Modules the changed code uses, by the scope that must import them (its first
    changed line there): ``import weakref`` goes at the top of each function's changes."""
    place: tuple[int, ast.AST | None] = (0, None)
    """The first line and the scope of the statement being changed (set by the caller)."""
    actions: list[str] = field(default_factory=list)
    """What to write, one phrase per statement: "write `...`"."""
    notes: list[str] = field(default_factory=list)
    """Why the program still works and the loop is gone, once per kind of change."""
    deleted: list[str] = field(default_factory=list)
    """The variables the edit deletes (their note names them all, once)."""

    def say(self, action: str, note: str) -> None:
        self.actions.append(action)
        if note and note not in self.notes:
            self.notes.append(note)

    def cover(self, first: int, last: int) -> None:
        self.first = min(self.first or first, first)
        self.last = max(self.last, last)

    def at(self, line: int, scope: ast.AST | None) -> None:
        """The statement changed next starts at ``line`` in ``scope``."""
        self.place = (line, scope)

    def need(self, *modules: str) -> None:
        """The change just made uses these modules (imported in its scope if the file does
        not import them at module level)."""
        line, scope = self.place
        missing = {m for m in modules if not imports_module(self.parsed.tree, m)}
        if not missing:
            return
        first, wanted = self.needs.get(id(scope), (line, set()))
        self.needs[id(scope)] = (min(first, line), wanted | missing)

    @property
    def imports(self) -> set[str]:
        """Every module the edit imports."""
        return {m for _, modules in self.needs.values() for m in modules}

    def replace(self, node: ast.AST, text: str) -> None:
        """Replace the source of ``node`` with ``text``."""
        start = (node.lineno, chars(self.parsed, node.lineno, node.col_offset))  # type: ignore[attr-defined]
        end_line = node.end_lineno  # type: ignore[attr-defined]
        end = (end_line, chars(self.parsed, end_line, node.end_col_offset))  # type: ignore[attr-defined]
        self.changes.append((*start, *end, text))

    def insert(self, line: int, column: int, text: str) -> None:
        self.changes.append((line, column, line, column, text))

    def source(self, node: ast.AST) -> str:
        """The exact source text of ``node`` (its lines only: not the whole file again)."""
        first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        lines = self.parsed.lines[first - 1 : last]
        start = chars(self.parsed, first, node.col_offset)  # type: ignore[attr-defined]
        end = chars(self.parsed, last, node.end_col_offset)  # type: ignore[attr-defined]
        if len(lines) == 1:
            return lines[0][start:end]
        return lines[0][start:] + "".join(lines[1:-1]) + lines[-1][:end]

    def render(self) -> tuple[str, str] | None:
        """(old, new) for lines ``first`` .. ``last``, or None when the edit is too big."""
        # An import goes above the first change of its scope, which may be above every change.
        self.first = min([self.first, *(at for at, _ in self.needs.values())])
        if not self.changes or self.last - self.first + 1 > MAX_EDIT_LINES:
            return None
        lines = self.parsed.lines[self.first - 1 : self.last]
        old = "".join(lines)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        changes = list(self.changes)
        for at, modules in self.needs.values():
            indent = indent_of(self.parsed.lines[at - 1])
            imports = "".join(f"{indent}import {module}\n" for module in sorted(modules))
            changes.append((at, 0, at, 0, imports))
        new = applied(old, starts, self.first, changes)
        return old.rstrip("\n"), new.rstrip("\n")


def parses_in_place(edit: EditBuffer, new: str) -> bool:
    """The file with the edit applied still parses: checked on the module-level statements
    the edit touches (a function or class), not the whole file again."""
    lines = edit.parsed.lines
    around = [
        node
        for node in edit.parsed.tree.body
        if node.lineno <= edit.last and (node.end_lineno or node.lineno) >= edit.first
    ]
    start = min([edit.first, *(_first_line_of(node) for node in around)])
    end = max([edit.last, *((node.end_lineno or node.lineno) for node in around)])
    text = "".join(lines[start - 1 : edit.first - 1]) + new + "\n" + "".join(lines[edit.last : end])
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _first_line_of(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def parameters(scope: ast.AST) -> set[str]:
    if not isinstance(scope, (*DEF_NODES, ast.Lambda)):
        return set()
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every}


def applied(
    text: str, starts: list[int], first: int, changes: list[tuple[int, int, int, int, str]]
) -> str:
    """``text`` (lines from ``first``, each starting at ``starts[i]``) with the changes made,
    last first so earlier positions stay valid."""
    for line, col, end_line, end_col, new in sorted(changes, reverse=True):
        start = starts[line - first] + col
        end = starts[end_line - first] + end_col
        text = text[:start] + new + text[end:]
    return text


def chars(parsed: ParsedFile, line: int, byte_col: int) -> int:
    """A column in characters from the AST's UTF-8 byte offset."""
    text = parsed.lines[line - 1]
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    return first if is_python(first) else " ".join(text.split())


def new_text(edit: EditBuffer, statement: ast.stmt) -> str:
    """The statement's text with the edit's changes that fall inside it, on one line."""
    first = statement.lineno
    last = statement.end_lineno or first
    lines = edit.parsed.lines[first - 1 : last]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    # Only this statement's span: `h = Holder(); h.me = h` holds two statements on one line.
    begin = chars(edit.parsed, first, statement.col_offset)
    end = starts[last - first] + (
        chars(edit.parsed, last, statement.end_col_offset)
        if statement.end_col_offset is not None
        else len(lines[-1])
    )
    text = " " * begin + "".join(lines)[begin:end]
    inside = [
        c
        for c in edit.changes
        if (first, begin) <= (c[0], c[1])
        and c[2] <= first + len(lines) - 1
        and starts[c[2] - first] + c[3] <= end
    ]
    text = textwrap.dedent(applied(text, starts, first, inside))
    try:
        # The statement without a trailing comment (`# type: ignore[...]` is not the fix).
        tree = ast.parse(text)
        text = ast.get_source_segment(text, tree.body[0]) or text
    except (SyntaxError, ValueError):
        pass
    joined = " ".join(part.strip() for part in text.strip().splitlines())
    return joined if is_python(joined) else text.strip()


def header_text(edit: EditBuffer, function: ast.AST) -> str:
    """A ``def``'s header (``def f(a, *, b=1):``) with the edit's changes, on one line."""
    first = function.lineno  # type: ignore[attr-defined]
    body = function.body  # type: ignore[attr-defined]
    last = max(first, body[0].lineno - 1) if body else first
    lines = edit.parsed.lines[first - 1 : last]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    inside = [c for c in edit.changes if first <= c[0] and c[2] <= last]
    text = applied("".join(lines), starts, first, inside)
    header = " ".join(part.strip() for part in text.strip().splitlines())
    return header.partition("#")[0].strip() if "#" in header else header


def imports_module(tree: ast.Module, module: str) -> bool:
    """A top-level ``import weakref`` (not under another name)."""
    return any(
        isinstance(node, ast.Import)
        and any(alias.name == module and alias.asname in (None, module) for alias in node.names)
        for node in tree.body
    )


def uses_name(node: ast.AST, variable: str) -> bool:
    """``variable`` read or written in ``node`` (a ``del`` of it is no use)."""
    return any(
        isinstance(n, ast.Name) and n.id == variable and not isinstance(n.ctx, ast.Del)
        for n in ast.walk(node)
    )


def exits(statement: ast.stmt) -> bool:
    """A ``return`` or ``raise`` in the statement (not in a function nested in it)."""
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Raise)):
            return True
        if not isinstance(node, (*DEF_NODES, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def after_last_use(edit: EditBuffer, last: ast.stmt, cleanup: str, note: str) -> None:
    """``cleanup`` (``del fn``) right after ``last``, or, when ``last`` leaves the block (a
    ``return``, a ``raise``), in a ``finally`` around it: it runs on the way out."""
    indent = indent_of(edit.parsed.lines[last.lineno - 1])
    end = last.end_lineno or last.lineno
    if exits(last):
        text = edit.source(last)
        first, *rest = text.splitlines()
        # The first line starts at the statement's column; the others carry their indent.
        body = f"{indent}    {first}" + "".join(
            f"\n    {line}" if line.strip() else "\n" for line in rest
        )
        edit.replace(last, f"try:\n{body}\n{indent}finally:\n{indent}    {cleanup}")
        edit.cover(last.lineno, end)
        edit.say(
            f"wrap `{first_line(text)}` in try/finally and `{cleanup}` in the finally block",
            note,
        )
        return
    line_text = edit.parsed.lines[end - 1]
    edit.insert(end, len(line_text.rstrip("\r\n")), f"\n{indent}{cleanup}")
    edit.cover(end, end)
    edit.say(f"add `{cleanup}` after its last use ({_statement_words(edit, last)})", note)


_KEYWORDS: dict[type, str] = {
    ast.If: "if", ast.For: "for", ast.AsyncFor: "async for", ast.While: "while",
    ast.Try: "try", ast.With: "with", ast.AsyncWith: "async with",
    **({ast.Match: "match"} if hasattr(ast, "Match") else {}),
    **({ast.TryStar: "try"} if hasattr(ast, "TryStar") else {}),
}  # fmt: skip


def _statement_words(edit: EditBuffer, statement: ast.stmt) -> str:
    """A simple statement quoted as code; a compound one (a `try` block joined onto one line
    is no Python) named by its keyword and lines."""
    keyword = _KEYWORDS.get(type(statement))
    if keyword is None:
        return f"`{first_line(edit.source(statement))}`"
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"the {keyword} statement at {lines}"


# Builtins that treat a proxy as its object (the proxy forwards what they call).
_PROXY_BUILTINS = frozenset(
    ("len", "str", "bool", "iter", "float", "int", "abs", "getattr", "setattr", "hasattr")
)


def proxy_uses(function: ast.AST, name: str) -> list[tuple[ast.expr, int | str]] | None:
    """The calls ``function`` passes ``name`` on to (callee, position or keyword), when every
    other use works the same given a ``weakref.proxy``: reading or setting an attribute,
    reading an item, calling it, an operator or comparison (a proxy unwraps both operands)
    or a builtin that forwards to it (``len``, ``str``). None when a use would break: a
    proxy is not its object to ``type()``, ``is``, ``isinstance``/``issubclass``,
    ``id``/``hash``, and returning, storing or rebinding it is refused."""
    if getattr(function, "args", None) is None or getattr(function, "body", None) is None:
        return None
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    passed: list[tuple[ast.expr, int | str]] = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = parents.get(node)
        if not isinstance(node.ctx, ast.Load):
            return None
        if isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
            continue
        if isinstance(parent, ast.Call) and (parent.func is node or _forwarding(parent)):
            continue
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            continue
        if isinstance(parent, ast.Compare) and not any(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops
        ):
            continue
        if isinstance(parent, ast.Call) and node in parent.args:
            passed.append((parent.func, parent.args.index(node)))
            continue
        keyword = parents.get(parent) if isinstance(parent, ast.keyword) else None
        if isinstance(keyword, ast.Call) and isinstance(parent, ast.keyword) and parent.arg:
            passed.append((keyword.func, parent.arg))
            continue
        return None
    return passed


def _forwarding(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id in _PROXY_BUILTINS
