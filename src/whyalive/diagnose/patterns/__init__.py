"""The named patterns of DESIGN §6: each recognises a shape, explains it, and says the fix.

A pattern reads the live cycle (:class:`~whyalive.paths.CycleView`) during the
analysis and returns plain strings; every renderer shows those strings, so a
cycle is explained in the same words everywhere.
"""

from __future__ import annotations

import functools
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Protocol

from whyalive import edge_kinds as ek
from whyalive.diagnose.naming import (
    captured_variables,
    chain,
    expression,
    holder_code,
    is_instance_node,
    path_words,
    reference_code,
    short_name,
    variable_of,
)
from whyalive.diagnose.naming import cell_variable as cell_variable  # re-exported
from whyalive.diagnose.naming import enclosing_function as enclosing_function
from whyalive.diagnose.naming import label as label
from whyalive.diagnose.naming import qualname_of as qualname_of
from whyalive.guarded import type_module, type_qualname, type_short_name
from whyalive.paths import CycleView, NamedEdge, choose_cut
from whyalive.structure import BACK_NAMES, Link, Structure
from whyalive.words import a_code, joined, kind_count_words, members_words, plural


@dataclass(frozen=True)
class PatternMatch:
    """A pattern's verdict on one cycle."""

    pattern: str
    title: str
    summary: str
    explanation: str
    fix: str
    cut: list[NamedEdge] = field(default_factory=list)
    lint_rule: str | None = None
    cut_words: str | None = None
    """How the cut reads, when the pattern names it better than its references can."""


class Pattern(Protocol):
    """Recognises one shape of cycle."""

    name: str
    title: str

    def match(self, view: CycleView) -> PatternMatch | None:
        """A verdict when the cycle has this shape, else None."""
        ...


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


class BoundMethodOnSelfPattern:
    """``self.cb = self.on_step``, or a lambda/closure capturing ``self`` stored on ``self``."""

    name = "bound-method-on-self"
    title = "callable stored on its own instance"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A bound method whose ``__self__`` holds it, or a closure capturing its holder."""
        for edge in view.edges:
            if edge.name.kind == ek.BOUND_SELF and edge.target in view.shown:
                method, owner = edge.source, edge.target
                steps = chain(view, owner, method)
                if steps:
                    return self._bound(view, method, owner, steps)
        for edge in view.edges:
            if edge.name.kind != ek.CELL or not is_instance_node(view.obj(edge.target)):
                continue
            owner = edge.target
            for closure in view.edges_into(edge.source):
                if closure.name.kind == ek.CLOSURE:
                    steps = chain(view, owner, closure.source)
                    if steps:
                        return self._closure(view, closure.source, owner, steps, closure)
        return None

    def _bound(
        self, view: CycleView, method: int, owner: int, steps: list[NamedEdge]
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        func = qualname_of(view.obj(method))
        code = expression("self", steps)
        stored = f"`{code}`" if code else _stored_words(view, steps)
        summary = f"{a_code(cls)} object stores its own bound method `{func}` in {stored}"
        method_name = func.rsplit(".", 1)[-1]
        explanation = (
            f"A bound method holds its instance in `__self__`. Storing `self.{method_name}` "
            f"on the same `{cls}` object (in {stored}) makes the object hold the method and the "
            f"method hold the object, so neither is freed by reference counting."
        )
        call_as = f" (call it as `{code}()(...)`)" if code else ""
        remove = f"`del {code}`" if code else "delete the reference"
        fix = (
            f"Store `weakref.WeakMethod(self.{method_name})` instead{call_as}, store the plain "
            f"function and pass `self` when calling, or remove it ({remove}, `handle.remove()`) "
            "when done."
        )
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, _written_step(steps), "WAL201"
        )

    def _closure(
        self,
        view: CycleView,
        fn: int,
        owner: int,
        steps: list[NamedEdge],
        closure: NamedEdge,
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        variable = closure.name.name.split(" ", 1)[1]
        code = expression("self", steps)
        where = f"`{code}`" if code else _stored_words(view, steps)
        summary = (
            f"{a_code(cls)} object stores in {where} {label(view, fn)}, whose closure captures "
            f"the object as `{variable}`"
        )
        explanation = (
            f"The function stored on the `{cls}` object (in {where}) closes over `{variable}`, "
            f"which is that same object: object -> function -> closure cell -> object. "
            f"Reference counting cannot free the loop."
        )
        code = expression(variable, steps)
        remove = f"`del {code}` or unregister the hook" if code else "unregister the hook"
        fix = (
            f"Capture a weak reference (`ref = weakref.ref({variable})` and use `ref()` inside "
            f"the function), make it a regular method, or remove it ({remove}) when done."
        )
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, _written_step(steps), "WAL202"
        )


def _stored_words(view: CycleView, steps: list[NamedEdge]) -> str:
    """Where a chain ends, when it has no spelling in code: "`._insert` of a `Graph` object"."""
    last = steps[-1]
    obj = view.obj(last.source)
    owner = (
        f"{a_code(type_qualname(type(obj)))} object"
        if is_instance_node(obj)
        else label(view, last.source)
    )
    if last.name.kind == ek.UNKNOWN:
        return f"an unnamed reference from {owner}"
    return f"`{last.name.name}` of {owner}"


def _written_step(steps: list[NamedEdge]) -> list[NamedEdge]:
    """The reference the user's code stored: its first attribute (``.cb``, ``._insert``)."""
    attributes = [e for e in steps if e.name.kind == ek.ATTRIBUTE]
    named = [e for e in steps if e.name.kind in (ek.KEY, ek.INDEX)]
    return attributes[:1] or named[-1:] or steps[:1]


class ExceptionTracebackPattern:
    """An exception kept with its traceback: its frames hold their locals."""

    name = "exception-traceback"
    title = "exception kept with its traceback"

    def match(self, view: CycleView) -> PatternMatch | None:
        """An exception in the cycle whose traceback leads back to it."""
        exceptions = [n for n in view.shown if issubclass(type(view.obj(n)), BaseException)]
        frames = [n for n in view.shown if type(view.obj(n)) is types.FrameType]
        if not exceptions or not frames:
            return None
        exc = exceptions[0]
        holders = [
            e
            for node in exceptions
            for e in view.edges_into(node)
            if e.name.kind not in (ek.TRACEBACK, ek.INTERNAL)
        ]
        frame_words = ", ".join(label(view, f) for f in frames[:3])
        exc_name = type_qualname(type(view.obj(exc)))
        if holders:
            holder = holders[0]
            held_by = f"{label(view, holder.source)} holds it again in `{holder.name.name}`"
        else:
            held_by = "the frames hold it again"
        summary = f"`{exc_name}` exception keeps its traceback (frames: {frame_words}); {held_by}"
        locals_held = sorted(
            {
                edge.name.name
                for _, path_edges in view.holder_paths
                for edge in path_edges
                if edge.name.kind == ek.LOCAL
            }
        )
        held = (
            f" The frames' locals ({', '.join(f'`{n}`' for n in locals_held)}) hold the heavy "
            f"objects."
            if locals_held
            else ""
        )
        explanation = (
            f"An exception's `__traceback__` holds every frame it passed through, and each "
            f"frame holds all of its local variables. Keeping the `{exc_name}` beyond its "
            f"`except` block (in a local, a list, an attribute or a future) while one of those "
            f"frames refers to it makes a cycle.{held}"
        )
        kept = reference_code(view, holders[0]) if holders else None
        drop = f"`del {kept}`" if kept else "delete it"
        fix = (
            f"Do not keep the exception object: {drop} in a finally block, keep only what you "
            "need (`str(err)`, `traceback.format_exception(err)`), or drop the frames first with "
            "`err.with_traceback(None)` or `traceback.clear_frames(err.__traceback__)`."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, holders[:1], "WAL301")


class FrameKeptPattern:
    """A frame kept where it can reach itself: ``frame = inspect.currentframe()``."""

    name = "frame-kept"
    title = "frame kept where its own locals reach it"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A frame (or a traceback of one) in the cycle, held by a reference the user wrote."""
        kept = [
            n for n in view.shown if type(view.obj(n)) in (types.FrameType, types.TracebackType)
        ]
        if not kept:
            return None
        written = [
            e
            for node in kept
            for e in view.edges_into(node)
            if e.name.kind in (ek.LOCAL, ek.ATTRIBUTE, ek.KEY, ek.INDEX, ek.CELL)
        ]
        frames = [n for n in kept if type(view.obj(n)) is types.FrameType]
        frame = frames[0] if frames else kept[0]
        cut = written[:1]
        code = reference_code(view, cut[0]) if cut else None
        held = type_short_name(type(view.obj(cut[0].target))) if cut else "frame"
        if cut and cut[0].name.kind == ek.LOCAL and cut[0].source == frame:
            local = f"the local `{code}`" if code else "one of its locals"
            how = f"holds its own {held} in {local}"
        elif cut:
            how = f"is held by {label(view, cut[0].source)} (in `{cut[0].name.name}`), which "
            how += "the frame's locals reach again"
        else:
            how = "reaches itself through its locals"
        summary = f"{label(view, frame)} {how}"
        explanation = (
            "A frame holds all of its local variables. Keeping the running frame (from "
            "`inspect.currentframe()` or `sys._getframe()`), or a traceback that holds it, "
            "where that frame's locals can reach it makes a cycle: the frame and every local "
            "it had stay alive until the cyclic collector runs. The `inspect` documentation "
            "warns about exactly this."
        )
        drop = f"`del {code}`" if code else "delete the reference"
        fix = (
            f"{drop} as soon as you are done with it (in a finally block, as the `inspect` "
            "documentation advises), or keep only what you need (`frame.f_code.co_name`, "
            "`frame.f_lineno`, `traceback.format_tb(tb)`) instead of the frame."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, cut, "WAL303")


def _wrapped_method(view: CycleView, node: int) -> int | None:
    """The bound method a ``functools.wraps`` wrapper keeps in its ``__wrapped__``."""
    for edge in view.edges_from(node):
        if edge.name.name in ("['__wrapped__']", ".__wrapped__"):
            return edge.target
        if edge.name.kind == ek.INTERNAL and type(view.obj(edge.target)) is dict:
            for inner in view.edges_from(edge.target):
                if inner.name.name == "['__wrapped__']":
                    return inner.target
    return None


class WrappedMethodOnSelfPattern:
    """``self.forward = wrap(self.forward)``: a wrapper of a bound method, stored on its object."""

    name = "wrapped-method-on-self"
    title = "wrapper around an object's own method, stored on it"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A function whose ``__wrapped__`` is a bound method of an object that holds it."""
        for wrapper in view.shown:
            if type(view.obj(wrapper)) is not types.FunctionType:
                continue
            method = _wrapped_method(view, wrapper)
            if method is None or type(view.obj(method)) is not types.MethodType:
                continue
            owners = [e.target for e in view.edges_from(method) if e.name.kind == ek.BOUND_SELF]
            if not owners:
                continue
            steps = chain(view, owners[0], wrapper)
            if not steps:
                continue
            return self._words(view, wrapper, method, owners[0], steps)
        return None

    def _words(
        self, view: CycleView, wrapper: int, method: int, owner: int, steps: list[NamedEdge]
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        method_name = qualname_of(view.obj(method)).rsplit(".", 1)[-1]
        code = expression("self", steps)
        stored = f"`{code}`" if code else _stored_words(view, steps)
        wrapper_name = short_name(qualname_of(view.obj(wrapper)))
        summary = (
            f"{a_code(cls)} object stores in {stored} the wrapper `{wrapper_name}` around its own "
            f"bound method `{method_name}`"
        )
        explanation = (
            f"`functools.wraps` sets `__wrapped__` on the wrapper to the wrapped callable, here "
            f"the bound method `self.{method_name}`, and the wrapper's closure usually holds it "
            f"too. A bound method holds its instance, so the `{cls}` object holds the wrapper, "
            "the wrapper holds the method and the method holds the object: reference counting "
            "cannot free them."
        )
        remove = f"; or remove it when done (`del {code}`)" if code else ""
        fix = (
            f"Wrap the function once, in the class body (`{method_name} = decorator("
            f"{method_name})`), so the wrapper never holds an instance; if it must be per "
            f"instance, have the wrapper call `weakref.WeakMethod(self.{method_name})()` "
            f"instead of the bound method (and `del wrapper.__wrapped__`){remove}."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, steps[:1], "WAL201")


_CONTAINERS = (dict, list, tuple, set, frozenset)


class SelfInOwnContainerPattern:
    """``self.items = [self]``: an object kept in a container that its own attribute holds."""

    name = "self-in-own-container"
    title = "object kept in a container on its own attribute"

    def match(self, view: CycleView) -> PatternMatch | None:
        """object --.attr--> container --[i]/['k']--> the same object."""
        for edge in view.edges:
            if edge.name.kind != ek.ATTRIBUTE or not is_instance_node(view.obj(edge.source)):
                continue
            if not issubclass(type(view.obj(edge.target)), _CONTAINERS):
                continue
            back = [e for e in view.edges_from(edge.target) if e.target == edge.source]
            if back:
                return self._words(view, edge, back[0])
        return None

    def _words(self, view: CycleView, attr: NamedEdge, back: NamedEdge) -> PatternMatch:
        cls = type_qualname(type(view.obj(attr.source)))
        container_type = type(view.obj(attr.target))
        kind = container_type.__name__
        held_in = expression("self", [attr])
        entry = expression("self", [attr, back])
        summary = (
            f"{a_code(cls)} object keeps itself in the {kind} of its own attribute "
            f"`{attr.name.name}` (at `{back.name.name}`)"
        )
        explanation = (
            f"The `{cls}` object holds the {kind} in `{attr.name.name}`, and the {kind} holds "
            "the object again: a registry, a list of listeners or a lookup table that includes "
            "its own owner is a cycle, freed only by the cyclic collector."
        )
        if issubclass(container_type, list) and held_in:
            remove = f"`{held_in}.remove(self)`"
        elif issubclass(container_type, dict) and entry and back.name.name != "key":
            remove = f"`del {entry}`"
        else:
            remove = "remove it"
        dict_like = issubclass(container_type, dict)
        weak = "`weakref.WeakValueDictionary`" if dict_like else "`weakref.WeakSet`"
        fix = (
            f"Keep the object out of its own {kind}: keep the registry outside the object, "
            f"store `weakref.ref(self)` or use a {weak}, or {remove} when done."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, [back], None)


def _is_pytest_object(obj: object) -> bool:
    """An object of pytest's own making: its classes, or a frame running pytest's code."""
    module = type_module(type(obj)) or ""
    if module == "_pytest" or module.startswith(("_pytest.", "pytest.")):
        return True
    code = obj.f_code if type(obj) is types.FrameType else None
    return code is not None and f"{os.sep}_pytest{os.sep}" in code.co_filename


class PytestIdiomPattern:
    """pytest's own objects (``pytest.raises(...) as excinfo``, ``pytest.warns``) in the cycle."""

    name = "pytest-idiom"
    title = "pytest idiom (dies with the test)"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A cycle through an object pytest made for the test (ExceptionInfo, a recorder)."""
        owned = [n for n in view.members if _is_pytest_object(view.obj(n))]
        if not owned:
            return None
        shown = [n for n in view.shown if n in set(owned)] or owned
        what = type_short_name(type(view.obj(shown[0])))
        holders = [e for n in shown for e in view.edges_into(n) if e.name.kind in ek.USER_KINDS]
        held_by = f" in `{holders[0].name.name}`" if holders else ""
        summary = f"pytest's `{what}` is kept by the test{held_by} and refers back to its frame"
        explanation = (
            f"`with pytest.raises(...) as excinfo:` keeps the exception, whose traceback holds "
            f"the test's own frame, which holds `excinfo` (`pytest.warns` and fixtures' frames "
            f"do the same). pytest's `{what}` closes the loop. The cycle is freed with the "
            f"test's frame at the next collection, so it does not fail the test by default."
        )
        fix = (
            "Nothing to fix unless it holds much memory: then `del excinfo` (or the heavy "
            "local) at the end of the test."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, holders[:1])


_GENERATOR_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


class GeneratorFramePattern:
    """A generator or coroutine whose own frame refers to it."""

    name = "generator-frame"
    title = "generator that refers to itself"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A generator in the cycle with a reference into it from a frame/local."""
        gens = [n for n in view.shown if type(view.obj(n)) in _GENERATOR_TYPES]
        if not gens:
            return None
        gen = gens[0]
        loop = chain(view, gen, gen)
        into = view.edges_into(gen)
        # What the user wrote: an attribute or entry holding the generator, else its local.
        held = [e for e in into if e.name.kind in (ek.ATTRIBUTE, ek.KEY, ek.INDEX)]
        locals_in = [e for e in loop if e.name.kind == ek.LOCAL]
        cut = held[:1] or [e for e in into if e.name.kind == ek.LOCAL][:1] or into[:1]
        kind = type_short_name(type(view.obj(gen)))
        summary = f"{label(view, gen)} is held by its own frame"
        if loop:
            summary += f" through `{path_words(view, loop)}`"
        local = variable_of(locals_in[0]) if locals_in else None
        local = local if local and local.isidentifier() else None
        explanation = (
            f"A suspended {kind} keeps its frame, and the frame keeps its local variables; "
            f"{f'the local `{local}`' if local else 'one of them'} refers back to the {kind}, "
            "so reference counting cannot free them. The collector normally breaks such a "
            "loop by closing the generator (which clears its frame); this one survived that, "
            "usually because the generator catches `GeneratorExit` (a bare `except:` or "
            "`except BaseException:` around a `yield`) and yields again."
        )
        fix = (
            f"Do not keep the {kind} in its own frame"
            f"{f' (`{local}`)' if local else ''}: pass what it needs instead of the {kind} "
            "itself, or hold it through `weakref.ref`; and let `GeneratorExit` propagate "
            "(never yield after catching it) so `gen.close()` can clear the frame."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, cut, None)


def _autograd_node_type() -> type | None:
    graph = sys.modules.get("torch.autograd.graph")
    node = getattr(graph, "Node", None)
    return node if isinstance(node, type) else None


def _is_autograd_node(obj: object) -> bool:
    node_type = _autograd_node_type()
    if node_type is None:
        return False
    try:
        return issubclass(type(obj), node_type)
    except Exception:
        return False


class AutogradNodePattern:
    """Hooks or attributes attached to autograd nodes that refer back to the tensor."""

    name = "autograd-node"
    title = "autograd node holding its tensor or owner"

    def match(self, view: CycleView) -> PatternMatch | None:
        """An autograd node (``grad_fn``, custom Function ctx) inside the cycle."""
        nodes = [n for n in view.shown if _is_autograd_node(view.obj(n))]
        grad_fn_edges = [e for e in view.edges if e.name.name == ".grad_fn"]
        if not nodes and not grad_fn_edges:
            return None
        node = nodes[0] if nodes else grad_fn_edges[0].target
        out = [e for e in view.edges_from(node) if e.name.kind != ek.INTERNAL] or view.edges_from(
            node
        )
        summary = f"autograd node `{type_qualname(type(view.obj(node)))}` is part of the cycle"
        if out:
            summary += f": `{out[0].name.name}` attached to it refers back into the cycle"
        explanation = (
            "A tensor holds its autograd node (`grad_fn`) and the node holds what was attached "
            "to it: hooks registered with `register_hook`/`register_prehook`, or attributes set "
            "on it (a custom Function's `ctx`). When that attachment captures the tensor or its "
            "owner, the loop runs through autograd; the activations stay alive until the "
            "collector runs, and loops that pass through C++ are never collected at all."
        )
        attr = out[0].name.name if out and out[0].name.kind == ek.ATTRIBUTE else None
        attr = attr if attr and attr[1:].isidentifier() else None
        ctx_fix = (
            f"In a custom `autograd.Function`, save tensors with `ctx.save_for_backward(...)` "
            f"(it does not hold the output strongly) instead of `ctx{attr}`. "
            if attr
            else "In a custom `autograd.Function`, save tensors with "
            "`ctx.save_for_backward(...)` rather than as `ctx` attributes. "
        )
        fix = (
            f"{ctx_fix}Do not capture the tensor (or its owner) in hooks or attributes on its "
            "own autograd node: capture a `weakref.ref` instead, remove hooks with "
            "`handle.remove()` after use, and keep per-step state in a side table."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, out[:1], "WAL401")


class MethodCachePattern:
    """``functools.lru_cache``/``cache`` wrappers and class-level caches inside a cycle."""

    name = "method-cache"
    title = "cache that holds its owner"

    def match(self, view: CycleView) -> PatternMatch | None:
        """An lru_cache wrapper among the members."""
        wrapper_type = type(functools.lru_cache(maxsize=None)(lambda: None))
        caches = [n for n in view.shown if type(view.obj(n)) is wrapper_type]
        if not caches:
            return None
        cache = caches[0]
        wrapped = getattr(view.obj(cache), "__wrapped__", None)
        name = qualname_of(wrapped) if wrapped is not None else "function"
        summary = f"`functools.lru_cache` of `{name}` is part of the cycle"
        explanation = (
            f"The cache of `{name}` keeps every argument it was called with, `self` included; "
            "when the cache itself is reachable from those arguments (a per-class or "
            "per-instance cache), the objects hold the cache and the cache holds the objects."
        )
        into = view.edges_into(cache)
        cut = into[:1]
        held_in = expression("self", into[:1]) if into else None
        stored = (
            f" Here the cache is stored in `{held_in}`: drop it (`del {held_in}`) when done."
            if held_in and into[0].name.kind == ek.ATTRIBUTE
            else ""
        )
        if any(issubclass(type(view.obj(n)), type) for n in view.shown):
            # A class-level cache: the class is always a cycle of its own, so the cut
            # is the cache's entry that holds the instance (and its heavy objects).
            owners = [n for n in view.shown if is_instance_node(view.obj(n))]
            steps = chain(view, cache, owners[0]) if owners else []
            entries = [e for e in steps if e.name.kind in (ek.KEY, ek.INDEX)]
            cut = entries[:1] or cut
            short = short_name(name)
            stored = f" Or empty the cache when done: `{short}.cache_clear()`."
        fix = (
            f"Do not put `lru_cache`/`cache` on `{short_name(name)}` (a method): use "
            "`functools.cached_property`, a dict on the instance, or cache a module-level "
            f"function of the fields you need.{stored}"
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, cut, "WAL501")


class ParentChildPattern:
    """Objects that refer to each other: a tree's parent and child, a registry and member."""

    name = "parent-child"
    title = "parent and child refer to each other"

    def match(self, view: CycleView) -> PatternMatch | None:
        """Two or more user objects in the loop, linked by attributes."""
        instances = [n for n in view.shown if is_instance_node(view.obj(n))]
        if len(instances) < 2:
            return None
        attr_edges = [e for e in view.edges if e.name.kind == ek.ATTRIBUTE]
        if not attr_edges:
            return None
        back = next(
            (e for e in attr_edges if e.name.name.lstrip(".").lower() in BACK_NAMES),
            None,
        )
        if back is None:
            # The back reference is the direct attribute pointing at an object that holds
            # its children through a container (the child-side link).
            instance_set = set(instances)
            direct = [
                e for e in attr_edges if e.target in instance_set and e.source in instance_set
            ]
            back = direct[-1] if direct else attr_edges[-1]
        child = type_qualname(type(view.obj(back.source)))
        parent = type_qualname(type(view.obj(back.target)))
        attr = back.name.name.lstrip(".")
        summary = (
            f"{a_code(parent)} object and {a_code(child)} object refer to each other "
            f"(the `{child}` holds its `{parent}` in `.{attr}`)"
        )
        explanation = (
            f"The `{parent}` reaches the `{child}` and the `{child}` points back through "
            f"`.{attr}`. Two-way links between owner and member keep both alive until the "
            f"cyclic collector runs."
        )
        fix = (
            f"Hold the back reference weakly: `self.{attr} = weakref.ref({attr})` (or "
            f"`weakref.proxy`), or clear it (`self.{attr} = None`) when the `{child}` is "
            "detached."
            if attr.isidentifier()
            else "Hold the back reference weakly (`weakref.ref`), or clear it when the child "
            "is detached."
        )
        # Every child's back reference of that name: together they free the tree.
        backs = [e for e in attr_edges if e.name.name == back.name.name]
        return PatternMatch(self.name, self.title, summary, explanation, fix, backs, "WAL901")


class SelfContainingContainerPattern:
    """A container that holds itself, directly or through a state dict."""

    name = "self-containing-container"
    title = "container that contains itself"

    def match(self, view: CycleView) -> PatternMatch | None:
        """Only builtin containers (and instance dicts) in the loop."""
        if not all(type(view.obj(n)) in _CONTAINERS for n in view.shown):
            return None
        if len(view.shown) == 1:
            node = view.shown[0]
            edge = view.edges[0] if view.edges else None
            where = edge.name.name if edge else "an item"
            summary = (
                f"{a_code(type_short_name(type(view.obj(node))))} contains itself at `{where}`"
            )
            cut = [edge] if edge else []
        else:
            order = {n: i for i, n in enumerate(view.shown)}
            root = max(view.shown, key=lambda n: (len(view.edges_from(n)), -order[n]))
            back = view.edges_into(root)
            forward = [e for e in view.edges_from(root) if e.name.kind == ek.KEY]
            lead = forward[0].name.name if forward else "its items"
            summary = (
                f"{a_code(type_short_name(type(view.obj(root))))} holds, at `{lead}`, containers "
                "that refer back to it"
            )
            cut = forward[:1] or back[:1]
        explanation = (
            "A container reachable from its own items (a state dict such as "
            "`param_group['intermediates']` whose entries refer back to the group) is a "
            "cycle: reference counting cannot free it, so everything inside waits for the "
            "collector."
        )
        entry = (
            expression(holder_code(view, cut[0].source) or "container", cut[:1]) if cut else None
        )
        fix = (
            f"Keep the entries in a separate structure, or remove them after use (`del {entry}`)."
            if entry
            else "Do not store the container inside itself (keep the items elsewhere), or "
            "empty it after use (`container.clear()`)."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, cut, None)


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
_FAMILY_WORDS = {
    "attributes": ("attribute-loop", "loop through objects' attributes"),
    "container": ("container-loop", "loop through a container"),
    "closure": ("closure-loop", "loop through a closure"),
    "frame": ("frame-loop", "loop through a frame's locals"),
    "internal": ("reference-loop", "loop through interpreter references"),
}


class ReferenceLoopPattern:
    """Any other cycle, named by the kind of reference its cut is: attribute, entry, closure."""

    name = "attribute-loop"
    title = "loop through objects' attributes"

    def match(self, view: CycleView) -> PatternMatch:
        """Always matches: the family of the best cut names the loop and shapes the fix."""
        cut = choose_cut(view)
        edge = cut[0] if cut else None
        family = _FAMILIES.get(edge.name.kind, "internal") if edge else "internal"
        name, title = _FAMILY_WORDS[family]
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


def _family_fix(view: CycleView, family: str, edge: NamedEdge | None, code: str | None) -> str:
    if family == "attributes" and code and edge is not None and edge.name.kind == ek.ATTRIBUTE:
        attr = edge.name.name[1:]
        return (
            f"Clear the attribute when done (`{code} = None`), or hold it weakly "
            f"(`{code} = weakref.ref({attr})`, read as `{code}()`)."
        )
    if family == "container" and code:
        return (
            f"Remove the entry when done (`del {code}`), or keep the value elsewhere, or in a "
            "`weakref.WeakValueDictionary`."
        )
    if family == "closure" and code and edge is not None:
        outer = short_name(enclosing_function(qualname_of(_cell_owner(view, edge.source))))
        return (
            f"Do not let the nested function capture `{code}`: pass it as an argument, capture "
            f"`weakref.ref({code})`, or set `{code} = None` in `{outer}` when done."
        )
    if family == "frame" and code:
        return f"`del {code}` when done (in a finally block), or do not keep it in this frame."
    return (
        "Remove the reference named in the cut when done, or hold it with `weakref.ref`; the "
        "printed loop shows each reference in turn."
    )


def _cell_owner(view: CycleView, cell: int) -> object:
    for edge in view.edges_into(cell):
        if edge.name.kind == ek.CLOSURE:
            return view.obj(edge.source)
    return view.obj(cell)


def _link_words(link: Link) -> str:
    name = link.name
    if name.kind == ek.INDEX:
        holders = "list" if "list" in link.source_types else "container"
        return f"{holders} items"
    if name.kind == ek.CELL:
        return "closure cells"
    if name.kind == ek.CLOSURE:
        return f"closure variable `{name.name.split(' ', 1)[-1]}`"
    if name.kind in (ek.ATTRIBUTE, ek.KEY):
        return f"`{name.name}`"
    return f"`{name.name}` references" if name.name else "unnamed references"


class LinkedStructurePattern:
    """A big cycle: a tree with parent pointers, a ring, a doubly linked list, a graph."""

    name = "linked-structure"
    title = "large linked structure"

    def describe(self, view: CycleView, structure: Structure) -> PatternMatch:
        """Words for a component summarised by :func:`whyalive.structure.find_structure`."""
        made_of = members_words(structure.member_types)
        shown_links = [link for link in structure.links if link.name.kind != ek.INTERNAL][:4]
        linked = joined([_link_words(link) for link in shown_links])
        summary = f"{made_of} form one cycle" + (f", linked by {linked}" if linked else "")
        cut = structure.cut
        main = cut[0] if cut else None
        back = (
            main is not None
            and main.name.kind == ek.ATTRIBUTE
            and main.name.name.lstrip(".").lower() in BACK_NAMES
        )
        size = f"{structure.member_count:,} objects"
        if back and main is not None:
            owner = joined([kind_count_words(n, k) for k, n in main.source_types.most_common(2)])
            others = [
                _link_words(link)
                for link in shown_links
                if link is not main and link.name.kind != ek.CELL
            ]
            through = f" (through {joined(others)})" if others else ""
            explanation = (
                f"Each of the {owner} points back through `{main.name.name}` to an object that "
                f"reaches it again{through}: every link goes both ways, so the whole structure "
                f"({size}) is one cycle that reference counting can never free; it waits for "
                "the cyclic garbage collector."
            )
        else:
            explanation = (
                f"These references join the objects into one strongly connected structure of "
                f"{size}: each object is held by another one of them, so reference counting "
                "never frees any of them; the whole structure waits for the cyclic garbage "
                "collector."
            )
        cut_words = None
        if main is not None:
            cut_words = " and ".join(_cut_link_words(link) for link in cut)
            if not structure.verified:
                cut_words = (
                    "no single reference name frees the whole structure; the most common link "
                    f"is {cut_words}"
                )
        fix = _structure_fix(main)
        pattern = ParentChildPattern if back else LinkedStructurePattern
        lint = "WAL901" if back else None
        loop_cut = view.edges[:1]
        return PatternMatch(
            pattern.name, pattern.title, summary, explanation, fix, loop_cut, lint, cut_words
        )


def _cut_link_words(link: Link) -> str:
    """ "the attribute `.parent` of every `Node` object (1,999 references)"."""
    holder = link.source_types.most_common(1)[0][0] if link.source_types else "object"
    head, sep, _ = holder.partition(" object")
    every = f"every `{head}` object" if sep and head else f"every {holder}"
    name = link.name
    if name.kind == ek.ATTRIBUTE:
        what = f"the attribute `{name.name}` of {every}"
    elif name.kind == ek.INDEX:
        what = f"the items of {every}"
    elif name.kind == ek.KEY:
        what = f"the entry `{name.name}` of {every}"
    else:
        what = f"{_link_words(link)} of {every}"
    return f"{what} ({link.count:,} {'reference' if link.count == 1 else 'references'})"


def _structure_fix(link: Link | None) -> str:
    if link is None:
        return "Hold the links that point back into the structure with `weakref.ref`."
    name = link.name
    if name.kind == ek.ATTRIBUTE:
        attr = name.name.lstrip(".")
        if attr.isidentifier():
            return (
                f"Hold `self.{attr}` weakly: assign `self.{attr} = weakref.ref({attr})` and read "
                f"it as `self.{attr}()` (or use `weakref.proxy({attr})`); then reference "
                "counting frees the structure as soon as nothing outside refers to it. Or set "
                f"`node.{attr} = None` on every node when you are done with it."
            )
    if name.kind == ek.INDEX:
        return (
            "Do not let the items refer back to the container that holds them (hold that "
            "reference with `weakref.ref`), or empty the container when done (`items.clear()`)."
        )
    if name.kind == ek.KEY:
        return (
            f"Remove the `{name.name}` entries when done, or keep those values in a "
            "`weakref.WeakValueDictionary`."
        )
    return "Hold these references with `weakref.ref`, or clear them when the structure is done."


UNRECOGNISED = UnrecognisedPattern()
"""Said only when every pattern failed on a hostile object."""

PATTERNS: tuple[Pattern, ...] = (
    # First: pytest's own objects make the test's cycles look like user patterns.
    PytestIdiomPattern(),
    RecursiveClosurePattern(),
    # Before bound methods: `self.f = lru_cache(self.g)` also holds a bound method.
    MethodCachePattern(),
    WrappedMethodOnSelfPattern(),
    BoundMethodOnSelfPattern(),
    ExceptionTracebackPattern(),
    # Before kept frames: on 3.10 a suspended generator's frame is a member of its cycle.
    GeneratorFramePattern(),
    FrameKeptPattern(),
    AutogradNodePattern(),
    SelfInOwnContainerPattern(),
    ParentChildPattern(),
    SelfContainingContainerPattern(),
    ReferenceLoopPattern(),
)

PATTERN_NAMES: frozenset[str] = frozenset(
    {pattern.name for pattern in PATTERNS}
    | {name for name, _ in _FAMILY_WORDS.values()}
    | {LinkedStructurePattern.name, UNRECOGNISED.name}
)
"""Every pattern name a report can carry."""
