"""Closures that hold themselves: a nested function kept in its own cell, or in a container
it captures."""

from __future__ import annotations

import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import DELETE, WEAKEN, weak_referenceable
from whyalive.analysis.naming import (
    captured_variables,
    chain,
    code_qualname_of,
    enclosing_function,
    label,
    short_name,
)
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.sourcelines import SourceLines
from whyalive.guarded import type_short_name
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek

_CONTAINERS = (dict, list, set, tuple)


class RecursiveClosurePattern:
    """A nested function that refers to its own name lives in its own closure cell."""

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
            return self._self_loop(view, fn, closure_edge, back)
        functions = {fn for fn, _, _ in loops}
        mutual = [(fn, e, b) for fn, e, b in loops if b.target in functions and b.target != fn]
        if not mutual:
            return None
        fn, closure_edge, back = mutual[0]
        other = back.target
        first, second = code_qualname_of(view.obj(fn)), code_qualname_of(view.obj(other))
        outer = short_name(enclosing_function(first))
        # The user's names for the functions: the closure variables that hold them.
        names = sorted(
            {e.name.name.split(" ", 1)[1] for _, e, b in mutual if b.target in functions}
        )
        summary = (
            f"{label(view, fn)} and {label(view, other)} refer to each other through their "
            f"closure cells"
        )
        explanation = (
            f"`{first}` and `{second}` are sibling functions nested in `{outer}` that use each "
            f"other by name, so each lives in a closure cell that the other's `__closure__` "
            f"holds. Reference counting cannot free them; only the cyclic garbage collector can."
        )
        fix = (
            f"Break the loop: `del {', '.join(names)}` in `{outer}` after their last use (in a "
            f"finally block so an error cannot skip it), pass the functions as arguments, or "
            f"move them to module level."
        )
        also = "Or move the functions to module level and pass what they share as arguments."
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [back], "WAL101", None, DELETE, also
        )

    def _self_loop(
        self, view: CycleView, fn: int, closure_edge: NamedEdge, back: NamedEdge
    ) -> PatternMatch:
        variable = closure_edge.name.name.split(" ", 1)[1]
        function = view.obj(fn)
        qualname = code_qualname_of(function)
        outer = short_name(enclosing_function(qualname))
        others = captured_variables(view, fn, variable)
        calls = (
            SourceLines().calls_itself(function, variable)
            if type(function) is types.FunctionType
            else None
        )
        does = (
            "calls itself"
            if calls
            else "uses its own name"
            if calls is False
            else "refers to itself"
        )
        summary = f"{label(view, fn)} {does} through its closure cell `{variable}`"
        also_held = (
            f" Everything else the closure captures ({', '.join(f'`{v}`' for v in others)})"
            " stays alive with it."
            if others
            else ""
        )
        how = (
            "calls itself by name"
            if calls
            else "uses its own name (to store or hand itself on, not to call itself)"
            if calls is False
            else "refers to its own name"
        )
        explanation = (
            f"`{variable}` is a function nested in `{outer}` that {how}, so Python keeps it in "
            f"a closure cell: the function holds the cell (through `__closure__`) and the cell "
            f"holds the function. Reference counting can never free this pair; only the cyclic "
            f"garbage collector can, whenever it next runs.{also_held}"
        )
        data_names = [name for name in others if name != "self"]
        data = (
            f" Deleting only the data (`del {data_names[0]}`) frees it but leaves the "
            "function/cell cycle for the collector."
            if data_names
            else ""
        )
        argument = (
            f", pass the function to itself as an argument (`{variable}(..., {variable})`)"
            if calls
            else ""
        )
        fix = (
            f"Break the self-reference: `del {variable}` in `{outer}` after its last use "
            f"(in a finally block so an error cannot skip it){argument}, or move `{variable}` "
            f"to module level.{data}"
        )
        also = (
            f"Or pass the function to itself as an argument (`{variable}(..., {variable})`), "
            f"or move `{variable}` to module level."
            if calls
            else f"Or move `{variable}` to module level."
        ) + data
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [back], "WAL101", None, DELETE, also
        )


class ClosureInCapturedContainerPattern:
    """A nested function stored in a container (or registry) that it captures."""

    name = "closure-in-captured-container"
    title = "closure stored in a container it captures"

    def match(self, view: CycleView) -> PatternMatch | None:
        """function --__closure__--> cell --cell_contents--> container ...--> the function."""
        for edge in view.edges:
            if edge.name.kind != ek.CLOSURE:
                continue
            fn = edge.source
            for held in view.edges_from(edge.target):
                container = view.obj(held.target)
                if held.name.kind != ek.CELL or not isinstance(container, _CONTAINERS):
                    continue
                steps = chain(view, held.target, fn)
                if steps and all(isinstance(view.obj(step.source), _CONTAINERS) for step in steps):
                    return self._words(view, fn, edge, held, steps)
        return None

    def _words(
        self,
        view: CycleView,
        fn: int,
        closure: NamedEdge,
        held: NamedEdge,
        steps: list[NamedEdge],
    ) -> PatternMatch:
        variable = closure.name.name.split(" ", 1)[1]
        function = view.obj(fn)
        name = short_name(code_qualname_of(function))
        outer = short_name(enclosing_function(code_qualname_of(function)))
        container = view.obj(held.target)
        kind = type_short_name(type(container))
        where = "".join(step.name.name for step in steps)
        summary = (
            f"{label(view, fn)} is stored in `{variable}` (at `{where}`), {a_code(kind)} it "
            f"captures as `{variable}`"
        )
        # A lambda has no name code can spell (`<lambda>` is no Python).
        said = f"`{name}`" if name.isidentifier() else "the lambda"
        explanation = (
            f"{said[0].upper()}{said[1:]} closes over `{variable}`, and `{variable}` holds "
            f"{said}: the function "
            f"holds its closure cell, the cell holds the {kind}, the {kind} holds the function. "
            "Reference counting cannot free the loop, so everything the closure and the "
            f"{kind} hold waits for the cyclic garbage collector."
        )
        weak = weak_referenceable(container)
        capture = (
            f"have {said} take it as a keyword-only default holding a `weakref.proxy` "
            f"instead of capturing it, "
            if weak
            else ""
        )
        fix = (
            f"Do not keep {said} in the {kind} it captures: {capture}pass `{variable}` to "
            f"it as an argument, or keep the function somewhere else; or remove the entry "
            f"when done."
        )
        also = (
            f"Or pass `{variable}` to {said} as an argument instead of capturing it in `{outer}`."
        )
        cut = [held] if weak else steps[-1:]
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, None, None, WEAKEN, also
        )
