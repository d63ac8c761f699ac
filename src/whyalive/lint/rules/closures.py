"""1xx: nested functions whose closure cells hold themselves (the pipelining seed bug)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from whyalive.lint.engine import FUNCTION_NODES, Context, Frame, LintFinding, Rule
from whyalive.lint.rules.shapes import bindings


def _outer_name(frame: Frame) -> str:
    return getattr(frame.node, "name", "<function>")


def _is_local(ctx: Context, frame: Frame, name: str) -> bool:
    table = ctx.frame_table(frame)
    if table is None:
        return False
    try:
        return table.lookup(name).is_local()
    except KeyError:
        return False


def _holding(frees: frozenset[str], *skip: str) -> str:
    others = sorted(frees.difference(skip))
    if not others:
        return ""
    shown = ", ".join(f"`{n}`" for n in others[:4]) + (", ..." if len(others) > 4 else "")
    return f", and the cycle keeps {shown} alive"


def _check_recursive(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    frame = ctx.frame
    if frame.kind != "function":
        return
    if isinstance(node, ast.Assign):
        target = node.targets[0]
        if len(node.targets) != 1 or not isinstance(target, ast.Name):
            return
        if not isinstance(node.value, ast.Lambda):
            return
        name, kind, frees = target.id, "lambda", ctx.frees_of(node.value)
    else:
        assert isinstance(node, FUNCTION_NODES)
        name, kind, frees = node.name, "nested function", ctx.frees_of(node)
    if name not in frees or not _is_local(ctx, frame, name):
        return
    if bindings(ctx, frame).cleared_after(name, node.lineno):
        return
    yield ctx.report(
        node,
        kind=kind,
        name=name,
        outer=_outer_name(frame),
        holding=_holding(frees, name),
    )


RECURSIVE_CLOSURE = Rule(
    code="WAL101",
    name="recursive-closure",
    message=(
        "WAL101 {kind} `{name}` refers to itself, so its closure cell holds `{name}`; "
        "this makes a cycle{holding}. Pass it as an argument (`{name}(..., {name})`), "
        "`del {name}` before `{outer}` returns, or move it to module level."
    ),
    node_types=(ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign),
    check=_check_recursive,
    explanation="""\
A nested function that calls itself by name reads that name from a closure cell of the
enclosing function. The cell holds the function and the function holds the cell (through
`__closure__`), so the pair is cyclic garbage once the enclosing call returns. Every other
variable the function captures (tensors, lists of outputs) stays alive until the cyclic GC
runs. This is the bug fixed by hand in PyTorch's `pipelining/_backward.py`
(`stage_backward.<locals>.extract_tensors_with_grads`).

Fixes, in the user's terms: pass the function to itself as a parameter
(`def walk(x, walk): ... walk(child, walk)` called as `walk(root, walk)`), `del walk` (or
`walk = None`) before the enclosing function returns, or move the helper to module level.
Recursion of module-level functions and methods (`self.walk(...)`) makes no cycle.""",
)


def _sibling_cycles(ctx: Context, frame: Frame) -> dict[str, frozenset[str]]:
    """For each nested function of ``frame``: the siblings it is mutually recursive with."""
    key = ("mutual", id(frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, dict):
        return cached
    table = ctx.frame_table(frame)
    edges: dict[str, set[str]] = {}
    if table is not None:
        for child in table.get_children():
            name = child.get_name()
            if child.get_type() != "function" or not _is_local(ctx, frame, name):
                continue
            frees = {s.get_name() for s in child.get_symbols() if s.is_free()}
            edges.setdefault(name, set()).update(frees)
    names = set(edges)
    for targets in edges.values():
        targets.intersection_update(names)
    reach: dict[str, set[str]] = {}
    for start in names:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(edges[current])
        reach[start] = seen
    result = {
        name: frozenset(o for o in reach[name] if o != name and name in reach[o]) for name in names
    }
    ctx.memo[key] = result
    return result


def _check_mutual(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, FUNCTION_NODES)
    frame = ctx.frame
    if frame.kind != "function":
        return
    partners = _sibling_cycles(ctx, frame).get(node.name)
    if not partners:
        return
    found = bindings(ctx, frame)
    if any(found.cleared_after(n, node.lineno) for n in (node.name, *partners)):
        return
    ordered = sorted(partners)
    yield ctx.report(
        node,
        name=node.name,
        partners=", ".join(f"`{p}`" for p in ordered),
        outer=_outer_name(frame),
        first=ordered[0],
    )


MUTUAL_CLOSURES = Rule(
    code="WAL102",
    name="mutually-recursive-closures",
    message=(
        "WAL102 nested function `{name}` and {partners} refer to each other through closure "
        "cells of `{outer}`; this makes a cycle. `del {name}` before `{outer}` returns, pass "
        "`{first}` as an argument, or move them to module level."
    ),
    node_types=(ast.FunctionDef, ast.AsyncFunctionDef),
    check=_check_mutual,
    explanation="""\
Two (or more) nested functions of one enclosing function that call each other by name each
hold the other's closure cell: `f -> cell(g) -> g -> cell(f) -> f`. Like WAL101, the cycle
keeps everything either function captures alive until the cyclic GC runs.

Fix: delete one of the names before the enclosing function returns (`del f`), pass one
function to the other as an argument, or move them to module level.""",
)

RULES: tuple[Rule, ...] = (RECURSIVE_CLOSURE, MUTUAL_CLOSURES)
