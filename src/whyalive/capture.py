"""Capture the cyclic garbage created inside a block, then release it.

It follows the GC rules of docs/architecture.md.

The block's baseline is the heap at :meth:`GarbageWatch.begin`. When the user has
not frozen anything, ``gc.freeze()`` moves that whole heap out of the collector's
view, so the closing collection only traverses what the block created (cheap even
on a torch-sized heap), and garbage that existed before is never blamed on the
block. When objects are already frozen we cannot unfreeze only our own, so we
pay one collection at ``begin`` instead.

While the block runs, :data:`whyalive.gcstate.OWNER` keeps ``DEBUG_SAVEALL``
on, so an automatic collection inside the block saves (rather than frees) what
it finds, and the owner takes exactly what each collection found unreachable out
of ``gc.garbage``; the closing collection then hands this block every cycle it
created. Nothing else in ``gc.garbage`` is ever taken or released.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from whyalive.autograd_graph import sequence_mark
from whyalive.gcstate import OWNER, Lease
from whyalive.graph import core as graphcore

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
            # Free with DEBUG_SAVEALL off, or an enclosing watch saves it again.
            with OWNER.freeing():
                gc.collect()


class GarbageWatch:
    """Bracket a block of code and capture the cyclic garbage it created."""

    def __init__(self) -> None:
        self._lease: Lease | None = None
        self._holds_freeze = False
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
        (see :attr:`whyalive.gcstate.Lease.analyze_now`).
        """
        if self._lease is not None:
            raise RuntimeError("GarbageWatch.begin() called twice")
        graphcore.announce_implementation()
        self.autograd_mark = sequence_mark()
        self._holds_freeze, froze = OWNER.hold_freeze()
        if not froze:
            # Joining a frozen baseline (or the user's freeze) leaves what came since
            # in view: collect it now, so it is never blamed on this block.
            gc.collect()
        self._lease = OWNER.open_lease(analyze_now)

    def end(self) -> CapturedGarbage:
        """Collect, take what the block left as garbage, and restore the user's settings."""
        lease = self._lease
        if lease is None:
            raise RuntimeError("GarbageWatch.end() called before begin()")
        self._lease = None
        objects = OWNER.close_lease(lease)
        return CapturedGarbage(
            objects,
            user_keeps=lease.user_keeps,
            overlapped=lease.overlapped,
            freeze_changed=lease.freeze_changed,
            records=lease.records,
        )

    def finish(self) -> bool:
        """Give back the frozen baseline; call after the captured garbage is released.

        Returns whether the block froze or unfroze the heap under whyalive's freeze
        (:attr:`CapturedGarbage.freeze_changed` tells it otherwise).
        """
        if not self._holds_freeze:
            return False
        self._holds_freeze = False
        return OWNER.drop_freeze()
