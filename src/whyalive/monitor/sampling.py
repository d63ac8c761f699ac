"""The sampling hook: which collections to save, and the gc callback that saves them.

The callback (:meth:`GcSampler._on_gc`) only flips ``DEBUG_SAVEALL`` on for the
collections the sampling policy picks and moves what they saved out of
``gc.garbage``; it never collects, imports, logs or analyses (a gc callback runs
inside the collector, where any of those can deadlock or recurse). It is entered
through :func:`whyalive.capture.interrupts.gc_callback`: when an interrupt cuts it, its
rescue puts the flag back and still takes what was saved. Saved objects move to the
next generation, so where they were saved decides what releasing them costs:
:meth:`GcSampler._release` collects there with the callback muted.
"""

from __future__ import annotations

import gc
import sys
import time

from whyalive.capture.collector import older_generation
from whyalive.capture.gcsaving import SavingCollection
from whyalive.capture.gcstate import OWNER
from whyalive.capture.interrupts import gc_callback
from whyalive.graph import core as graphcore
from whyalive.monitor.stats import MonitorStats

_SAVEALL = gc.DEBUG_SAVEALL
# Rough cost of traversing one object in a full collection, until one is measured.
_OBJECT_SECONDS = 0.5e-6
# A full release this cheap is allowed at once, whatever the budget says so far.
_FULL_GRACE = 0.002
# Share of max_overhead that _free's optional full saving collections may take.
_OLDER_LOOK_SHARE = 0.25


class GcSampler:
    """The state the gc callback reads and the callback itself; :class:`GcMonitor` adds
    the safe points that analyse and free what it saved."""

    def __init__(self, *, every: int, max_overhead: float, max_pending: int) -> None:
        self.every = every
        self.max_overhead = max_overhead
        self.max_pending = max_pending
        self.stats = MonitorStats()
        # The callback reads only these attributes and bound C functions, which
        # survive the module teardown of interpreter shutdown.
        self._off = True
        self._quiet = False
        self._forced = False
        self._waiting = False  # what a collection saves waits for the next batch
        self._signal = False
        self._boost = False
        self._due = False
        self._armed: SavingCollection | None = None
        self._armed_generation = 0
        self._young_seen = 0
        self._full_spent = 0.0
        self._full_cost = 0.0
        self._older_spent = 0.0  # seconds _free spent in optional full collections
        self._older_cost = 0.0  # the last one's
        self._saved: list[object] = []
        self._held_in = 0
        self._garbage = gc.garbage
        self._get_debug = gc.get_debug
        self._set_debug = gc.set_debug
        self._hook = gc_callback(self._on_gc, self._rescue)
        self._clock = time.perf_counter
        self._is_finalizing = sys.is_finalizing
        self._started_at = 0.0
        # The heap present at start is frozen (so full releases cost what the run made).
        self._froze = False

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        # Inside the collector: no collection, import, logging or analysis here.
        if phase == "start":
            if self._off or self._is_finalizing():
                return
            generation = info["generation"]
            if self._saved and generation >= self._held_in:
                self._held_in = older_generation(generation)  # what we hold is promoted
            if self._quiet:
                return
            if self._forced or self._wants(generation):
                debug = self._get_debug()
                if not debug & _SAVEALL:  # the user's own SAVEALL garbage stays theirs
                    self._armed_generation = generation
                    self._armed = SavingCollection(len(self._garbage), debug)
                    self._set_debug(debug | _SAVEALL)
            return
        armed = self._armed
        if armed is not None:
            self._take(armed, info)
        elif not (self._off or self._quiet):
            collected = info["collected"]
            self._signal = collected > 0
            self.stats.unexamined_objects += collected

    def _take(self, armed: SavingCollection, info: dict[str, int]) -> None:
        """Disarm and keep what the armed collection saved (also the rescue's second try)."""
        armed.disarm()
        saved = armed.take(self._garbage, info)
        self._armed = None
        if saved is None:
            return
        self._signal = bool(saved)
        if saved:
            # What a freeing collection found waits for the next automatic one.
            self._due = self._due or not (self._forced or self._waiting)
            self._saved.extend(saved)
            self._held_in = max(self._held_in, older_generation(self._armed_generation))
        self.stats.examined += 1

    def _rescue(self, phase: str, info: dict[str, int]) -> None:
        """An interrupt cut the callback: never leave a collection armed or its garbage out."""
        armed = self._armed
        if armed is None:
            return
        if phase == "start":
            armed.disarm()  # this collection frees, unexamined
            self._armed = None
            return
        self._take(armed, info)

    def _settle(self, *_: object, **__: object) -> None:
        """No flag or armed collection left (the rescue of a safe point an interrupt cut)."""
        self._forced = self._quiet = self._waiting = False
        armed = self._armed
        if armed is not None:  # stopped inside a collection, or a cut callback
            armed.disarm()
            self._armed = None

    def _uninstall(self) -> None:
        """The callback out of ``gc.callbacks``, the frozen baseline given back; idempotent."""
        self._saved = []
        callbacks = OWNER.callbacks
        for index, callback in enumerate(callbacks):
            if callback is self._hook:
                del callbacks[index]
                break
        self._froze = False
        OWNER.freeze.drop(self)

    def _wants(self, generation: int) -> bool:
        if len(self._saved) >= self.max_pending:
            return False
        if older_generation(generation) < 2:
            self._young_seen += 1
            if self._signal or self._boost or self._young_seen % self.every == 0:
                self._boost = False
                return True
            return False
        # Freeing what an older collection saves takes a full collection: budget it.
        allowed = self.max_overhead * (self._clock() - self._started_at) + _FULL_GRACE
        return self._full_spent + self._full_cost <= allowed

    def _release(self, generation: int, *, scheduled: bool = False) -> int:
        """Collect ``generation`` with SAVEALL off and the callback muted (GC rules 2 in
        docs/architecture.md)."""
        began = self._clock()
        try:
            self._quiet = True
            return OWNER.free_collect(generation)
        finally:
            self._quiet = False
            if generation == 2 and not scheduled:
                self._full_cost = self._clock() - began
                self._full_spent += self._full_cost
                self.stats.full_releases += 1

    def _looks_older(self) -> bool:
        """Whether a batch held in the old generation is freed with a full saving collection.

        Ours are freed by tp_clear either way; the collection only looks for other cycles
        that grew old there. It traverses everything made since the start that is still
        alive (the user's, and whyalive's own lazily imported modules and caches), about
        0.15 us an object, so it runs within a quarter of ``max_overhead``: what it would
        find stays in the old generation until a full collection, found later, not lost.
        """
        elapsed = self._clock() - self._started_at
        return (
            self._older_spent + self._older_cost <= _OLDER_LOOK_SHARE * self.max_overhead * elapsed
        )

    def _saving_collect(self, generation: int) -> None:
        """``gc.collect(generation)`` with the callback saving whatever the sampling says.

        Its own function: a ``try`` inside a ``with`` block (the monitor's lock) is not
        covered by the ``with`` when a tracer raises on the ``try`` line (3.11+).
        """
        try:
            self._forced = True
            gc.collect(generation)
        finally:
            self._forced = False

    def _dispose(self, objects: list[object], held_in: int | None, heavy: bool) -> None:
        """Let an analysed batch go (``held_in=None``: the caller's collection frees it).

        The analysis ran with the collector off, so the first allocation after it sets off
        an automatic young collection, which finds the step's garbage (a leak's latest
        cycle): what it saves waits for the next batch instead of costing an analysis of
        its own at the next safe point (found and counted all the same).
        """
        try:
            if held_in is None:
                objects.clear()
            elif held_in < 2 or heavy or self._froze:
                self._free(objects, held_in)
            else:
                # Light garbage only, already old: the next full collection frees it.
                self.stats.deferred_objects += len(objects)
                objects.clear()
        finally:
            self._waiting = False

    def _free(self, objects: list[object], held_in: int) -> None:
        """Drop ``objects`` and collect where they are, seeing what else that collection frees.

        While the heap is frozen a full collection is cheap, so one saving
        collection runs (in the old generation within a budget, see
        :meth:`_looks_older`): other garbage it finds (cycles promoted while they were
        alive) is kept for the next safe point instead of going unseen. Ours is freed
        before it by the C core's tp_clear; without the C core the collection saves
        ours as well, picked out by id (every saved object is alive until
        collected) and freed by a second, releasing collection.
        """
        count = len(objects)
        if not self._froze:
            objects.clear()
            collected = self._release(held_in)
            self.stats.unexamined_objects += max(collected - count, 0)
            return
        clear = graphcore.clear_objects
        mine: set[int] = set()
        if clear is not None:
            # Ours go now: tp_clear breaks their cycles (as the collector would) and
            # reference counting frees them, so the one saving collection below only
            # looks for others.
            clear(objects)
            objects.clear()
            if held_in < 2 or self._looks_older():
                began = self._clock()
                self._saving_collect(held_in)
                if held_in == 2:
                    self._older_cost = self._clock() - began
                    self._older_spent += self._older_cost
            return
        mine.update(map(id, objects))
        objects.clear()
        self._saving_collect(held_in)
        saved, self._saved = self._saved, []
        self._saved = [o for o in saved if id(o) not in mine]
        saved.clear()
        self._release(2)
