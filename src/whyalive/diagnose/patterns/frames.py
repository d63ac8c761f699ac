"""Frames kept alive: exceptions' tracebacks, stored frames, suspended generators."""

from __future__ import annotations

import types

from whyalive import edge_kinds as ek
from whyalive.diagnose.naming import (
    chain,
    label,
    path_words,
    reference_code,
    variable_of,
)
from whyalive.diagnose.patterns.base import PatternMatch
from whyalive.guarded import type_qualname, type_short_name
from whyalive.paths import CycleView


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
