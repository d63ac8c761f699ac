"""The one process-wide owner of what whyalive changes in the garbage collector.

Every change it makes survives an interrupt at any bytecode (docs/architecture.md,
GC rules 10): ``DEBUG_SAVEALL`` is only on during the collections it watches (its
gc callback turns it on at their start and back off at their stop, and the callback
is entered through C, which re-raises an interrupt once the collection returns);
everything else is registered first and undone by idempotent calls
(:meth:`GcOwner.close_lease`, :meth:`whyalive.capture.freeze_holds.FreezeHolds.drop`) that
the callers' rescues repeat.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from whyalive.capture.freeze_holds import FreezeHolds
from whyalive.capture.gcsaving import SavingCollection
from whyalive.capture.interrupts import gc_callback, locked
from whyalive.graph import core as graphcore
from whyalive.graph.heap import user_freeze_count

_SAVEALL = gc.DEBUG_SAVEALL


@dataclass(eq=False)
class Lease:
    """One whyalive user that needs what collections save: a check, a pytest bracket, a run.

    ``overlapped`` turns True when another lease ran at the same time without
    being nested inside this one (another thread or asyncio task, or one that
    outlived it), so garbage found while both ran may be reported by the other.
    """

    serial: int
    thread: int
    task: object | None
    analyze_now: Callable[[list[object]], object] | None = None
    """Turns what a collection saved into a plain record (a report) inside that collection.

    Collections that whyalive did not run (the user's ``gc.collect()``, automatic
    ones) are then analysed and released before they return, so they free what
    they would free without whyalive; the records wait in :attr:`records`.
    """
    began: int = 0
    freeze_count: int = 0
    user_keeps: bool = False
    """A collection it claimed ran with the user's own ``DEBUG_SAVEALL``: give it back."""
    overlapped: bool = False
    freeze_changed: bool = False
    records: list[object] = field(default_factory=list)


@dataclass(eq=False)
class _Collection(SavingCollection):
    """A collection the owner's callback saved, until a lease claims it.

    ``number`` counts the owner's collections (leases claim those after they began);
    ``started_by`` is the info dict of its start callback, so the rescue of an
    interrupted start knows whether the body recorded it already.
    """

    number: int = 0
    started_by: object = None
    capturing: bool = False
    user_keeps: bool = False
    record: object = None


class GcOwner:
    """The process's one owner of what whyalive changes in the collector.

    Checks, the pytest plugin and the monitor may start and stop in any order
    (threads, asyncio tasks, generators). While any :class:`Lease` is open, the
    owner's gc callback (first in ``gc.callbacks``) turns ``DEBUG_SAVEALL`` on for
    each collection and moves out of ``gc.garbage`` exactly the objects that
    collection found unreachable, and nothing else: what the user (or a ``__del__``)
    put there stays theirs, untouched. The heap stays frozen while any freeze hold
    is open. Between collections every gc setting is the user's own.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._leases: list[Lease] = []
        self._serial = 0
        self._handovers = 0  # leases made and claims that took collections, ever
        self._collection: _Collection | None = None  # the last collection's start
        self._collections = 0
        # Collections that saved something, oldest first, until a lease claims them.
        self._saved: list[_Collection] = []
        # Threads running a capture collection (the caller claims what it saves) or a
        # freeing one (it must save nothing).
        self._capturing: set[int] = set()
        self._freeing: set[int] = set()
        self.freeze = FreezeHolds(self._lock, self._lease_freeze_counts)
        # Bound now: the callback may run during interpreter shutdown, and the user may
        # rebind gc.garbage or gc.callbacks (the collector keeps using these lists).
        self._garbage = gc.garbage
        self._callbacks = gc.callbacks
        self._get_debug = gc.get_debug
        self._set_debug = gc.set_debug
        self._get_ident = threading.get_ident
        self._is_finalizing = sys.is_finalizing
        self._hook = gc_callback(self._on_gc, self._record)

    @property
    def callbacks(self) -> list[Any]:
        """The collector's ``gc.callbacks`` (the user may have rebound the name)."""
        return self._callbacks

    @property
    def user_garbage(self) -> list[object]:
        """The collector's ``gc.garbage`` (the user may have rebound the name)."""
        return self._garbage

    @property
    def saving(self) -> bool:
        """True while some lease is open (collections save what they find)."""
        return bool(self._leases)

    # -- the gc callback (inside the collector: no collection, import or analysis) ----

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        collection = self._record(phase, info)
        if collection is not None and collection.objects:
            self._release_now(collection)

    def _record(self, phase: str, info: dict[str, int]) -> _Collection | None:
        """The callback's bookkeeping; also its rescue, so running it twice is harmless."""
        if phase == "start":
            self._start(info)
            return None
        return self._stop(info)

    def _start(self, info: dict[str, int]) -> None:
        collection = self._collection
        if collection is not None and collection.started_by is info:
            return  # recorded already (this is the rescue of an interrupted start)
        self._collection = None
        thread = self._get_ident()
        if not self._leases or thread in self._freeing or self._is_finalizing():
            return
        debug = self._get_debug()
        user_keeps = bool(debug & _SAVEALL)
        self._collections += 1
        self._collection = _Collection(
            len(self._garbage),
            None if user_keeps else debug,
            number=self._collections,
            started_by=info,
            capturing=thread in self._capturing,
            user_keeps=user_keeps,
        )
        if not user_keeps:
            self._set_debug(debug | _SAVEALL)
        self._to_front()

    def _to_front(self) -> None:
        """Move the hook first, so its stop runs before any other callback's.

        Safe inside the collector's loop over the callbacks: the entries after ours
        keep their places, and the ones moved were called already.
        """
        callbacks, hook = self._callbacks, self._hook
        if callbacks and callbacks[0] is not hook:
            for index, callback in enumerate(callbacks):
                if callback is hook:
                    callbacks[: index + 1] = [hook, *callbacks[:index]]
                    return

    def _stop(self, info: dict[str, int]) -> _Collection | None:
        collection = self._collection
        if collection is None:
            return None  # its start was not ours (we were installed while it ran)
        collection.disarm()
        if not collection.take(self._garbage, info):
            return None
        self._saved.append(collection)
        return collection

    def _release_now(self, collection: _Collection) -> None:
        """Analyse and free what a collection whyalive did not run saved.

        Runs inside the collection's stop callback, so nothing here may collect (it
        would do nothing); tp_clear breaks the cycles and reference counting frees
        them before the collection returns to the user's code. Cut short by an
        interrupt, the objects stay saved for the lease to claim.
        """
        clear = graphcore.clear_objects
        if collection.capturing or collection.user_keeps or clear is None:
            return
        analyze_now = next(
            (lease.analyze_now for lease in reversed(self._leases) if lease.analyze_now), None
        )
        objects = collection.objects
        if analyze_now is None or not objects:
            return
        try:
            record = analyze_now(objects)
        except Exception:  # an analysis failure must never break the user's collection
            return
        collection.record = record
        clear(objects)
        objects.clear()

    # -- leases (ordinary code) -------------------------------------------------------

    def new_lease(self, analyze_now: Callable[[list[object]], object] | None = None) -> Lease:
        """A lease to open with :meth:`open_lease`; hold it first, so a rescue can close it."""
        return cast(Lease, locked(self._lock, self._new_lease, analyze_now))

    def _new_lease(self, analyze_now: Callable[[list[object]], object] | None) -> Lease:
        self._serial += 1
        self._handovers += 1
        return Lease(self._serial, self._get_ident(), _current_task(), analyze_now)

    @property
    def handovers(self) -> int:
        """Grows when a lease is made and when a claim takes collections. A collection's
        record goes to the one lease that claims it first: after a handover, the records
        written so far may sit with another lease than the next ones (a lease made since
        gets only the next ones; a claim took the ones so far)."""
        return self._handovers

    def open_lease(self, lease: Lease) -> None:
        """Collections save from now on, for ``lease`` to claim (see :meth:`collect`)."""
        locked(self._lock, self._open_lease, lease)

    def _open_lease(self, lease: Lease) -> None:
        lease.began = self._collections
        # Only read without a whyalive freeze (the probes tell then).
        lease.freeze_count = 0 if self.freeze.frozen else user_freeze_count()
        self._install()
        self._leases.append(lease)

    def _install(self) -> None:
        """The hook first in ``gc.callbacks`` (again: the user may have removed it)."""
        if any(callback is self._hook for callback in self._callbacks):
            self._to_front()
            return
        # A collection whose stop we missed (the user removed the hook meanwhile) is over.
        self._disarm_running()
        self._collection = None
        self._callbacks.insert(0, self._hook)

    def collect(self, lease: Lease, generation: int = 2) -> list[object]:
        """Run a saving collection and take what was saved since ``lease`` began or last took."""
        thread = self._get_ident()
        try:
            locked(self._lock, self._mark_capturing, lease, thread)
            gc.collect(generation)
        finally:
            self._capturing.discard(thread)
        return cast("list[object]", locked(self._lock, self._claim, lease))

    def _mark_capturing(self, lease: Lease, thread: int) -> None:
        if any(open_lease is lease for open_lease in self._leases):
            self._install()
            self._capturing.add(thread)

    def _claim(self, lease: Lease) -> list[object]:
        if not any(open_lease is lease for open_lease in self._leases):
            return []
        began, lease.began = lease.began, self._collections
        # Swapped out first: a collection in another thread may append meanwhile.
        saved, self._saved = self._saved, []
        self._saved[:0] = [collection for collection in saved if collection.number <= began]
        taken = [collection for collection in saved if collection.number > began]
        self._handovers += bool(taken)
        objects = self._take(lease, taken)
        # Under whyalive's freeze the probes tell, once, when the freeze is dropped:
        # scanning what is not frozen is cheap only after the captured garbage is freed.
        if not self.freeze.frozen and user_freeze_count() > lease.freeze_count:
            # Frozen objects that die shrink the count; only gc.freeze() grows it
            # (a freeze of fewer objects than died meanwhile goes unseen).
            lease.freeze_changed = True
        return objects

    @staticmethod
    def _take(lease: Lease, collections: Iterable[_Collection]) -> list[object]:
        """What ``collections`` saved, for ``lease``: records it keeps, objects it analyses."""
        objects: list[object] = []
        for collection in collections:
            if collection.record is not None:
                lease.records.append(collection.record)
            else:
                saved = collection.objects or []
                if objects:
                    objects.extend(saved)
                else:
                    # The first list is taken whole: extending an empty list would change
                    # every object's reference count twice (once in, once when the
                    # collection's list goes), a cache miss each at 10^6 objects.
                    objects = saved
                lease.user_keeps = lease.user_keeps or collection.user_keeps
            collection.objects = []  # cleared ones (analysed in the collection) go now
        return objects

    def close_lease(self, lease: Lease) -> list[object]:
        """Stop saving for ``lease``; when it is the last, hand over what nobody claimed.

        Idempotent, and safe for a lease that was never opened: the rescues of
        interrupted checks call it again.
        """
        return cast("list[object]", locked(self._lock, self._close_lease, lease))

    def _close_lease(self, lease: Lease) -> list[object]:
        self._capturing.discard(lease.thread)
        if any(open_lease is lease for open_lease in self._leases):
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
            return []
        # A collection running in another thread (in a finalizer) saves nothing now:
        # its stop will not reach the hook removed below.
        self._disarm_running()
        self._uninstall()
        # Saved after the lease's last claim (an automatic collection inside an
        # allocation on 3.10/3.11): nobody else will take it.
        saved, self._saved = self._saved, []
        self._handovers += bool(saved)
        return self._take(lease, saved)

    def _disarm_running(self) -> None:
        collection = self._collection
        if collection is not None and collection.objects is None:
            collection.disarm()  # its stop has not come (yet, or at all)

    def _uninstall(self) -> None:
        for index, callback in enumerate(self._callbacks):
            if callback is self._hook:
                del self._callbacks[index]
                return

    def free_collect(self, generation: int = 2) -> int:
        """``gc.collect(generation)`` that saves nothing: it frees what whyalive released."""
        thread = self._get_ident()
        try:
            return self._free_collect(thread, generation)
        finally:
            self._freeing.discard(thread)  # again: an interrupt may cut the inner finally

    def _free_collect(self, thread: int, generation: int) -> int:
        try:
            self._freeing.add(thread)
            return gc.collect(generation)
        finally:
            self._freeing.discard(thread)

    # -- fork ---------------------------------------------------------------------------

    def _after_fork_in_child(self) -> None:
        """A forked child starts with the user's gc state and no capture running."""
        self._lock = threading.RLock()  # another thread of the parent may have held it
        self._leases.clear()
        self._disarm_running()  # forked by a finalizer, inside a collection
        self._uninstall()
        self._saved = []
        self._collection = None
        self._capturing.clear()
        self._freeing.clear()
        self.freeze.after_fork_in_child(self._lock)

    def _lease_freeze_counts(self, count: int) -> None:
        for lease in self._leases:
            lease.freeze_count = count


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

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=OWNER._after_fork_in_child)
