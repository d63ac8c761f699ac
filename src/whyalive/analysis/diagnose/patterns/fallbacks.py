"""When no named pattern fits: a reference loop by family, or an unrecognised cycle."""

from __future__ import annotations

from whyalive.analysis.cuts import choose_cut
from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import weak_referenceable
from whyalive.analysis.naming import (
    code_qualname_of,
    enclosing_function,
    label,
    reference_code,
    short_name,
)
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.words import edge_kinds as ek
from whyalive.words import plural


class UnrecognisedPattern:
    """Any other cycle: still reported with its graph, paths and cut."""

    name = "unrecognised"
    title = "unrecognised cycle"

    def match(self, view: CycleView) -> PatternMatch:
        """Always matches; describes the loop by its members."""
        shown = view.shown[:4]
        names = " -> ".join(label(view, n) for n in shown)
        more = f" (+{len(view.shown) - 4} more)" if len(view.shown) > 4 else ""
        summary = f"a cycle of {plural(len(view.shown), 'object')}: {names}{more}"
        explanation = (
            "These objects refer to each other in a loop, so reference counting cannot free "
            "them; they wait for the cyclic garbage collector."
        )
        fix = "Remove the reference named in the cut, or hold it with a `weakref`."
        return PatternMatch(self.name, self.title, summary, explanation, fix, [], None)


_FAMILIES = {
    ek.ATTRIBUTE: "attributes",
    ek.BOUND_SELF: "attributes",
    ek.KEY: "container",
    ek.INDEX: "container",
    ek.CELL: "closure",
    ek.CLOSURE: "closure",
    ek.DEFAULTS: "closure",
    ek.LOCAL: "frame",
    ek.FRAME: "frame",
    ek.TRACEBACK: "frame",
}
FAMILY_WORDS = {
    "attributes": ("attribute-loop", "loop through objects' attributes"),
    "container": ("container-loop", "loop through a container"),
    "closure": ("closure-loop", "loop through a closure"),
    "frame": ("frame-loop", "loop through frames, tracebacks or chained exceptions"),
    "internal": ("reference-loop", "loop through interpreter references"),
}


class ReferenceLoopPattern:
    """Any other cycle, named by the kind of reference its cut is: attribute, entry, closure."""

    name = "attribute-loop"
    title = "loop through objects' attributes"

    def match(self, view: CycleView) -> PatternMatch:
        """Always matches: the family of the best cut names the loop and shapes the fix."""
        cut, _ = choose_cut(view)
        edge = cut[0] if cut else None
        family = _FAMILIES.get(edge.name.kind, "internal") if edge else "internal"
        name, title = FAMILY_WORDS[family]
        shown = view.shown[:4]
        names = " -> ".join(label(view, n) for n in shown)
        more = f" (+{len(view.shown) - 4} more)" if len(view.shown) > 4 else ""
        count = len(view.shown)
        summary = f"{count} {'object refers' if count == 1 else 'objects refer'} back to "
        summary += f"{'itself' if count == 1 else 'each other'}: {names}{more}"
        explanation = (
            f"This is a {title}: each object is held by the one before it, so reference "
            "counting cannot free any of them; they wait for the cyclic garbage collector."
        )
        code = reference_code(view, edge) if edge else None
        fix = _family_fix(view, family, edge, code)
        return PatternMatch(name, title, summary, explanation, fix, cut, None)


def ring_words(code: str) -> str:
    """The fix for a ring whose one link is each object's only holder: weakened, the link
    would free the objects at once."""
    return (
        f"`{code}` is the only reference to each object of the ring: held weakly, they would "
        f"be freed at once. Break the ring when you are done with it (`{code} = None` on one "
        "of them), or keep the objects in a list that owns them and link them weakly."
    )


def _is_ring(view: CycleView) -> bool:
    """Every object of the loop is held by exactly one reference of it, all of one name."""
    names = {e.name for e in view.edges}
    return len(names) == 1 and all(len(view.edges_into(n)) == 1 for n in view.shown)


def _family_fix(view: CycleView, family: str, edge: NamedEdge | None, code: str | None) -> str:
    if family == "attributes" and code and edge is not None and _is_ring(view):
        return ring_words(code)
    if family == "attributes" and code and edge is not None and edge.name.kind == ek.ATTRIBUTE:
        return (
            f"Hold `{code}` weakly (store a `weakref.proxy` of the value there: it reads like "
            f"the object), or clear it when done (`{code} = None`)."
        )
    if family == "container" and code:
        return (
            f"Remove the entry when done (`del {code}`), or keep the value elsewhere, or in a "
            "`weakref.WeakValueDictionary`."
        )
    if family == "closure" and code and edge is not None:
        outer = short_name(enclosing_function(code_qualname_of(_cell_owner(view, edge.source))))
        # A weak reference only to what can be weakly referenced (not a `map` object).
        weak = (
            f", capture `weakref.ref({code})`" if weak_referenceable(view.obj(edge.target)) else ""
        )
        return (
            f"Do not let the nested function capture `{code}`: pass it as an argument{weak}, "
            f"or set `{code} = None` in `{outer}` when done."
        )
    if family == "frame" and code:
        return f"`del {code}` when done (in a finally block), or do not keep it in this frame."
    if family == "frame" and edge is not None and edge.name.name in ("__context__", "__cause__"):
        return (
            f"Break the chain of exceptions where it loops: set the `{edge.name.name}` named in "
            "the cut to None once the exceptions have been reported (an exception's context "
            "or cause is an exception or None: it cannot be held weakly)."
        )
    return (
        "Remove the reference named in the cut when done: the printed loop shows each "
        "reference in turn, and the first one your code made is where to break it."
    )


def _cell_owner(view: CycleView, cell: int) -> object:
    for edge in view.edges_into(cell):
        if edge.name.kind == ek.CLOSURE:
            return view.obj(edge.source)
    return view.obj(cell)
