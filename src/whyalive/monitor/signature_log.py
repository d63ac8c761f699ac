"""Each cycle signature once, then rate-limited updates: logging, a callback, report files.

Filled at the monitor's safe points (never by its gc callback); it keeps the first
report of each signature, its running counts and the :class:`Timeline` of bytes
per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from whyalive.analysis import AnalysisOptions
from whyalive.analysis.repeats import RepeatMemo
from whyalive.monitor.stats import MonitorStats
from whyalive.monitor.view import Timeline
from whyalive.report import CycleReport, Report
from whyalive.words import plural, size_to_words

OnCycle = Callable[[CycleReport, Report], object]


def analysis_options(min_bytes: int, all_cycles: bool, allow: tuple[str, ...]) -> AnalysisOptions:
    """What the monitor analyses with. A leak repeats every step: each group of alike
    cycles has the autograd graphs of one occurrence walked, the others are credited
    the same; and a signature seen before is only counted (:meth:`SignatureLog.wants_words`).
    """
    return AnalysisOptions(
        min_bytes=min_bytes,
        all_cycles=all_cycles,
        allow=allow,
        where="GcMonitor",
        autograd_walks=1,
        repeats=RepeatMemo(),
    )


@dataclass
class _Seen:
    """One cycle signature over the run: its first report and running counts.

    An uncollectable loop stays alive, so each probe sees every one made so far: its
    counts are the last probe's, not a sum.
    """

    cycle: CycleReport
    report_index: int
    first_step: int
    occurrences: int = 0
    total_bytes: int = 0
    heavy_count: int = 0
    last_step: int = 0
    announced: int = 0
    announced_at: float = 0.0
    uncollectable: bool = False

    def cumulative(self) -> CycleReport:
        """The first report's cycle with the counts of the whole run so far."""
        return replace(
            self.cycle,
            occurrences=self.occurrences,
            total_bytes=self.total_bytes,
            heavy_count=self.heavy_count,
        )


class SignatureLog:
    """Each signature once, then rate-limited updates, through logging, a callback, files."""

    def __init__(self, out: logging.Logger | None, interval: float, report_dir: Path | None):
        self.out = out
        self.interval = interval
        self.report_dir = report_dir
        self.seen: dict[str, _Seen] = {}
        self.reports: list[Report] = []
        self.files: list[Path] = []
        self.timeline = Timeline()
        self.light_cycles = 0
        """Cycles that held no heavy object, over the run (they have no signature to log)."""

    def wants_words(self, signatures: list[str]) -> bool:
        """Whether an analysis that found ``signatures`` needs its report in full: one is
        new, or due for an update (otherwise :meth:`record` only adds counts)."""
        now = time.monotonic()
        for signature in signatures:
            seen = self.seen.get(signature)
            if seen is None or now - seen.announced_at >= self.interval:
                return True
        return False

    def record(self, report: Report | None, step: int, on_cycle: OnCycle | None) -> None:
        """Count the cycles of one analysis; announce new ones and due updates."""
        if report is None:
            return
        self.light_cycles += report.light_cycle_count
        if not report.found:
            return
        new: list[_Seen] = []
        found = [(c, False) for c in report.cycles] + [(c, True) for c in report.uncollectable]
        for cycle, uncollectable in found:
            seen = self.seen.get(cycle.signature)
            if seen is None:
                seen = _Seen(cycle, len(self.reports), step, uncollectable=uncollectable)
                self.seen[cycle.signature] = seen
                new.append(seen)
            if uncollectable:  # alive for good: the last probe saw them all
                seen.occurrences = cycle.occurrences
                seen.total_bytes = cycle.total_bytes
                seen.heavy_count = cycle.heavy_count
            else:
                seen.occurrences += cycle.occurrences
                seen.total_bytes += cycle.total_bytes
                seen.heavy_count += cycle.heavy_count
            seen.last_step = step
            self.timeline.add(cycle.signature, step, cycle.total_bytes, cycle.occurrences)
        if new:
            self.reports.append(report)
            self._write(len(self.reports) - 1, report)
        now = time.monotonic()
        for cycle, _ in found:
            seen = self.seen[cycle.signature]
            if seen in new or now - seen.announced_at >= self.interval:
                self._announce(seen, report, now, on_cycle)

    def _announce(self, seen: _Seen, report: Report, now: float, on_cycle: OnCycle | None) -> None:
        first = seen.announced == 0
        seen.announced, seen.announced_at = seen.occurrences, now
        cycle = seen.cumulative()
        if self.out is not None:
            if first:
                self.out.warning(
                    "whyalive: %s %s (%s) first seen at step %d: %s\n  Fix: %s",
                    "uncollectable loop" if seen.uncollectable else "cycle",
                    cycle.signature,
                    cycle.pattern,
                    seen.first_step,
                    cycle.summary,
                    cycle.fix,
                )
            else:
                self.out.warning(
                    "whyalive: %s %s (%s) seen %s by step %d, %s in all over the run",
                    "uncollectable loop" if seen.uncollectable else "cycle",
                    cycle.signature,
                    cycle.pattern,
                    plural(cycle.occurrences, "time"),
                    seen.last_step,
                    size_to_words(cycle.total_bytes),
                )
        if on_cycle is not None:
            try:
                on_cycle(cycle, report)
            except Exception:
                logging.getLogger("whyalive").exception("whyalive on_cycle callback failed")

    def finish(self, stats: MonitorStats, where: str) -> None:
        """Last updates, files rewritten with the counts over the whole run."""
        now = time.monotonic()
        for seen in self.seen.values():
            if seen.occurrences > seen.announced:
                self._announce(seen, self.reports[seen.report_index], now, None)
        for index, report in enumerate(self.summary_reports(stats, where)):
            self._write(index, report)
        if self.out is not None and self.seen:
            self.out.warning(
                "whyalive: %s; %s", plural(len(self.seen), "cycle signature"), stats.words()
            )

    def summary_reports(self, stats: MonitorStats, where: str) -> list[Report]:
        """The first-sighting reports, each with the cycles first seen there, counted so far.

        Every count is over the run so far: occurrences, heavy objects and bytes are summed
        over the analyses (a cycle is garbage once, so nothing is counted twice), and the
        cycles that held nothing heavy go with the first report, so that merged they add up.
        """
        result = []
        for index, report in enumerate(self.reports):
            mine = [s for s in self.seen.values() if s.report_index == index]
            cycles = tuple(s.cumulative() for s in mine if not s.uncollectable)
            loops = tuple(s.cumulative() for s in mine if s.uncollectable)
            by_device: dict[str, int] = {}
            for cycle in (*cycles, *loops):  # a report's totals cover its loops too
                held = sum(cycle.bytes_by_device.values()) or 1
                for device, nbytes in cycle.bytes_by_device.items():
                    share = cycle.total_bytes * nbytes // held
                    by_device[device] = by_device.get(device, 0) + share
            result.append(
                replace(
                    report,
                    run=replace(report.run, where=where),
                    cycles=cycles,
                    uncollectable=loops,
                    total_bytes=sum(c.total_bytes for c in (*cycles, *loops)),
                    bytes_by_device=by_device,
                    heavy_count=sum(c.heavy_count for c in (*cycles, *loops)),
                    light_cycle_count=self.light_cycles if index == 0 else 0,
                    cycle_count=sum(c.occurrences for c in cycles)
                    + (self.light_cycles if index == 0 else 0),
                    notes=(*report.notes, stats.words()),
                    timeline=self.timeline.points(c.signature for c in cycles),
                )
            )
        return result

    def _write(self, index: int, report: Report) -> None:
        if self.report_dir is None:
            return
        from whyalive.render import write_report

        rank = report.run.rank
        tag = f"rank{rank}" if rank is not None else f"pid{report.run.pid}"
        stem = self.report_dir / f"whyalive-monitor-{tag}-{index:03d}"
        paths = [write_report(report, stem.with_suffix(suffix)) for suffix in (".json", ".html")]
        self.files.extend(p for p in paths if p not in self.files)
