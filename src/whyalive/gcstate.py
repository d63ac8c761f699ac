"""The one process-wide owner of what whyalive changes in the garbage collector."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from whyalive.graph import core as graphcore

_SAVEALL = gc.DEBUG_SAVEALL


@dataclass(eq=False)
class Lease:
    """One whyalive user that needs ``DEBUG_SAVEALL``: a check, a pytest bracket, a run.

    ``overlapped`` turns True when another lease ran at the same time without
    being nested inside this one (another thread or asyncio task, or one that
    outlived it), so garbage found while both ran may be reported by the other.
    """

    serial: int
    thread: int
    task: object | None
    began: int
    freeze_count: int
    user_keeps: bool
    saveall_before: int
    overlapped: bool = False
    freeze_changed: bool = False
    analyze_now: Callable[[list[object]], object] | None = None
    """Turns what a collection saved into a plain record (a report) inside that collection.

    Collections that whyalive did not run (the user's ``gc.collect()``, automatic
    ones) are then analysed and released before they return, so they free what
    they would free without whyalive; the records wait in :attr:`records`.
    """
    records: list[object] = field(default_factory=list)


class GcOwner:
    """The process's one owner of what whyalive changes in the collector.

    Checks, the pytest plugin and the monitor may start and stop in any order
    (threads, asyncio tasks, generators). The owner counts who needs what:
    ``DEBUG_SAVEALL`` is on while any :class:`Lease` is open and the user's own
    bit comes back when the last one closes; the heap stays frozen while any
    freeze hold is open. Its gc callback moves out of ``gc.garbage`` exactly the
    objects each saving collection found unreachable, and nothing else: what the
    user (or a ``__del__``) put there stays theirs, untouched.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._leases: list[Lease] = []
        self._serial = 0
        self._user_debug = gc.get_debug()
        # (collection number, objects) per saving collection, oldest first.
        self._saved: list[tuple[int, list[object]]] = []
        self._collections = 0
        self._garbage_start = -1
        self._freeze_holds = 0
        self._probes: tuple[list[object], list[object]] | None = None
        self._collection_holds = 0
        # Threads running a capture collection (its garbage is the caller's to claim).
        self._capturing: set[int] = set()
        # (collection number, record) per collection analysed inside its stop callback.
        self._records: list[tuple[int, object]] = []
        # Bound now: the callback may run during interpreter shutdown.
        self._garbage = gc.garbage
        self._get_debug = gc.get_debug

    @property
    def saving(self) -> bool:
        """True while some lease keeps ``DEBUG_SAVEALL`` on."""
        return bool(self._leases)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        # Inside the collector: no collection, import or analysis here.
        garbage = self._garbage
        if phase == "start":
            # Held until "stop": finalizers run Python code, so another thread could
            # otherwise flip DEBUG_SAVEALL between what this callback reads and what
            # the collector does (garbage saved but never taken, or taken but free).
            self._lock.acquire()
            self._collection_holds += 1
            self._collections += 1
            self._garbage_start = len(garbage) if self._get_debug() & _SAVEALL else -1
            return
        if not self._collection_holds:
            return  # installed during this very collection (by a finalizer)
        try:
            self._take_saved(garbage, info)
        finally:
            self._collection_holds -= 1
            self._lock.release()

    def _take_saved(self, garbage: list[object], info: dict[str, int]) -> None:
        start, self._garbage_start = self._garbage_start, -1
        if start < 0:
            return
        # Finalizers and weakref callbacks (which may append the user's live objects)
        # run before the collector saves; legacy uncollectables are appended after.
        end = len(garbage) - info["uncollectable"]
        first = max(start, end - info["collected"])
        if end <= first:
            return
        if end == len(garbage):
            objects = graphcore.take_tail(garbage, first)
        else:
            objects = garbage[first:end]
            del garbage[first:end]
        if not self._release_now(objects):
            self._saved.append((self._collections, objects))

    def _release_now(self, objects: list[object]) -> bool:
        """Analyse and free what a collection whyalive did not run saved; False: keep it.

        Runs inside the collection's stop callback, so nothing here may collect (it
        would do nothing); tp_clear breaks the cycles and reference counting frees
        them before the collection returns to the user's code.
        """
        clear = graphcore.clear_objects
        capturing = threading.get_ident() in self._capturing
        if capturing or clear is None or self._user_debug & _SAVEALL:
            return False
        analyze_now = next(
            (lease.analyze_now for lease in reversed(self._leases) if lease.analyze_now), None
        )
        if analyze_now is None:
            return False
        try:
            record = analyze_now(objects)
        except Exception:  # an analysis failure must never break the user's collection
            return False
        self._records.append((self._collections, record))
        clear(objects)
        objects.clear()
        return True

    def open_lease(self, analyze_now: Callable[[list[object]], object] | None = None) -> Lease:
        """Turn ``DEBUG_SAVEALL`` on (if not on already) and capture from now on.

        With ``analyze_now``, what other collections save meanwhile is analysed and
        freed inside them (see :attr:`Lease.analyze_now`).
        """
        with self._lock:
            if not self._leases:
                self._user_debug = gc.get_debug()
                # First, so gc.garbage is read before any other callback can change it.
                gc.callbacks.insert(0, self._on_gc)
            debug = gc.get_debug()
            gc.set_debug(debug | _SAVEALL)
            self._serial += 1
            lease = Lease(
                serial=self._serial,
                thread=threading.get_ident(),
                task=_current_task(),
                began=self._collections,
                # Only read without a whyalive freeze (the probes tell then).
                freeze_count=gc.get_freeze_count() if self._probes is None else 0,
                user_keeps=bool(self._user_debug & _SAVEALL),
                saveall_before=debug & _SAVEALL,
                analyze_now=analyze_now,
            )
            self._leases.append(lease)
            return lease

    def collect(self, lease: Lease, generation: int = 2) -> list[object]:
        """Run a saving collection and take what was saved since ``lease`` began or last took."""
        # The block may have reset the flags (gc.set_debug(0)); capture regardless.
        gc.set_debug(gc.get_debug() | _SAVEALL)
        thread = threading.get_ident()
        self._capturing.add(thread)
        try:
            gc.collect(generation)
        finally:
            self._capturing.discard(thread)
        return self._claim(lease)

    def _claim(self, lease: Lease) -> list[object]:
        with self._lock:
            saved = self._saved
            self._saved = []
            began, lease.began = lease.began, self._collections
            objects: list[object] = []
            for number, batch in saved:
                if number > began:
                    if objects:
                        objects.extend(batch)
                    else:
                        objects = batch
                else:
                    self._saved.append((number, batch))
            saved.clear()
            records, self._records = self._records, []
            for number, record in records:
                if number > began:
                    lease.records.append(record)
                else:
                    self._records.append((number, record))
            # Under whyalive's freeze the probes tell, once, in drop_freeze(): scanning
            # what is not frozen is cheap only after the captured garbage is freed.
            if self._probes is None and gc.get_freeze_count() > lease.freeze_count:
                # Frozen objects that die shrink the count; only gc.freeze() grows it
                # (a freeze of fewer objects than died meanwhile goes unseen).
                lease.freeze_changed = True
            return objects

    def close_lease(self, lease: Lease, generation: int = 2) -> list[object]:
        """The lease's closing collection; restores the user's flags when it is the last."""
        if sys.is_finalizing():
            objects: list[object] = []
        else:
            objects = self.collect(lease, generation)
        with self._lock:
            self._leases.remove(lease)
            for other in self._leases:
                # Nested: opened earlier in this thread, and either in this task or
                # outside any task (it then encloses the whole event loop).
                nested = (
                    other.serial < lease.serial
                    and other.thread == lease.thread
                    and other.task in (None, lease.task)
                )
                if not nested:
                    other.overlapped = lease.overlapped = True
            if self._leases:
                if not lease.overlapped:
                    # Nested: the enclosing user gets the bit it had (it may have turned
                    # SAVEALL off itself; the pytest plugin turns it back on).
                    gc.set_debug(gc.get_debug() & ~_SAVEALL | lease.saveall_before)
                return objects
            user_bit = self._user_debug & _SAVEALL
            gc.set_debug(gc.get_debug() & ~_SAVEALL | user_bit)
            gc.callbacks.remove(self._on_gc)
            while self._collection_holds:  # closed by a finalizer: "stop" will not come
                self._collection_holds -= 1
                self._lock.release()
            # Saved between the closing collection and now (an automatic collection
            # inside an allocation on 3.10/3.11): nobody else will take it.
            for _, batch in self._saved:
                objects.extend(batch)
            self._saved = []
            lease.records.extend(record for _, record in self._records)
            self._records = []
            return objects

    @contextmanager
    def freeing(self) -> Iterator[None]:
        """``DEBUG_SAVEALL`` off for one collection that frees what whyalive released.

        Under the owner's lock, so no other thread opens or closes a lease meanwhile;
        the bit comes back as it was (the user may have turned it off inside a
        check), unless a finalizer opened a lease during the collection.
        """
        with self._lock:
            before = gc.get_debug() & _SAVEALL
            serial = self._serial
            gc.set_debug(gc.get_debug() & ~_SAVEALL)
            try:
                yield
            finally:
                opened = self._serial != serial and self._leases
                gc.set_debug(gc.get_debug() & ~_SAVEALL | (_SAVEALL if opened else before))

    def hold_freeze(self) -> tuple[bool, bool]:
        """Freeze the heap for a cheap baseline: (whyalive holds a freeze, this call froze).

        Nothing is held when the user froze objects themselves: whyalive cannot
        unfreeze only its own.
        """
        with self._lock:
            if self._freeze_holds == 0:
                if gc.get_freeze_count() != 0:
                    return False, False
                # Probes tell later whether someone else froze or unfroze (see
                # _freeze_changed); the freeze count cannot: on 3.11 reading it walks
                # the whole frozen heap, and frozen objects that die shrink it.
                frozen_probe = [object()]
                gc.freeze()
                self._probes = (frozen_probe, [object()])
                self._freeze_holds = 1
                return True, True
            self._freeze_holds += 1
            return True, False

    def freeze_available(self) -> bool:
        """Whether :meth:`hold_freeze` would hold a freeze now (nobody else froze objects)."""
        with self._lock:
            return self._freeze_holds > 0 or gc.get_freeze_count() == 0

    def _freeze_changed(self) -> bool:
        """Whether someone else froze (or unfroze) the heap since whyalive froze it.

        Each probe's content has one referrer, the probe, which gc.get_referrers
        finds only while the probe is not frozen: the one made before whyalive's
        freeze is found again after an unfreeze, the one made after it is lost
        after another freeze. One scan, of what is not frozen.
        """
        if self._probes is None:
            return False
        frozen_probe, live_probe = self._probes
        found = gc.get_referrers(frozen_probe[0], live_probe[0])
        return not (len(found) == 1 and found[0] is live_probe)

    def drop_freeze(self) -> bool:
        """Give back one freeze hold; the last one unfreezes, unless the user froze since.

        ``gc.freeze()`` by the user moved everything then alive, whyalive's baseline
        included, into the permanent generation: unfreezing would undo their freeze.
        Returns whether someone else froze or unfroze the heap since whyalive froze it
        (one probe; call it after the captured garbage is freed, when that is cheap).
        """
        with self._lock:
            changed = self._freeze_changed()
            self._freeze_holds -= 1
            if self._freeze_holds == 0:
                if not changed:
                    gc.unfreeze()
                self._probes = None
                if self._leases:
                    count = gc.get_freeze_count()
                    for lease in self._leases:
                        lease.freeze_count = count
            return changed


def _current_task() -> object | None:
    """The running asyncio task, if the user's program uses asyncio (never imported here)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        task: object | None = asyncio.current_task()
    except RuntimeError:  # no running event loop in this thread
        return None
    return task


OWNER = GcOwner()
