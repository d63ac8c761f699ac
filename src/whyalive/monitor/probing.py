"""The monitor's look for uncollectable loops through the autograd graph, every N steps."""

from __future__ import annotations

import time

from whyalive.analysis import AnalysisOptions
from whyalive.autograd_graph import sequence_mark
from whyalive.errors import UsageError
from whyalive.pipeline import probe_uncollectable
from whyalive.report import Report

PROBE_EVERY = 100
"""Default steps between two probes (see benchmarks/bench_monitor.py)."""


class UncollectableProbe:
    """Every ``every`` steps (None: never), what the run made and only such loops keep.

    The run's baseline is the heap frozen at start; the caller collects (saving, and
    analysing what it saves, as for any collection) just before :meth:`run`.
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

    def run(self, options: AnalysisOptions) -> Report | None:
        """The loops found now (the collection just ran, so nothing left is garbage)."""
        began = time.perf_counter()
        try:
            return probe_uncollectable(self.mark, options, collect=False)
        finally:
            self.runs += 1
            self.seconds += time.perf_counter() - began
