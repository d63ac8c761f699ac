"""The frozen baseline: ``gc.freeze()`` held while any whyalive user needs it.

Part of :data:`whyalive.capture.gcstate.OWNER` (``OWNER.freeze``), under its lock. Every
step survives an interrupt (docs/architecture.md, GC rules 10): a holder is
registered before the heap is frozen and :meth:`FreezeHolds.drop` is idempotent and
works out what an interrupted :meth:`FreezeHolds.hold` did, so a rescue repeats it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import cast

from whyalive.capture.interrupts import locked
from whyalive.graph.heap import user_freeze_count


class FreezeHolds:
    """Who holds the heap frozen; the last one to let go unfreezes it."""

    def __init__(self, lock: threading.RLock, on_unfreeze: Callable[[int], None]) -> None:
        self._lock = lock
        self._on_unfreeze = on_unfreeze
        self._holders: list[object] = []
        # (made before the freeze, made after it) while whyalive holds a freeze; the
        # second is None while hold() is between the two.
        self._probes: tuple[list[object], list[object] | None] | None = None

    @property
    def frozen(self) -> bool:
        """Whether whyalive froze the heap (and holds it frozen)."""
        return self._probes is not None

    @property
    def holders(self) -> list[object]:
        """Who holds the freeze now."""
        return list(self._holders)

    def hold(self, holder: object) -> tuple[bool, bool]:
        """Freeze the heap for a cheap baseline: (whyalive holds a freeze, this call froze).

        ``holder`` gives it back with :meth:`drop` (which it may call even when this
        call was interrupted). Nothing is held when the user froze objects themselves:
        whyalive cannot unfreeze only its own.
        """
        return cast("tuple[bool, bool]", locked(self._lock, self._hold, holder))

    def _hold(self, holder: object) -> tuple[bool, bool]:
        if any(held is holder for held in self._holders):
            return True, False
        if self._holders:
            self._holders.append(holder)
            return True, False
        if self._probes is not None or user_freeze_count() != 0:
            return False, False
        # Probes tell later whether someone else froze or unfroze (see changed());
        # the freeze count cannot: on 3.11 reading it walks the whole frozen heap,
        # and frozen objects that die shrink it. Recorded before the freeze, so an
        # interrupted call can be undone.
        frozen_probe = [object()]
        self._probes = (frozen_probe, None)
        self._holders.append(holder)
        gc.freeze()
        self._probes = (frozen_probe, [object()])
        return True, True

    def available(self) -> bool:
        """Whether :meth:`hold` would hold a freeze now (nobody else froze objects)."""
        return cast(bool, locked(self._lock, self._available))

    def _available(self) -> bool:
        return bool(self._holders) or user_freeze_count() == 0

    def changed(self) -> bool:
        """Whether someone else froze (or unfroze) the heap since whyalive froze it.

        Each probe's content has one referrer, the probe, which gc.get_referrers
        finds only while the probe is not frozen: the one made before whyalive's
        freeze is found again after an unfreeze, the one made after it is lost
        after another freeze. One scan, of what is not frozen.
        """
        if self._probes is None:
            return False
        frozen_probe, live_probe = self._probes
        if live_probe is None:
            return False
        found = gc.get_referrers(frozen_probe[0], live_probe[0])
        return not (len(found) == 1 and found[0] is live_probe)

    def drop(self, holder: object) -> bool:
        """Give back ``holder``'s freeze; the last one unfreezes, unless the user froze since.

        Idempotent. ``gc.freeze()`` by the user moved everything then alive,
        whyalive's baseline included, into the permanent generation: unfreezing
        would undo their freeze. Returns whether someone else froze or unfroze the
        heap under ``holder``'s freeze (one probe: call it once the captured garbage
        is freed, when that scan is cheap); False when ``holder`` held nothing.
        """
        return cast(bool, locked(self._lock, self._drop, holder))

    def _drop(self, holder: object) -> bool:
        held = False
        for index, other in enumerate(self._holders):
            if other is holder:
                del self._holders[index]
                held = True
                break
        changed = held and self.changed()
        if self._holders or self._probes is None:
            return changed
        # hold() cut short (no second probe): did it freeze?
        cut = self._probes[1] is None
        if user_freeze_count() != 0 if cut else not (changed or self.changed()):
            gc.unfreeze()
        self._probes = None
        self._on_unfreeze(user_freeze_count())
        return changed

    def after_fork_in_child(self, lock: threading.RLock) -> None:
        """Unfreeze what whyalive froze, whoever held it: a forked child starts free."""
        self._lock = lock
        self._holders = []
        if self._probes is not None and not self.changed():
            gc.unfreeze()
        self._probes = None
