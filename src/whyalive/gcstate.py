"""Snapshot and exact restore of the garbage collector's settings (DESIGN §3.1)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class GcSettings:
    """What whyalive may change and must put back."""

    debug: int
    enabled: bool
    threshold: tuple[int, ...]

    @classmethod
    def current(cls) -> GcSettings:
        """Read the collector's settings now."""
        return cls(gc.get_debug(), gc.isenabled(), gc.get_threshold())

    def restore(self) -> None:
        """Put the collector back to these settings."""
        gc.set_debug(self.debug)
        gc.set_threshold(*self.threshold)
        if self.enabled:
            gc.enable()
        else:
            gc.disable()


@contextmanager
def saved_gc_state() -> Iterator[GcSettings]:
    """Restore debug flags, enabled state and thresholds on exit, whatever happens inside."""
    settings = GcSettings.current()
    try:
        yield settings
    finally:
        settings.restore()


def user_saves_all(settings: GcSettings) -> bool:
    """True when the user asked for ``DEBUG_SAVEALL`` themselves, so garbage is theirs to keep."""
    return bool(settings.debug & gc.DEBUG_SAVEALL)
