"""A captured object held weakly: ``def f(a, *, self=weakref.proxy(self)):``.

A nested ``def`` or a lambda that captures the object its loop comes back to takes it
as a keyword-only default holding a ``weakref.proxy`` instead of a closure cell: the
body reads the name as before, but the function no longer keeps the object alive. Part
of the ``weaken`` remedy (:mod:`whyalive.analysis.fix_weaken`).
"""

from __future__ import annotations

import ast

from whyalive.analysis.edit_text import EditBuffer, chars, header_text, new_text
from whyalive.analysis.statements import DEF_NODES


def weak_capture(edit: EditBuffer, function: ast.AST, variable: str, *, say: bool = True) -> bool:
    """``def f(a):`` -> ``def f(a, *, self=weakref.proxy(self)):``: the function takes the
    captured object as a keyword-only default holding a weak proxy, not as a closure cell."""
    if not isinstance(function, (*DEF_NODES, ast.Lambda)):
        return False
    if not _bound_before(edit, function, variable):
        return False
    if isinstance(function, DEF_NODES):  # its own statement: the import goes above it
        decorated = [function.lineno, *(d.lineno for d in function.decorator_list)]
        edit.at(min(decorated), edit.parsed.enclosing(function))
    else:  # a lambda: the import goes above the statement that holds it
        written = edit.parsed.statement_of(function)
        edit.at(written.lineno, edit.parsed.enclosing(written))
    args = function.args
    default = f"{variable}=weakref.proxy({variable})"
    has_star = args.vararg is not None or bool(args.kwonlyargs)
    if args.kwarg is not None:
        line, col = args.kwarg.lineno, chars(edit.parsed, args.kwarg.lineno, args.kwarg.col_offset)
        edit.insert(line, col - 2, f"{'' if has_star else '*, '}{default}, ")
    else:
        position = _parameters_end(edit, function)
        if position is None:
            return False
        line, col, empty = position
        text = default if has_star else f"*, {default}"
        if not empty:
            text = f", {text}"
        elif isinstance(function, ast.Lambda):
            text = f" {text}"  # `lambda: x` -> `lambda *, self=...: x`
        edit.insert(line, col, text)
    edit.need("weakref")
    header = function.lineno
    first = min([header, *(d.lineno for d in getattr(function, "decorator_list", []))])
    statement = edit.parsed.statement_of(function)
    edit.cover(first if isinstance(function, DEF_NODES) else statement.lineno, max(header, line))
    if not say:
        return True
    code = (
        f"{header_text(edit, function)} ..."
        if isinstance(function, DEF_NODES)
        else new_text(edit, statement)
    )
    edit.say(
        f"write `{code}`",
        f"`{variable}` is then a keyword-only default holding a `weakref.proxy` instead of a "
        f"captured variable: the function reads `{variable}` as before, but no longer keeps "
        "the object alive.",
    )
    return True


def _parameters_end(edit: EditBuffer, function: ast.AST) -> tuple[int, int, bool] | None:
    """Where a new parameter goes: just before ``)`` of a ``def``, or before ``:`` of a
    lambda; and whether the parameter list is empty."""
    args = function.args  # type: ignore[attr-defined]
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg,) if a is not None]
    ends = [(a.end_lineno, a.end_col_offset) for a in every]
    ends += [
        (d.end_lineno, d.end_col_offset)
        for d in (*args.defaults, *args.kw_defaults)
        if d is not None
    ]
    lines = edit.parsed.lines
    if ends:
        line, byte = max(ends)
        col = chars(edit.parsed, line, byte)
        # Past a `/` or a trailing comma before the closing bracket or colon.
        rest = lines[line - 1][col:]
        closer = ")" if isinstance(function, DEF_NODES) else ":"
        stop = rest.find(closer)
        if stop < 0:
            return None
        between = rest[:stop]
        if between.strip() in ("", ",", ", /", ",/"):
            if "/" in between:
                col += between.index("/") + 1
            return line, col, False
        return None
    line = function.lineno  # type: ignore[attr-defined]
    text = lines[line - 1]
    start = chars(edit.parsed, line, function.col_offset)  # type: ignore[attr-defined]
    if isinstance(function, DEF_NODES):
        opening = text.find("(", start)
        return (line, opening + 1, True) if opening >= 0 else None
    keyword = text.find("lambda", start)
    return (line, keyword + len("lambda"), True) if keyword >= 0 else None


def _bound_before(edit: EditBuffer, function: ast.AST, variable: str) -> bool:
    """Whether a default can take the variable's value where the function is made: it is
    bound before the ``def`` (a parameter, or assigned above it) and never again after it
    (the closure would see the new value, the default the old one)."""
    scope = edit.parsed.enclosing(function)
    if scope is None or isinstance(scope, ast.Module):
        return False  # a module global is no closure cell
    first = function.lineno  # type: ignore[attr-defined]
    if any(
        isinstance(node, (ast.Nonlocal, ast.Global)) and variable in node.names
        for node in ast.walk(function)
    ):
        return False
    params = {a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)}  # type: ignore[attr-defined]
    stores = [
        node.lineno
        for node in ast.walk(scope)
        if isinstance(node, ast.Name)
        and node.id == variable
        and isinstance(node.ctx, ast.Store)
        and edit.parsed.enclosing(node) is scope
    ]
    if any(line >= first for line in stores):
        return False
    return variable in params or bool(stores)
