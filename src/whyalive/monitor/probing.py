"""The monitor's look for uncollectable loops through the autograd graph, every N steps."""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING

from whyalive.errors import UsageError
from whyalive.kinds.autograd_graph import sequence_mark
from whyalive.report.pipeline import probe_uncollectable

if TYPE_CHECKING:
    from whyalive.monitor.gc_monitor import GcMonitor

PROBE_EVERY = 500
"""Default steps between two probes (see benchmarks/bench_monitor.py)."""
MAX_NODES = 20_000
"""Autograd nodes one probe walks at most: a leak repeated every step is logged at its
first probe; later ones need not walk every copy (their counts may then fall short)."""


class UncollectableProbe:
    """Every ``every`` steps (None: never), what the run made and only such loops keep.

    Needs the run's baseline: the heap frozen at start (the monitor's ``freeze=True``).
    """

    def __init__(self, every: int | None) -> None:
        if every is not None and (isinstance(every, bool) or every < 1):
            raise UsageError(f"probe_every must be a positive int or None, not {every!r}")
        self.every = every
        self.mark: int | None = None
        self.runs = 0
        self.seconds = 0.0

    def start(self) -> None:
        """Mark the autograd nodes made from now on as the run's."""
        self.mark = sequence_mark()

    def due(self, step: int) -> bool:
        """Whether ``step`` is one to probe at."""
        return self.every is not None and step % self.every == 0

    def run(self, monitor: GcMonitor) -> None:
        """A saved collection of all the run made (its start's heap is frozen), analysed
        as any, then the loops among what is left, logged as the monitor logs cycles."""
        monitor._forced = True
        try:
            gc.collect()
        finally:
            monitor._forced = False
        monitor._process()
        began = time.perf_counter()
        monitor._quiet = True  # collections the probe runs are not the monitor's to save
        try:
            report = probe_uncollectable(
                self.mark, monitor.options, collect=False, max_nodes=MAX_NODES
            )
        finally:
            monitor._quiet = False
            monitor.stats.probes += 1
            monitor.stats.seconds += time.perf_counter() - began
        monitor._log.record(report, monitor.stats.steps, monitor.on_cycle)
