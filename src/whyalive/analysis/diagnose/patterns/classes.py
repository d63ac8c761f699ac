"""Classes made inside a function: a class always refers to itself, so each one is a cycle."""

from __future__ import annotations

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.naming import enclosing_function, short_name
from whyalive.analysis.paths import CycleView
from whyalive.guarded import type_qualname
from whyalive.words import edge_kinds as ek
from whyalive.words import joined


class ClassPerCallPattern:
    """A ``class`` statement inside a function: a new self-referring class on every call."""

    name = "class-per-call"
    title = "class created inside a function"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A class in the cycle whose qualified name says it was made in a function."""
        classes = [n for n in view.shown if issubclass(type(view.obj(n)), type)]
        local = [n for n in classes if ".<locals>." in type_qualname(view.obj(n))]  # type: ignore[arg-type]
        if not local:
            return None
        cls = view.obj(local[0])
        qualname = type_qualname(cls)  # type: ignore[arg-type]
        name = short_name(qualname)
        outer = short_name(enclosing_function(qualname))
        attributes = sorted(
            {
                edges[0].name.name.strip("[]'.")
                for nodes, edges in view.holder_paths
                if edges and nodes[0] == local[0] and edges[0].name.kind in (ek.KEY, ek.ATTRIBUTE)
            }
        )
        attributes = [a for a in attributes if a.isidentifier()]
        held = (
            f"; its class attributes ({joined([f'`{a}`' for a in attributes])}) hold the heavy "
            "objects"
            if attributes
            else ""
        )
        summary = f"class `{name}` is created each time `{outer}` runs{held}"
        explanation = (
            f"A class refers to itself: its `__mro__` starts with the class, and the "
            f"`__dict__` and `__weakref__` descriptors in its namespace refer back to it. A "
            f"`class` statement inside `{outer}` makes a new class, and so a new cycle, on every "
            "call; the class and everything its attributes hold wait for the cyclic garbage "
            "collector. No reference of yours closes the loop: the interpreter's do."
        )
        fix = (
            f"Define `{name}` once, at module level (outside `{outer}`), or keep the data on "
            "instances (set it in the initializer) instead of on class attributes, so the "
            "class made per call holds nothing heavy."
        )
        cut_words = (
            f"none in your code (the class's own `__mro__` and namespace descriptors close the "
            f"loop): the `class {name}` statement in `{outer}`"
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, [], None, cut_words)
