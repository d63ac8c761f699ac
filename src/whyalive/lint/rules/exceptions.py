"""3xx: caught exceptions, tracebacks and frames kept where the current frame can reach them.

A caught exception's traceback holds the frame that caught it, and that frame holds every
local. Storing the exception (or its traceback, or the frame itself) anywhere the frame can
reach (a local, a list, ``self``) closes the cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.findings import LintFinding, Rule, snippet
from whyalive.lint.rules.shapes import bindings, enclosing_function, held_values, store_sites
from whyalive.lint.scopes import Context, own_scope_nodes

_KEEPING_CALLS = frozenset({"set_exception"})
_HANDLER_TYPES: tuple[type[ast.AST], ...] = (ast.ExceptHandler,)


def _handler_stores(handler: ast.ExceptHandler) -> Iterator[tuple[ast.AST, ast.AST, ast.AST]]:
    """``(statement, where, what)`` for each store in the handler body's own scope."""
    for node in own_scope_nodes(handler.body):
        yield from ((node, where, what) for where, what in store_sites(node))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _KEEPING_CALLS
            and node.args
        ):
            yield node, node.func.value, node.args[0]


def _check_exception_kept(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, ast.ExceptHandler)
    name = node.name
    function = enclosing_function(ctx)
    if name is None or function is None:
        return
    for stmt, where, what in _handler_stores(node):
        if isinstance(where, ast.Name) and (
            where.id == name
            or bindings(ctx, function).rebound_after(where.id, getattr(stmt, "lineno", 0))
        ):
            continue
        if any(isinstance(h, ast.Name) and h.id == name for h in held_values(what)):
            yield ctx.report(
                stmt,
                stmt=snippet(stmt),
                name=name,
                func=getattr(function.node, "name", "<function>"),
                where=snippet(where, 30),
            )


EXCEPTION_KEPT = Rule(
    code="WAL301",
    name="exception-kept",
    message=(
        "WAL301 `{stmt}` keeps the caught exception `{name}` beyond its `except` block; its "
        "traceback holds the frame of `{func}`, which holds `{where}`: a cycle that keeps "
        "every local of `{func}` alive. Keep `str({name})` or `{name}.with_traceback(None)`, "
        "or `del` it when done."
    ),
    node_types=_HANDLER_TYPES,
    check=_check_exception_kept,
    explanation="""\
`except E as err:` deletes `err` at the end of the block for a reason: `err.__traceback__`
holds the frame that caught it, and the frame holds all its locals. Keeping the exception in
another local (`last = err`), a list (`errors.append(err)`), on `self` (`self.error = err`) or
in a future (`fut.set_exception(err)`) lets the frame reach the exception that reaches the
frame: a cycle holding every tensor the function had in a local.

Fix: keep only what you need (`str(err)`, `repr(err)`, `err.args`), strip the traceback
(`self.error = err.with_traceback(None)`), or `del last` when done (in a `finally`).""",
)

_FRAME_CALLS = {("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace")}


def _call_name(expr: ast.AST) -> tuple[str, str] | None:
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id, func.attr
        if isinstance(func, ast.Name):
            return "", func.id
    return None


def _traceback_source(expr: ast.AST, caught: str | None) -> str | None:
    """Describe ``expr`` when it evaluates to the handled exception's traceback (or all of it)."""
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        if isinstance(index, ast.Constant) and index.value == 0:
            return None  # only the exception type: no traceback
        expr = expr.value
    called = _call_name(expr)
    if called in (("sys", "exc_info"), ("", "exc_info")):
        return "sys.exc_info()"
    if (
        isinstance(expr, ast.Attribute)
        and expr.attr == "__traceback__"
        and isinstance(expr.value, ast.Name)
        and expr.value.id == caught
    ):
        return f"{caught}.__traceback__"
    return None


def _check_traceback_kept(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, ast.ExceptHandler)
    function = enclosing_function(ctx)
    if function is None:
        return
    for stmt, where, what in _handler_stores(node):
        if isinstance(where, ast.Name) and bindings(ctx, function).rebound_after(
            where.id, getattr(stmt, "lineno", 0)
        ):
            continue
        source = _traceback_source(what, node.name)
        if source is not None:
            yield ctx.report(
                stmt,
                stmt=snippet(stmt),
                source=source,
                func=getattr(function.node, "name", "<function>"),
                where=snippet(where, 30),
            )


TRACEBACK_KEPT = Rule(
    code="WAL302",
    name="traceback-kept",
    message=(
        "WAL302 `{stmt}` keeps the traceback from `{source}`; it holds the frame of `{func}`, "
        "which holds `{where}`: a cycle. Keep `traceback.format_exc()` or "
        "`traceback.extract_tb(...)` instead, or `del {where}` in a `finally`."
    ),
    node_types=_HANDLER_TYPES,
    check=_check_traceback_kept,
    explanation="""\
The Python documentation of `sys.exc_info()` warns about this one: assigning the traceback
(or the whole `exc_info()` tuple) to a local of the function that handles the exception
makes a cycle, frame -> local -> traceback -> frame.

Fix: keep a rendered form (`traceback.format_exc()`, `traceback.extract_tb(tb)`, which holds
no frames), or `del tb` in a `finally` block.""",
)


def _check_frame_kept(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    function = enclosing_function(ctx)
    if function is None:
        return
    for where, what in store_sites(node):
        called = _call_name(what)
        current = called in _FRAME_CALLS or (
            called == ("sys", "_getframe")
            and isinstance(what, ast.Call)
            and (
                not what.args
                or (isinstance(what.args[0], ast.Constant) and what.args[0].value == 0)
            )
        )
        if not current:
            continue
        if isinstance(where, ast.Name) and bindings(ctx, function).rebound_after(
            where.id, getattr(node, "lineno", 0)
        ):
            continue
        assert isinstance(what, ast.Call)
        yield ctx.report(
            node,
            stmt=snippet(node),
            call=snippet(what.func, 30),
            func=getattr(function.node, "name", "<function>"),
            where=snippet(where, 30),
        )


FRAME_KEPT = Rule(
    code="WAL303",
    name="frame-kept",
    message=(
        "WAL303 `{stmt}` keeps the current frame (from `{call}()`) where the frame of "
        "`{func}` can reach it: a cycle. `del {where}` in a `finally`, or keep only what you "
        "need (`f_code.co_name`, `f_lineno`)."
    ),
    node_types=(ast.Assign, ast.AnnAssign),
    check=_check_frame_kept,
    explanation="""\
`frame = inspect.currentframe()` (or `inspect.stack()`, `inspect.trace()`,
`sys._getframe()`) stores the running frame in one of its own locals: frame -> local ->
frame. The `inspect` documentation asks for `del frame` in a `finally` clause. Looking at a
caller's frame (`sys._getframe(1)`, `currentframe().f_back`) makes no cycle.""",
)

RULES: tuple[Rule, ...] = (EXCEPTION_KEPT, TRACEBACK_KEPT, FRAME_KEPT)
