"""The traceback remedies: an exception kept without the frames that lead back to its holder.

``drop-traceback`` hands a future the exception without its frames, where the code
stores it: ``fut.set_exception(exc.with_traceback(None))``. That is all the future ever
keeps, unless the future re-raises the exception (``loop.run_until_complete(fut)``,
``await task``): the re-raise gives it a new traceback, through the frames that waited
for it, and those frames may reach the future again. ``clear-traceback`` then drops
that traceback in the handler that catches the re-raise, on the way out of the handler
(``error.__traceback__ = None``): the handler still reads the exception, its message and
its traceback until then. A handler without a name gets one (``except OSError as
error:``); a handler that raises again is not changed (the traceback is the caller's).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from whyalive.analysis.edit_text import (
    EditBuffer,
    Target,
    after_last_use,
    chars,
    exits,
    indent_of,
    new_text,
    uses_name,
)
from whyalive.analysis.statements import DEF_NODES, ParsedFile

_FREE_NAMES = ("error", "exc", "err", "exception")


def drop_traceback(edit: EditBuffer, target: Target) -> bool:
    """``fut.set_exception(exc)`` in ``except ... as exc:`` -> ``exc.with_traceback(None)``."""
    hit = target.hit
    statement = hit.statement
    handler = handler_around(edit.parsed, statement)
    if handler is None or not handler.name:
        return False
    name = handler.name
    holders: Iterable[ast.expr]
    if isinstance(hit.store, ast.Call):
        holders = [*hit.store.args, *(k.value for k in hit.store.keywords)]
    elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        holders = [statement.value]
    else:
        return False
    found = [n for v in holders for n in ast.walk(v) if isinstance(n, ast.Name) and n.id == name]
    if not found:
        return False
    for node in found:
        edit.replace(node, f"{name}.with_traceback(None)")
    edit.cover(statement.lineno, statement.end_lineno or statement.lineno)
    edit.say(
        f"write `{new_text(edit, statement)}`",
        f"the exception is kept without the frames of its traceback (`str({name})` and its "
        "type still say what went wrong), so no frame and none of its locals stay alive "
        "with it.",
    )
    return True


def handler_around(parsed: ParsedFile, node: ast.AST) -> ast.ExceptHandler | None:
    """The ``except`` clause whose body holds ``node``, in the same function."""
    parent = parsed.parents.get(node)
    while parent is not None and not isinstance(parent, (*DEF_NODES, ast.Module)):
        if isinstance(parent, ast.ExceptHandler):
            return parent
        parent = parsed.parents.get(parent)
    return None


def catching_handler(
    function: ast.AST, lineno: int, exception_names: Iterable[str]
) -> ast.ExceptHandler | None:
    """The ``except`` clause of ``function`` that caught an exception raised at ``lineno``:
    the innermost ``try`` whose body holds the line, its first clause naming one of the
    exception's classes (``exception_names``: its MRO's names), ``Exception`` or nothing."""
    names = set(exception_names)
    best: ast.Try | None = None
    for node in ast.walk(function):
        if not isinstance(node, ast.Try) or not node.body:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if first <= lineno <= last and (best is None or first >= best.body[0].lineno):
            best = node
    if best is None:
        return None
    for handler in best.handlers:
        if handler.type is None or names & _caught_names(handler.type):
            return handler
    return None


def _caught_names(node: ast.expr) -> set[str]:
    """``ValueError``, ``(OSError, asyncio.TimeoutError)`` -> their last names."""
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    found = set()
    for part in parts:
        if isinstance(part, ast.Name):
            found.add(part.id)
        elif isinstance(part, ast.Attribute):
            found.add(part.attr)
    return found


def clear_in_handler(edit: EditBuffer, target: Target) -> bool:
    """In the handler that caught a re-raised exception, ``name.__traceback__ = None`` after
    the handler's last use of it (in a ``finally`` when that use leaves the handler)."""
    handler = target.hit.store
    if not isinstance(handler, ast.ExceptHandler) or not handler.body:
        return False
    body = handler.body
    if body[0].lineno == handler.lineno or any(_raises(s) for s in body):
        return False  # `except E: pass` on one line, or a handler that raises again
    edit.at(handler.lineno, target.hit.scope)
    name = handler.name
    if name is None:
        if handler.type is None:
            return False
        taken = {n.id for n in ast.walk(target.hit.scope) if isinstance(n, ast.Name)}
        name = next((n for n in _FREE_NAMES if n not in taken), None)
        if name is None:
            return False
        end = handler.type
        line = end.end_lineno or end.lineno
        edit.insert(line, chars(edit.parsed, line, end.end_col_offset or 0), f" as {name}")
        edit.cover(handler.lineno, line)
    cleanup = f"{name}.__traceback__ = None"
    note = (
        f"the `{_caught(handler)}` keeps no frame of its re-raise, so no local of those frames "
        "leads back to what holds the exception; the handler reads it as before."
    )
    used = [s for s in body if uses_name(s, name) or _calls(s)]
    if used:
        after_last_use(edit, used[-1], cleanup, note)
        return True
    first = body[0]  # nothing in the handler reads the exception: drop the frames first
    edit.insert(first.lineno, 0, f"{indent_of(edit.parsed.lines[first.lineno - 1])}{cleanup}\n")
    edit.cover(handler.lineno, first.lineno)
    caught = "" if handler.type is None else f" {edit.source(handler.type)}"
    named = "" if handler.name else f" (now except{caught} as {name})"
    edit.say(f"write `{cleanup}` first in the handler{named}", note)
    return True


def _caught(handler: ast.ExceptHandler) -> str:
    return ast.unparse(handler.type) if handler.type is not None else "exception"


def _raises(statement: ast.stmt) -> bool:
    return exits(statement) and any(isinstance(n, ast.Raise) for n in ast.walk(statement))


def _calls(statement: ast.stmt) -> bool:
    """A call may read the exception being handled (``logging.exception``, ``sys.exc_info``)."""
    return any(isinstance(n, ast.Call) for n in ast.walk(statement))
