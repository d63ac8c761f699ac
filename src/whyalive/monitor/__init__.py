"""Watch a long run: ``whyalive.monitor()`` and :class:`GcMonitor` (docs/monitor.md).

* :mod:`~whyalive.monitor.sampling`: the gc callback and which collections it saves.
* :mod:`~whyalive.monitor.gc_monitor`: :class:`GcMonitor`, its safe points, analysis
  and release of what was saved.
* :mod:`~whyalive.monitor.probing`: every N steps, the uncollectable loops through the
  autograd graph.
* :mod:`~whyalive.monitor.signature_log`: each signature once, rate-limited updates,
  report files.
* :mod:`~whyalive.monitor.stats`: what the monitor did; :mod:`~whyalive.monitor.view`:
  its timeline, combined report and ``print(mon)``.
"""

from __future__ import annotations

from typing import Any

from whyalive.monitor.gc_monitor import GcMonitor
from whyalive.monitor.signature_log import OnCycle, SignatureLog
from whyalive.monitor.stats import MonitorStats, cuda_allocated
from whyalive.monitor.view import SignatureSeen, Timeline, combine_reports

__all__ = [
    "GcMonitor",
    "MonitorStats",
    "OnCycle",
    "SignatureLog",
    "SignatureSeen",
    "Timeline",
    "combine_reports",
    "cuda_allocated",
    "monitor",
]


def monitor(**options: Any) -> GcMonitor:
    """A :class:`GcMonitor` (not started): ``with whyalive.monitor() as mon: ... mon.step()``.

    Takes the keyword arguments of :class:`GcMonitor`.

    .. versionadded:: 0.1
    """
    return GcMonitor(**options)
