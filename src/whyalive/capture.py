"""Capture the cyclic garbage created inside a block, then release it (DESIGN §3).

The block's baseline is the heap at :meth:`GarbageWatch.begin`. When the user has
not frozen anything, ``gc.freeze()`` moves that whole heap out of the collector's
view, so the closing collection only traverses what the block created (cheap even
on a torch-sized heap), and garbage that existed before is never blamed on the
block. When objects are already frozen we cannot unfreeze only our own, so we
pay one collection at ``begin`` instead.

While the block runs, ``DEBUG_SAVEALL`` is OR-ed into the user's flags, so an
automatic collection inside the block saves (rather than frees) what it finds
and the closing collection still sees every cycle the block created.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, field

from whyalive import graphcore
from whyalive.gcstate import GcSettings, user_saves_all

# The user's settings under each active watch, outermost first. A nested watch
# (``check_leaks`` inside a test the pytest plugin watches) sees the outer watch's
# DEBUG_SAVEALL in gc.get_debug(); this stack tells it the flag is not the user's.
_ACTIVE: list[GcSettings] = []


def watch_opened(settings: GcSettings) -> None:
    """Note that a watch saw the user's ``settings``; nested watches read the outermost."""
    _ACTIVE.append(settings)


def watch_closed(settings: GcSettings) -> None:
    """Forget the watch opened with ``settings`` (by identity, innermost first)."""
    for index in range(len(_ACTIVE) - 1, -1, -1):
        if _ACTIVE[index] is settings:
            del _ACTIVE[index]
            return


@dataclass
class CapturedGarbage:
    """Strong references to the captured garbage; short-lived, call :meth:`release`.

    ``objects`` is owned by this instance. The collector put the objects into an
    older generation when it saved them; dropping our references turns them back
    into garbage that only a collection of that generation frees.
    """

    objects: list[object] = field(default_factory=list)
    user_keeps: bool = False

    def release(self) -> None:
        """Drop every strong reference and let the collector free the garbage now."""
        objects = self.objects
        self.objects = []
        if self.user_keeps:
            # The user runs with DEBUG_SAVEALL: the garbage belongs in their gc.garbage.
            gc.garbage.extend(objects)
            objects.clear()
            return
        if graphcore.clear_objects is not None:
            # Break the cycles as the collector would (tp_clear), then let reference
            # counting free them: no second traversal of the generation.
            graphcore.clear_objects(objects)
            objects.clear()
            return
        if not objects:
            return
        objects.clear()
        del objects
        if not sys.is_finalizing():
            # DESIGN §3.2: free with DEBUG_SAVEALL off, or an enclosing watch saves it again.
            debug = gc.get_debug()
            gc.set_debug(debug & ~gc.DEBUG_SAVEALL)
            try:
                gc.collect()
            finally:
                gc.set_debug(debug)


def take_saved_garbage(start: int) -> list[object]:
    """Remove and return what collections appended to ``gc.garbage`` after index ``start``.

    Entries before ``start`` are the user's (or legacy uncollectables) and stay. If the
    user shortened the list meanwhile, whatever is left past the old end is ours.
    """
    return graphcore.take_tail(gc.garbage, start)


class GarbageWatch:
    """Bracket a block of code and capture the cyclic garbage it created."""

    def __init__(self) -> None:
        self._settings: GcSettings | None = None
        self._froze = False
        self._nested = False
        self._user_keeps = False
        self._start = 0

    @property
    def active(self) -> bool:
        """True between :meth:`begin` and :meth:`end`."""
        return self._settings is not None

    @property
    def used_freeze(self) -> bool:
        """Whether the baseline was frozen (cheap path) rather than collected.

        Inside another whyalive watch (a test the pytest plugin checks) the frozen
        objects are whyalive's baseline, not the user's, so this is True as well.
        """
        return self._froze or self._nested

    def begin(self) -> None:
        """Start watching: later garbage is saved, earlier garbage is left alone."""
        if self._settings is not None:
            raise RuntimeError("GarbageWatch.begin() called twice")
        settings = GcSettings.current()
        self._froze = gc.get_freeze_count() == 0
        self._nested = bool(_ACTIVE)
        if self._froze:
            gc.freeze()
        else:
            gc.collect()
        self._settings = settings
        self._user_keeps = user_saves_all(_ACTIVE[0] if _ACTIVE else settings)
        watch_opened(settings)
        self._start = len(gc.garbage)
        gc.set_debug(settings.debug | gc.DEBUG_SAVEALL)

    def end(self) -> CapturedGarbage:
        """Collect, take what the block left as garbage, and restore the user's settings."""
        settings = self._settings
        if settings is None:
            raise RuntimeError("GarbageWatch.end() called before begin()")
        self._settings = None
        try:
            if sys.is_finalizing():
                return CapturedGarbage()
            gc.collect()
            return CapturedGarbage(take_saved_garbage(self._start), user_keeps=self._user_keeps)
        finally:
            gc.set_debug(settings.debug)
            watch_closed(settings)

    def finish(self) -> None:
        """Give back the frozen baseline; call after the captured garbage is released."""
        if self._froze:
            self._froze = False
            gc.unfreeze()
