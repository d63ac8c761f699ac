"""What the monitor did (:class:`MonitorStats`) and the CUDA reading that boosts sampling."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from whyalive.words import plural


def cuda_allocated() -> int | None:
    """CUDA bytes allocated now, or None unless torch has already initialised CUDA."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return None
    try:
        if not cuda.is_initialized():
            return None
        return int(cuda.memory_allocated())
    except Exception:
        return None


@dataclass
class MonitorStats:
    """What the monitor did; read ``monitor.stats`` at any time."""

    steps: int = 0
    examined: int = 0
    saved_objects: int = 0
    unexamined_objects: int = 0
    deferred_objects: int = 0
    analyses: int = 0
    full_releases: int = 0
    probes: int = 0
    """Looks for uncollectable loops through the autograd graph (``probe_every``)."""
    seconds: float = 0.0

    def where(self) -> str:
        """Where a monitor's reports found their cycles: ``100 monitored steps``."""
        if self.steps:
            return plural(self.steps, "monitored step")
        return f"a monitored run ({plural(self.examined, 'collection')} examined)"

    def words(self) -> str:
        """One sentence for report notes and the final log line."""
        text = (
            f"Monitor: {plural(self.steps, 'step')}, {plural(self.examined, 'collection')} "
            f"examined, {plural(self.saved_objects, 'garbage object')} analysed in "
            f"{self.seconds * 1000:.1f} ms"
        )
        if self.probes:
            text += f", {plural(self.probes, 'probe')} for uncollectable loops"
        if self.unexamined_objects:
            text += (
                f"; {plural(self.unexamined_objects, 'garbage object')} freed without a look "
                "(the monitor skips some collections to stay cheap)"
            )
        return text + "."
