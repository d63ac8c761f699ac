"""3xx: caught exceptions, tracebacks and frames kept where the current frame can reach them.

A caught exception's traceback holds the frame that caught it, and that frame holds every
local. Storing the exception (or its traceback, or the frame itself) anywhere the frame can
reach (a local, a list, ``self``) closes the cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from whyalive.lint.findings import Advice, LintFinding, snippet
from whyalive.lint.rules.shapes import (
    STORE_METHODS,
    bindings,
    enclosing_function,
    held_values,
    store_sites,
)
from whyalive.lint.scopes import Context, Frame, Rule, own_scope_nodes, walk_nodes
from whyalive.lint.texttests import keeps_caught

_KEEPING_CALLS = frozenset({"set_exception"})


def _keeps_exception(callee: str) -> bool:
    """Calls whose argument a handler's store keeps (`errors.append(err)`)."""
    return callee in STORE_METHODS or callee in _KEEPING_CALLS


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


def _raised(ctx: Context, function: Frame, where: ast.AST) -> bool:
    """Whether what ``where`` names is raised later (``raise last``, ``raise X from last``):
    a local in its function, anything else (``self._error``) anywhere in the file."""
    text = snippet(where, 200)
    key = ("raised-names", id(function.node) if isinstance(where, ast.Name) else 0)
    raised = ctx.memo.get(key)
    if not isinstance(raised, frozenset):
        scope = function.node if isinstance(where, ast.Name) else ctx.frames[0].node
        raised = ctx.memo[key] = frozenset(
            snippet(sub, 200)
            for n in walk_nodes(scope)
            if isinstance(n, ast.Raise)
            for part in (n.exc, n.cause)
            if part is not None
            for sub in walk_nodes(part)
            if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript))
        )
    return text in raised


def _exception_advice(
    name: str, func: str, where: ast.AST, raised: bool, to_future: bool
) -> tuple[Advice, ...]:
    """Keeping the text or a traceback-less copy changes what a later ``raise`` shows, so a
    re-raised exception only gets fixes that keep it whole."""
    kept = snippet(where, 30)
    if to_future:
        return (
            Advice("del-in-finally", f"`del {kept}` in a `finally` when done")
            if isinstance(where, ast.Name)
            else Advice(
                "clear-when-done", f"clear `{kept}` when done with the future (`{kept} = None`)"
            ),
        )
    if raised and isinstance(where, ast.Name):
        return (
            Advice(
                "del-in-finally",
                f"`del {kept}` in a `finally` around the rest of `{func}`, its `raise` "
                "included (the exception keeps its traceback)",
            ),
        )
    if raised:
        return (
            Advice(
                "clear-on-raise",
                f"take it off `{kept}` where it is raised (`error, {kept} = {kept}, None`, "
                "then `raise error` in a `try` whose `finally` does `del error`)",
            ),
        )
    clear = (
        Advice("del-in-finally", f"`del {kept}` in a `finally` when done")
        if isinstance(where, ast.Name)
        else Advice("clear-when-done", f"drop it from `{kept}` when done")
    )
    return (
        Advice("keep-text", f"keep `str({name})` if only its text is needed"),
        Advice("strip-traceback", f"keep `{name}.with_traceback(None)`"),
        clear,
    )


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
            # A future raises what it is given from `result()`: a re-raise as well.
            func_of = stmt.func if isinstance(stmt, ast.Call) else None
            to_future = isinstance(func_of, ast.Attribute) and func_of.attr in _KEEPING_CALLS
            raised = to_future or _raised(ctx, function, where)
            func = getattr(function.node, "name", "<function>")
            yield ctx.report(
                stmt,
                stmt=snippet(stmt),
                name=name,
                func=func,
                where=snippet(where, 30),
                advice=_exception_advice(name, func, where, raised, to_future),
            )


EXCEPTION_KEPT = Rule(
    code="WAL301",
    name="exception-kept",
    message=(
        "WAL301 `{stmt}` keeps the caught exception `{name}` beyond its `except` block; its "
        "traceback holds the frame of `{func}`, which holds `{where}`: a cycle that keeps "
        "every local of `{func}`, and of its callers once they return, alive. {advice}"
    ),
    node_types=_HANDLER_TYPES,
    check=_check_exception_kept,
    offers=("keep-text", "strip-traceback", "del-in-finally", "clear-when-done", "clear-on-raise"),
    may_report=lambda text: keeps_caught(text, _keeps_exception),
    explanation="""\
`except E as err:` deletes `err` at the end of the block for a reason: `err.__traceback__`
holds the frame that caught it, and the frame holds all its locals. Keeping the exception in
another local (`last = err`), a list (`errors.append(err)`), on `self` (`self.error = err`) or
in a future (`fut.set_exception(err)`) lets the frame reach the exception that reaches the
frame: a cycle holding every tensor the function had in a local.

The kept frame also keeps its callers' frames (`f_back`), with their locals as they were when
they returned, until the cyclic GC runs: a cycle made in a small helper can hold the
activations of the training step that called it.

Fix: keep only what you need (`str(err)`, `repr(err)`, `err.args`), strip the traceback
(`self.error = err.with_traceback(None)`), or `del last` when done (in a `finally`). An
exception raised again later (`raise last`, `raise X from last`, `raise self._error`) keeps
its traceback: delete the name in a `finally` around that `raise`, or take the exception off
the object where it is raised.""",
)

_FRAME_CALLS = {("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace")}
# The text of those calls and of `sys._getframe` (WAL303's test on the text; each pattern
# starts with a literal, which the engine finds fast).
_FRAME_CALL = re.compile(r"inspect\s*\.\s*(?:currentframe|stack|trace)(?!\w)")
_GETFRAME = re.compile(r"sys\s*\.\s*_getframe(?!\w)")


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
            kept = snippet(where, 30)
            delete = Advice("del-in-finally", f"`del {kept}` in a `finally`")
            advice: tuple[Advice, ...] = (delete,)
            if not _raised(ctx, function, where):
                text = "keep `traceback.format_exc()` or `traceback.extract_tb(...)` instead"
                advice = (Advice("format", text), delete)
            yield ctx.report(
                stmt,
                stmt=snippet(stmt),
                source=source,
                func=getattr(function.node, "name", "<function>"),
                where=kept,
                advice=advice,
            )


TRACEBACK_KEPT = Rule(
    code="WAL302",
    name="traceback-kept",
    message=(
        "WAL302 `{stmt}` keeps the traceback from `{source}`; it holds the frame of `{func}`, "
        "which holds `{where}`: a cycle. {advice}"
    ),
    node_types=_HANDLER_TYPES,
    check=_check_traceback_kept,
    offers=("format", "del-in-finally"),
    may_report=lambda text: text.has_word("except") and text.has_word("exc_info", "__traceback__"),
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
        kept = snippet(where, 30)
        yield ctx.report(
            node,
            stmt=snippet(node),
            call=snippet(what.func, 30),
            func=getattr(function.node, "name", "<function>"),
            where=kept,
            advice=(
                Advice("del-in-finally", f"`del {kept}` in a `finally`"),
                Advice(
                    "keep-what-you-need",
                    f"keep only what you need without binding the frame (`{snippet(what, 30)}"
                    ".f_back`, `.f_code.co_name`, `.f_lineno`)",
                ),
            ),
        )


FRAME_KEPT = Rule(
    code="WAL303",
    name="frame-kept",
    message=(
        "WAL303 `{stmt}` keeps the current frame (from `{call}()`) where the frame of "
        "`{func}` can reach it: a cycle that keeps its locals, and its callers' once they "
        "return. {advice}"
    ),
    node_types=(ast.Assign, ast.AnnAssign),
    check=_check_frame_kept,
    offers=("del-in-finally", "keep-what-you-need"),
    may_report=lambda text: text.search_whole(_FRAME_CALL) or text.search_whole(_GETFRAME),
    explanation="""\
`frame = inspect.currentframe()` (or `inspect.stack()`, `inspect.trace()`,
`sys._getframe()`) stores the running frame in one of its own locals: frame -> local ->
frame. The `inspect` documentation asks for `del frame` in a `finally` clause. Looking at a
caller's frame (`sys._getframe(1)`, `currentframe().f_back`) makes no cycle. The kept frame
also keeps its callers' frames once they return.""",
)

RULES: tuple[Rule, ...] = (EXCEPTION_KEPT, TRACEBACK_KEPT, FRAME_KEPT)
