"""Frames kept alive: exceptions' tracebacks, stored frames, suspended generators."""

from __future__ import annotations

import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import DELETE, DROP_TRACEBACK, WORDS_ONLY
from whyalive.analysis.naming import (
    chain,
    label,
    path_words,
    reference_code,
    variable_of,
)
from whyalive.analysis.node_names import code_qualname
from whyalive.analysis.paths import CycleView
from whyalive.guarded import type_module, type_mro, type_qualname, type_short_name
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek


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
        # The exception the code keeps (`failures["blob"] = err`), not one it chains.
        kept_exceptions = [h.target for h in holders if h.target in exceptions]
        exc = kept_exceptions[0] if kept_exceptions else exc
        # `raise LoadError(...) from e`: the chained exception's traceback holds frames of its
        # own, which dropping the kept one's traceback leaves in place.
        chained = any(
            e.name.name in ("__cause__", "__context__") and e.target in exceptions
            for node in exceptions
            for e in view.edges_from(node)
        )
        frame_words = ", ".join(label(view, f) for f in frames[:3])
        exc_name = type_qualname(type(view.obj(exc)))
        named = [h for h in holders if h.name.kind != ek.UNKNOWN]
        if named:
            holder = named[0]
            held_by = f"{label(view, holder.source)} holds it again in `{holder.name.name}`"
        elif holders:
            held_by = f"{label(view, holders[0].source)} holds it again"
        else:
            held_by = "the frames hold it again"
        summary = f"`{exc_name}` exception keeps its traceback (frames: {frame_words}); {held_by}"
        locals_held = sorted(
            {
                variable_of(edge)
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
        # `info = sys.exc_info()`: the tuple holds the traceback too, and takes no `del`;
        # `errors.append(exc)` twice: each exception closes a loop, item by item advice frees
        # one. Both are advised as the container.
        shape: type | None = None
        into = None
        if kept and len({h.source for h in holders}) == 1:
            shape = type(view.obj(holders[0].source))
            if shape is tuple or (len(holders) > 1 and shape is list):
                into = next(iter(view.edges_into(holders[0].source)), None)
        whole = reference_code(view, into) if into is not None else None
        in_tuple = whole is not None and shape is tuple
        if in_tuple and into is not None:
            # The cut is what holds the tuple (`self.exc_info`, `info`), never `self` or the
            # tuple's item, which no `del` removes; a stored `sys.exc_info()` is no exception
            # to drop the traceback of.
            holders = [into]
        if kept and whole and shape is list:
            fix = (
                f"Clear `{whole}` once its exceptions have been reported (`{whole}.clear()`, or "
                f"`del {whole}` in a finally block), or keep only what you need of each (its "
                f"message, its formatted traceback) instead of the exception objects: each of them "
                f"holds the frames of its traceback."
            )
            also = f"Or keep only what you need of each exception in `{whole}`, not the objects."
        elif kept and whole:
            fix = (
                f"Keep only what you need (`str({kept})`, `traceback.format_exception({kept})`) "
                f"instead of the tuple, which holds the traceback as well, or `del {whole}` in a "
                "finally block."
            )
            also = (
                f"Or keep only what you need (`str({kept})`, `traceback.format_exception("
                f"{kept})`) instead of the tuple, which holds the traceback as well."
            )
        elif kept and chained:
            fix = (
                f"Keep the text of the exception and of the ones it chains "
                f"(`traceback.format_exception({kept})`) instead of the objects, or "
                f"`del {kept}` when done: dropping its own traceback "
                f"(`{kept}.with_traceback(None)`) leaves the frames of its `__cause__` or "
                f"`__context__` holding their locals."
            )
            also = ""
        elif kept:
            fix = (
                f"Keep the exception without its frames (`{kept}.with_traceback(None)` once "
                f"it is stored), keep only what you need (`str({kept})`, "
                f"`traceback.format_exception({kept})`), or `del {kept}` in a finally block."
            )
            also = (
                f"Or keep only what you need (`str({kept})`, `traceback.format_exception("
                f"{kept})`), clear its frames' locals once they have returned "
                f"(`traceback.clear_frames({kept}.__traceback__)`), or `del {kept}` in a "
                "finally block when done."
            )
        else:
            fix = (
                "Do not keep the exception object beyond its except block: keep only what you "
                "need (its message, its formatted traceback), or drop its frames with its "
                "with_traceback method (given None) before storing it."
            )
            also = ""
        # `exc, tb = sys.exc_info()[1:]`: the frame's own locals keep the exception and its
        # traceback; deleting them (every one: each closes a loop) is the edit.
        kept_locally = [e for e in holders if e.name.kind == ek.LOCAL]
        if holders and len(kept_locally) == len(holders):
            cut = kept_locally + [
                e
                for node in view.shown
                if type(view.obj(node)) is types.TracebackType
                for e in view.edges_into(node)
                if e.name.kind == ek.LOCAL
            ]
            return PatternMatch(
                self.name, self.title, summary, explanation, fix, cut, "WAL301", None, DELETE,
                also,
            )  # fmt: skip
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, holders[:1], "WAL301", None,
            WORDS_ONLY if chained or in_tuple else DROP_TRACEBACK, also,
        )  # fmt: skip


def _is_future(obj: object) -> bool:
    """An asyncio or concurrent.futures future or task (read from the type, never the object)."""
    for cls in type_mro(type(obj)):
        module = type_module(cls) or ""
        if type_short_name(cls) in ("Future", "Task") and module.split(".")[0] in (
            "asyncio",
            "_asyncio",
            "concurrent",
        ):
            return True
    return False


class ExceptionInFuturePattern:
    """An exception handed to an asyncio future (or task) whose traceback reaches the future."""

    name = "exception-in-future"
    title = "exception kept by a future"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A future and an exception in the cycle; the exception's frames reach the future."""
        futures = [n for n in view.shown if _is_future(view.obj(n))]
        exceptions = [n for n in view.shown if issubclass(type(view.obj(n)), BaseException)]
        if not futures or not exceptions:
            return None
        exc = exceptions[0]
        future = futures[0]
        frames = [n for n in view.shown if type(view.obj(n)) is types.FrameType]
        exc_name = type_qualname(type(view.obj(exc)))
        what = type_short_name(type(view.obj(future)))
        frame_words = ", ".join(label(view, f) for f in frames[:2]) or "its frames"
        summary = (
            f"`{exc_name}` exception is kept by {a_code(what)} object, and its traceback "
            f"({frame_words}) reaches the {what.lower()} again"
        )
        thing = what.lower()
        explanation = (
            f"The {thing} keeps the exception it was handed (by `set_exception()`, or its "
            "coroutine raised it), and the exception keeps its `__traceback__`: every frame it "
            "passed through, each with its locals, the frames that waited for the "
            f"{thing} and got the exception back included. Here {_frame_back(view, exc, future)} "
            f"reaches the {thing} again: a loop that only the collector frees."
        )
        fix = (
            f"Drop the exception's frames where the {thing} hands it back: in the except clause "
            f"that catches it from the {thing} (await, result()), set its __traceback__ to None "
            f"on the way out; where the exception is handed to a {thing}, hand it over without "
            f"them (with_traceback(None)); or do not keep the {thing} where those frames can "
            "reach it."
        )
        also = (
            f"Or do not keep the {thing} where the frames that handle the exception can reach it."
        )
        cut = [e for e in view.edges_from(exc) if e.name.name == "__traceback__"]
        held = [e for e in view.edges_into(exc) if e.source == future]
        hidden = not held or all(e.name.kind in (ek.UNKNOWN, ek.INTERNAL) for e in held)
        cut_words = f"the traceback the `{exc_name}` keeps (`__traceback__`)" + (
            f": the {what.lower()}'s own reference to the exception is a slot no code of "
            "yours names"
            if hidden
            else ""
        )
        return PatternMatch(
            self.name,
            self.title,
            summary,
            explanation,
            fix,
            cut,
            "WAL301",
            cut_words,
            DROP_TRACEBACK,
            also,
        )


def _frame_back(view: CycleView, exc: int, future: int) -> str:
    """ "the frame of `Client.start` (its local `self`)": the frame on the way from the
    exception back to the future, and its local that leads there."""
    for step in chain(view, exc, future):
        frame = view.obj(step.source)
        if step.name.kind == ek.LOCAL and type(frame) is types.FrameType:
            name = code_qualname(frame.f_code, frame)
            variable = variable_of(step)
            local = f" (its local `{variable}`)" if variable.isidentifier() else ""
            return f"the frame of `{name}`{local}"
    return "one of those frames"


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
        drop = f"`del {code}`" if code else "Delete the reference"
        name = code if code and code.isidentifier() else None
        keep = (
            f" (`{name}.f_code.co_name`, `{name}.f_lineno`)"
            if name and held == "frame"
            else f" (`traceback.format_tb({name})`)"
            if name
            else ""
        )
        fix = (
            f"{drop} as soon as you are done with it (in a finally block, as the `inspect` "
            f"documentation advises), or keep only what you need{keep} instead of the {held}."
        )
        also = f"Or keep only what you need{keep} instead of the {held}" + (
            f", or {drop} when done." if code else "."
        )
        remedy = DELETE if cut and cut[0].name.kind in (ek.LOCAL, ek.ATTRIBUTE) else None
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, "WAL303", None, remedy, also
        )


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
            "(never yield after catching it), so that closing it can clear the frame."
        )
        # Words only: a weak reference to a suspended generator would end it at once, and
        # the loop through its own frame is the code's to restructure.
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, None, None, WORDS_ONLY
        )
