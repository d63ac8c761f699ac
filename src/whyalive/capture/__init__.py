"""Capture the cyclic garbage created inside a block, then release it.

It follows the GC rules of docs/architecture.md.

The block's baseline is the heap at :meth:`GarbageWatch.begin`. When the user has
not frozen anything, ``gc.freeze()`` moves that whole heap out of the collector's
view, so the closing collection only traverses what the block created (cheap even
on a torch-sized heap), and garbage that existed before is never blamed on the
block. When objects are already frozen we cannot unfreeze only our own, so we
pay one collection at ``begin`` instead.

While the block runs, :data:`whyalive.capture.gcstate.OWNER` turns ``DEBUG_SAVEALL`` on
for every collection, so an automatic collection inside the block saves (rather
than frees) what it finds, and the owner takes exactly what each collection found
unreachable out of ``gc.garbage``; the closing collection then hands this block
every cycle it created. Nothing else in ``gc.garbage`` is ever taken or released.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING

from whyalive.capture.gcstate import OWNER, Lease
from whyalive.graph import core as graphcore
from whyalive.kinds.autograd_graph import sequence_mark

if TYPE_CHECKING:
    from whyalive.report import Report

OVERLAP_NOTE = (
    "Another whyalive check (or the pytest plugin) ran at the same time as this one without "
    "being nested inside it (another thread or task, or one that ended later): cyclic garbage "
    "found while both ran is reported by whichever ended first, so it may belong to the other."
)
FREEZE_NOTE = (
    "gc.freeze() or gc.unfreeze() was called inside the block: cyclic garbage that was frozen "
    "is never examined (and never freed by the collector), so leaks made before the freeze "
    "are not reported. whyalive left the user's freeze in place."
)


@dataclass
class CapturedGarbage:
    """Strong references to the captured garbage; short-lived, call :meth:`release`.

    ``objects`` is owned by this instance. The collector put the objects into an
    older generation when it saved them; dropping our references turns them back
    into garbage that only a collection of that generation frees.
    """

    objects: list[object] = field(default_factory=list)
    user_keeps: bool = False
    overlapped: bool = False
    freeze_changed: bool = False
    records: list[object] = field(default_factory=list)
    """What collections inside the block saved, analysed and freed inside them."""

    def release(self) -> None:
        """Drop every strong reference and let the collector free the garbage now.

        Safe to repeat after an interrupt: each step leaves the rest to a repeat.
        """
        objects = self.objects
        if not objects:
            return
        if self.user_keeps:
            # The user runs with DEBUG_SAVEALL: the garbage belongs in their gc.garbage
            # (moved in one step, so a repeat cannot give it back twice).
            OWNER.user_garbage.extend(graphcore.take_tail(objects, 0))
            return
        if graphcore.clear_objects is not None:
            # Break the cycles as the collector would (tp_clear), then let reference
            # counting free them: no second traversal of the generation.
            graphcore.clear_objects(objects)
            objects.clear()
            return
        objects.clear()
        if not sys.is_finalizing():
            # Free with DEBUG_SAVEALL off, or an enclosing watch saves it again.
            OWNER.free_collect()


class GarbageWatch:
    """Bracket a block of code and capture the cyclic garbage it created.

    Every step can be cut by an interrupt; :meth:`abandon` then undoes whatever
    :meth:`begin` managed to change (it is idempotent, and harmless after :meth:`end`
    and :meth:`finish`).
    """

    def __init__(self) -> None:
        self._lease: Lease | None = None
        self._holds_freeze = False
        self._captured: CapturedGarbage | None = None
        self.freeze_changed = False
        self.autograd_mark: int | None = None
        """The autograd sequence number at :meth:`begin`: nodes made later are the block's."""

    @property
    def active(self) -> bool:
        """True between :meth:`begin` and :meth:`end`."""
        return self._lease is not None

    @property
    def used_freeze(self) -> bool:
        """Whether the baseline was frozen (cheap path) rather than collected.

        Inside another whyalive watch (a test the pytest plugin checks) the frozen
        objects are whyalive's baseline, not the user's, so this is True as well.
        """
        return self._holds_freeze

    def begin(self, analyze_now: Callable[[list[object]], object] | None = None) -> None:
        """Start watching: later garbage is saved, earlier garbage is left alone.

        ``analyze_now`` turns what other collections save meanwhile into records
        (see :attr:`whyalive.capture.gcstate.Lease.analyze_now`).
        """
        if self._lease is not None:
            raise RuntimeError("GarbageWatch.begin() called twice")
        graphcore.announce_implementation()
        self._lease = OWNER.new_lease(analyze_now)
        self.autograd_mark = sequence_mark()
        self._holds_freeze, froze = OWNER.freeze.hold(self)
        if not froze:
            # Joining a frozen baseline (or the user's freeze) leaves what came since
            # in view: collect it now, so it is never blamed on this block.
            gc.collect()
        OWNER.open_lease(self._lease)

    def end(self) -> CapturedGarbage:
        """Collect, take what the block left as garbage, and restore the user's settings."""
        lease = self._lease
        if lease is None:
            raise RuntimeError("GarbageWatch.end() called before begin()")
        # Held here until release(), so that abandon() frees it whatever got cut.
        captured = self._captured = CapturedGarbage()
        captured.objects = OWNER.collect(lease) if not sys.is_finalizing() else []
        captured.objects.extend(OWNER.close_lease(lease))
        self._lease = None
        captured.user_keeps = lease.user_keeps
        captured.overlapped = lease.overlapped
        captured.freeze_changed = lease.freeze_changed
        captured.records = lease.records
        return captured

    def finish(self) -> None:
        """Give back the frozen baseline; call after the captured garbage is released.

        :attr:`freeze_changed` then says whether the block froze or unfroze the heap
        under whyalive's freeze (:attr:`CapturedGarbage.freeze_changed` tells it otherwise).
        """
        self.freeze_changed = OWNER.freeze.drop(self) or self.freeze_changed
        self._captured = None
        self._holds_freeze = False

    def abandon(self) -> None:
        """Undo what is still held: the lease, the captured garbage, the frozen baseline."""
        changed = abandon_capture(self._lease, self._captured, self)
        self.freeze_changed = changed or self.freeze_changed
        self._lease = self._captured = None
        self._holds_freeze = False


def abandon_capture(lease: Lease | None, captured: CapturedGarbage | None, holder: object) -> bool:
    """Undo a capture an interrupt cut short: close ``lease``, release what was taken, and
    give back ``holder``'s freeze (True: the freeze changed under it). Every step is
    idempotent, so a repeat is harmless."""
    if lease is not None:
        leftover = OWNER.close_lease(lease)
        if captured is None:
            captured = CapturedGarbage(leftover, user_keeps=lease.user_keeps)
        else:
            captured.objects.extend(leftover)
    if captured is not None:
        captured.release()
    return OWNER.freeze.drop(holder)


class ThreadWatch:
    """Which other threads ran while a block did: cycles they made are captured with it.

    A collection cannot tell which thread made an object, so a background thread's
    cycles are found inside any block it ran alongside. A thread ran when it started or
    ended between the two looks, or when its count of times scheduled on a CPU grew
    (Linux's ``/proc/self/task/<id>/schedstat``; elsewhere: its innermost frame or
    instruction changed, which misses a thread that is back where it waited before).
    """

    def __init__(self) -> None:
        self._thread = threading.get_ident()
        self._before = _thread_activity()

    def others_ran(self) -> list[str]:
        """Names of the other threads that ran since this watch was made."""
        before, after = self._before, _thread_activity()
        ran = {
            ident
            for ident in before.keys() | after.keys()
            if ident != self._thread and before.get(ident) != after.get(ident)
        }
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        return sorted(names.get(ident, f"thread {ident}") for ident in ran)

    def note(self, report: Report) -> Report:
        """``report`` with a note saying which cycles other threads may have made."""
        if not report.cycles:
            return report
        ran = self.others_ran()
        if not ran:
            return report
        shown = ", ".join(ran[:3]) + (f" and {len(ran) - 3} more" if len(ran) > 3 else "")
        cycles = report.cycle_count
        note = (
            f"{len(ran)} other thread(s) ran during the block ({shown}): whyalive cannot tell "
            f"which thread made a cycle, so any of the {cycles} cycle(s) found may be theirs. "
            "Check the block with those threads paused or joined to be sure."
        )
        return dataclasses.replace(report, notes=(*report.notes, note))


def _thread_activity() -> dict[int, object]:
    """Per thread, something that changes when it runs (no frame is kept or read)."""
    # No native_id where the platform has no thread ids (WebAssembly).
    native = {t.ident: getattr(t, "native_id", None) for t in threading.enumerate()}
    # This frame is among them: dropped before it returns, or it holds itself in a cycle.
    frames = sys._current_frames()
    try:
        return {ident: _activity(native.get(ident), frame) for ident, frame in frames.items()}
    finally:
        del frames


def _activity(native_id: int | None, frame: FrameType) -> object:
    runs = _times_scheduled(native_id)
    return runs if runs is not None else (id(frame), frame.f_lasti)


def _times_scheduled(native_id: int | None) -> int | None:
    """How many times Linux put the thread on a CPU (None where that cannot be read)."""
    if native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", "rb") as stats:
            return int(stats.read().split()[2])
    except (OSError, ValueError, IndexError):
        return None
