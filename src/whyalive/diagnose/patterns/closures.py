"""Closures that hold themselves: a nested function kept in its own cell."""

from __future__ import annotations

import types

from whyalive import edge_kinds as ek
from whyalive.diagnose.naming import (
    captured_variables,
    enclosing_function,
    label,
    qualname_of,
    short_name,
)
from whyalive.diagnose.patterns.base import PatternMatch
from whyalive.paths import CycleView, NamedEdge


class RecursiveClosurePattern:
    """A nested function that calls itself by name lives in its own closure cell."""

    name = "recursive-closure"
    title = "recursive nested function"

    def match(self, view: CycleView) -> PatternMatch | None:
        """Find function -> cell -> the same (or a sibling) function."""
        loops: list[tuple[int, NamedEdge, NamedEdge]] = []
        for edge in view.edges:
            if edge.name.kind != ek.CLOSURE:
                continue
            loops.extend(
                (edge.source, edge, back)
                for back in view.edges_from(edge.target)
                if back.name.kind == ek.CELL and type(view.obj(back.target)) is types.FunctionType
            )
        self_loops = [(fn, e, b) for fn, e, b in loops if b.target == fn]
        if self_loops:
            fn, closure_edge, back = self_loops[0]
            variable = closure_edge.name.name.split(" ", 1)[1]
            qualname = qualname_of(view.obj(fn))
            outer = short_name(enclosing_function(qualname))
            others = captured_variables(view, fn, variable)
            summary = f"{label(view, fn)} refers to itself through its closure cell `{variable}`"
            also = (
                f" Everything else the closure captures ({', '.join(f'`{v}`' for v in others)})"
                " stays alive with it."
                if others
                else ""
            )
            explanation = (
                f"`{variable}` is a function nested in `{outer}` that calls itself by name, so "
                f"Python keeps it in a closure cell: the function holds the cell (through "
                f"`__closure__`) and the cell holds the function. Reference counting can never "
                f"free this pair; only the cyclic garbage collector can, whenever it next "
                f"runs.{also}"
            )
            data_names = [name for name in others if name != "self"]
            data = (
                f" Deleting only the data (`del {data_names[0]}`) frees it but leaves the "
                "function/cell cycle for the collector."
                if data_names
                else ""
            )
            fix = (
                f"Break the self-reference: `del {variable}` in `{outer}` after its last use "
                f"(in a finally block so an error cannot skip it), pass the function to itself as "
                f"an argument (`{variable}(..., {variable})`), or move `{variable}` to module "
                f"level.{data}"
            )
            return PatternMatch(self.name, self.title, summary, explanation, fix, [back], "WAL101")
        functions = {fn for fn, _, _ in loops}
        mutual = [(fn, e, b) for fn, e, b in loops if b.target in functions and b.target != fn]
        if not mutual:
            return None
        fn, closure_edge, back = mutual[0]
        other = back.target
        first, second = qualname_of(view.obj(fn)), qualname_of(view.obj(other))
        outer = short_name(enclosing_function(first))
        # The user's names for the functions: the closure variables that hold them.
        names = sorted(
            {e.name.name.split(" ", 1)[1] for _, e, b in mutual if b.target in functions}
        )
        del_names = ", ".join(names)
        summary = (
            f"{label(view, fn)} and {label(view, other)} refer to each other through their "
            f"closure cells"
        )
        explanation = (
            f"`{first}` and `{second}` are sibling functions nested in `{outer}` that call each "
            f"other by name, so each lives in a closure cell that the other's `__closure__` "
            f"holds. Reference counting cannot free them; only the cyclic garbage collector can."
        )
        fix = (
            f"Break the loop: `del {del_names}` in `{outer}` after their last use (in a "
            f"finally block so an error cannot skip it), pass the functions as arguments, or "
            f"move them to module level."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, [back], "WAL101")
