"""1xx: nested functions whose closure cells hold themselves (the pipelining seed bug).

Each recursion group (:mod:`whyalive.lint.rules.recursion`) is reported once, at its first
function: WAL101 for a function that calls itself, WAL102 for siblings that call each other,
and WAL903 (off by default) for either when nothing it captures can hold a heavy object.
"""

from __future__ import annotations

import ast
import tokenize
from collections.abc import Iterator

from whyalive.lint.findings import Advice, Capture, LintFinding, TextEdit
from whyalive.lint.fixes import SourceTokens, is_fixable_def, self_argument_edits
from whyalive.lint.rules.recursion import RecursionGroup, recursion_groups
from whyalive.lint.scopes import FUNCTION_NODES, Context, Frame, Rule
from whyalive.lint.texttests import recursive_nested_functions

_SHOWN = 4


def _outer_name(frame: Frame) -> str:
    return getattr(frame.node, "name", "<function>")


def _names(names: tuple[str, ...]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _kept(captures: tuple[Capture, ...]) -> str:
    if not captures:
        return "only itself"
    shown = ", ".join(f"`{c.name}`" for c in captures[:_SHOWN])
    more = len(captures) - _SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _advice(group: RecursionGroup, outer: str, fixable: bool) -> tuple[Advice, ...]:
    """The fixes offered, by shape: deleting the name is offered only when no function of
    the group outlives ``outer`` (its next call would raise ``NameError``), and passing it
    to itself, for an escaping function, only through a helper (its callers keep their
    calls)."""
    first = group.names[0]
    module_level = Advice(
        "module-level",
        f"move {'it' if len(group.names) == 1 else 'them'} to module level, handing over "
        f"what {'it uses' if len(group.names) == 1 else 'they use'} from `{outer}` as "
        "arguments",
    )
    if len(group.names) > 1:
        if group.escape is not None:
            return (module_level,)
        return (
            Advice("del-in-finally", f"`del {first}` in a `finally` before `{outer}` returns"),
            Advice(
                "pass-as-arguments",
                "pass them to each other as arguments (a parameter of each for the others)",
            ),
            module_level,
        )
    if group.escape is not None:
        return (
            Advice(
                "helper-takes-itself",
                f"split it into a helper that takes itself as an argument "
                f"(`def _{first}(..., _{first})`, recursing with `_{first}(..., _{first})`) "
                f"and a `{first}` that calls `_{first}(..., _{first})`, so callers of "
                f"`{first}` keep their calls",
            ),
            module_level,
        )
    passing = (
        f"pass it to itself as an argument (`{first}(..., {first}={first})`; "
        "`whyalive lint --fix` does this)"
        if fixable
        else f"pass it to itself as an argument (`{first}(..., {first}={first})`)"
    )
    return (
        Advice("pass-itself", passing),
        Advice("del-in-finally", f"`del {first}` in a `finally` before `{outer}` returns"),
        module_level,
    )


def _escape_note(group: RecursionGroup, outer: str) -> str:
    if group.escape is None:
        return ""
    them = "it" if len(group.names) == 1 else "them"
    return (
        f" `{group.names[0]}` escapes `{outer}` ({group.escape}), so deleting the name "
        f"would break {them}."
    )


def _what(group: RecursionGroup) -> str:
    if len(group.names) > 1:
        return f"nested functions {_names(group.names)} refer to each other"
    kind = "lambda" if isinstance(group.nodes[0], ast.Assign) else "nested function"
    return f"{kind} `{group.names[0]}` refers to itself"


def _code_for(group: RecursionGroup) -> str:
    if not group.heavy:
        return LIGHT_RECURSION.code
    return RECURSIVE_CLOSURE.code if len(group.names) == 1 else MUTUAL_CLOSURES.code


def _fix(ctx: Context, frame: Frame, group: RecursionGroup) -> tuple[TextEdit, ...]:
    node = group.nodes[0]
    name = group.names[0]
    private = name.startswith("__") and not name.endswith("__")
    if len(group.nodes) != 1 or group.escape is not None or private or not is_fixable_def(node):
        return ()
    assert isinstance(node, FUNCTION_NODES)
    # Every edit lies in the enclosing function: tokenize its lines only.
    outer = frame.node
    try:
        tokens = SourceTokens(
            ctx.source, getattr(outer, "lineno", 1), getattr(outer, "end_lineno", None)
        )
        return self_argument_edits(tokens, outer, node)
    except (LookupError, SyntaxError, tokenize.TokenError):
        return ()


def _check_recursion(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    frame = ctx.frame
    if frame.kind != "function":
        return
    if not isinstance(node, FUNCTION_NODES) and not (
        isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
    ):
        return
    group = recursion_groups(ctx, frame).get(id(node))
    assert ctx.rule is not None
    if group is None or _code_for(group) != ctx.rule.code:
        return
    outer = _outer_name(frame)
    edits = _fix(ctx, frame, group)
    yield ctx.report(
        node,
        what=_what(group),
        outer=outer,
        kept=_kept(tuple(c for c in group.captures if c.heavy)),
        held=_kept(group.captures),
        escape=_escape_note(group, outer),
        advice=_advice(group, outer, bool(edits)),
        captures=group.captures,
        edits=edits,
    )


_NODE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign)

RECURSIVE_CLOSURE = Rule(
    code="WAL101",
    name="recursive-closure",
    message=(
        "WAL101 {what}, so its closure cell in `{outer}` holds it: a cycle that keeps {kept} "
        "alive until the cyclic GC runs.{escape} {advice}"
    ),
    node_types=_NODE_TYPES,
    check=_check_recursion,
    offers=("pass-itself", "del-in-finally", "module-level", "helper-takes-itself"),
    may_report=recursive_nested_functions,
    explanation="""\
A nested function that calls itself by name reads that name from a closure cell of the
enclosing function. The cell holds the function and the function holds the cell (through
`__closure__`), so the pair is cyclic garbage once the enclosing call returns. Every other
variable the function captures (tensors, lists of outputs) stays alive until the cyclic GC
runs. This is the bug fixed by hand in PyTorch's `pipelining/_backward.py`
(`stage_backward.<locals>.extract_tensors_with_grads`).

Reported when the function captures something that can hold a heavy object: a parameter or
a local of an enclosing function, `self`, a default value or a cache. The message names
those first; JSON and SARIF output list every capture. A recursive helper whose captures
static evidence shows to be light (functions, modules, strings, numbers, flags, a set only
filled with strings, `names: list[str]`, `self` of a class that stores only such values:
see docs/lint.md) is WAL903 (off by default).

Fixes, in the user's terms: pass the function to itself as a parameter
(`def walk(x, *, walk): ... walk(child, walk=walk)` called as `walk(root, walk=walk)`;
`whyalive lint --fix` makes this edit), `del walk` in a `finally` before the enclosing
function returns, or move the helper to module level. When the function escapes (it is
returned, stored, passed on or registered), deleting its name would make its next recursive
call fail with `NameError`, and a new parameter would change its callers' calls: then split
it into a helper that takes itself as an argument and a function that calls the helper with
itself (callers keep their calls), or move it to module level.
Recursion of module-level functions and methods (`self.walk(...)`) makes no cycle.""",
)

MUTUAL_CLOSURES = Rule(
    code="WAL102",
    name="mutually-recursive-closures",
    message=(
        "WAL102 {what} through closure cells of `{outer}`: a cycle that keeps {kept} alive "
        "until the cyclic GC runs.{escape} {advice}"
    ),
    node_types=_NODE_TYPES,
    check=_check_recursion,
    offers=("del-in-finally", "pass-as-arguments", "module-level"),
    may_report=recursive_nested_functions,
    explanation="""\
Two (or more) nested functions of one enclosing function that call each other by name each
hold the other's closure cell: `f -> cell(g) -> g -> cell(f) -> f`. Like WAL101, the cycle
keeps everything the functions capture alive until the cyclic GC runs. Each group of
functions that reach each other is reported once, at its first function, naming every
function of the group and what the group captures.

Fix: delete one of the names before the enclosing function returns (`del f` in a
`finally`), pass the functions to each other as arguments, or move them to module level.""",
)

LIGHT_RECURSION = Rule(
    code="WAL903",
    name="recursive-closure-holding-nothing-heavy",
    message=(
        "WAL903 {what} through closure cells of `{outer}`: a cycle, but it holds nothing "
        "that can be a heavy object ({held}).{escape} {advice}"
    ),
    node_types=_NODE_TYPES,
    check=_check_recursion,
    offers=(
        "pass-itself",
        "del-in-finally",
        "pass-as-arguments",
        "module-level",
        "helper-takes-itself",
    ),
    default_enabled=False,
    may_report=recursive_nested_functions,
    explanation="""\
A recursive nested function (or a group of mutually recursive ones) whose closure holds
nothing but itself and light values: functions, classes, modules, strings, numbers, flags,
containers only filled with those, parameters with light annotations (`str`, `list[str]`,
`Path`), the function given to `@wraps`, `self` of a class that stores only light values.
It is still a cycle, freed only by the cyclic GC, but it costs a few hundred bytes and cannot keep a
tensor alive. Off by default; select it with `--select WAL903` (or `WAL9`) to clean up
every closure cycle. The fixes are WAL101's.""",
)

RULES: tuple[Rule, ...] = (RECURSIVE_CLOSURE, MUTUAL_CLOSURES)
# Registered after the other families' 9xx rules, so codes stay in order.
OPT_IN_RULES: tuple[Rule, ...] = (LIGHT_RECURSION,)
