"""What one collection armed with ``DEBUG_SAVEALL`` saved: found by position, counts and identity.

Shared by the owner's gc callback (:mod:`whyalive.capture.gcstate`) and the monitor's
(:mod:`whyalive.monitor.sampling`); both methods are safe to repeat, so the rescue
of a callback an interrupt cut finishes its work (docs/architecture.md, GC rules 10).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from whyalive.graph import core as graphcore

_SAVEALL = gc.DEBUG_SAVEALL


@dataclass(eq=False)
class SavingCollection:
    """One collection that a gc callback armed with ``DEBUG_SAVEALL``: what it saved.

    ``start`` is the length of ``gc.garbage`` when it started, ``armed`` the debug
    flags the callback found (None: ``DEBUG_SAVEALL`` was the user's own). Both
    methods are safe to repeat, so the callback's rescue finishes what an interrupt
    cut: :meth:`take` moves the saved objects out exactly once (a repeat finds
    ``gc.garbage`` no longer at ``stop_len``).
    """

    start: int
    armed: int | None
    stop_len: int = -1
    objects: list[object] | None = None

    def disarm(self) -> None:
        """Put back the ``DEBUG_SAVEALL`` bit the callback found."""
        armed = self.armed
        if armed is not None:
            gc.set_debug(gc.get_debug() & ~_SAVEALL | armed & _SAVEALL)
            self.armed = None  # after: a repeat must still see what to put back

    def take(self, garbage: list[object], info: dict[str, int]) -> list[object] | None:
        """Move out of ``garbage`` what the collection saved; None once taken."""
        if self.objects is not None:
            return None
        if self.stop_len < 0:
            self.stop_len = len(garbage)
        elif len(garbage) != self.stop_len:
            self.objects = []  # an interrupt cut the take after it moved them
            return None
        # Finalizers and weakref callbacks (which may append the user's objects) run
        # before the collector saves; legacy uncollectables are appended after.
        # "collected" also counts the weakrefs freed after their callbacks, so it only
        # bounds what was saved: which entries are ours is told by identity (nothing
        # outside them holds any of them).
        end = self.stop_len - info["uncollectable"]
        first = max(self.start, end - info["collected"])
        if end > first:
            first = graphcore.saved_start(garbage, first, end)
        if end <= first:
            self.objects = []
        elif end == len(garbage):
            self.objects = graphcore.take_tail(garbage, first)
        else:
            taken = garbage[first:end]
            del garbage[first:end]
            self.objects = taken
        return self.objects
