"""What a person sees of a running monitor: its timeline, one report, one screen of text.

:class:`Timeline` is filled by the monitor's safe points (never by its gc
callback); :func:`combine_reports` joins the monitor's first-sighting reports
into one :class:`~whyalive.Report`; :func:`monitor_text` is ``print(mon)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from whyalive.report import CycleReport, Report, TimelinePoint
from whyalive.report.merge import merge_reports
from whyalive.words import plural, shorten, size_to_words

if TYPE_CHECKING:
    from whyalive.monitor.stats import MonitorStats

# Most points kept per signature; past it, steps are grouped into buckets twice as wide.
MAX_POINTS = 1024
# Signatures listed by print(mon): with the lines around them, one screen (15 lines).
MAX_ROWS = 5
_TITLE_LIMIT = 96


@dataclass(frozen=True)
class SignatureSeen:
    """One cycle signature over a monitor's run: counts so far, first and last step."""

    cycle: CycleReport
    first_step: int
    last_step: int

    @property
    def occurrences(self) -> int:
        """Cycles of this signature found so far."""
        return self.cycle.occurrences

    @property
    def total_bytes(self) -> int:
        """Bytes they held, summed."""
        return self.cycle.total_bytes


class Timeline:
    """Bytes of cyclic garbage found per signature at each step, in bounded memory.

    A run of a million steps keeps at most :data:`MAX_POINTS` points per
    signature: when one signature would exceed it, every signature's steps are
    regrouped into buckets twice as wide (a point's step is its bucket's first).
    """

    def __init__(self) -> None:
        self.bucket = 1
        self._points: dict[str, dict[int, list[int]]] = {}

    def add(self, signature: str, step: int, nbytes: int, occurrences: int) -> None:
        """Count ``nbytes`` and ``occurrences`` of ``signature`` found at ``step``."""
        points = self._points.setdefault(signature, {})
        entry = points.setdefault(step - step % self.bucket, [0, 0])
        entry[0] += nbytes
        entry[1] += occurrences
        if len(points) > MAX_POINTS:
            self._widen()

    def _widen(self) -> None:
        self.bucket *= 2
        for signature, points in self._points.items():
            merged: dict[int, list[int]] = {}
            for step, (nbytes, occurrences) in points.items():
                entry = merged.setdefault(step - step % self.bucket, [0, 0])
                entry[0] += nbytes
                entry[1] += occurrences
            self._points[signature] = merged

    def points(self, signatures: Iterable[str] | None = None) -> tuple[TimelinePoint, ...]:
        """The points of ``signatures`` (all when None), by signature, then step."""
        wanted = sorted(self._points if signatures is None else set(signatures))
        return tuple(
            TimelinePoint(signature, step, nbytes, occurrences)
            for signature in wanted
            for step, (nbytes, occurrences) in sorted(self._points.get(signature, {}).items())
        )


def combine_reports(reports: Sequence[Report], *, where: str | None = None) -> Report:
    """One report holding every cycle of ``reports`` (node ids renumbered), notes once each."""
    if not reports:
        return Report()
    merged = merge_reports(reports)
    return replace(merged, run=replace(merged.run, where=where)) if where is not None else merged


class Watched(Protocol):
    """What these lines read of a monitor (a ``GcMonitor``, which imports this module)."""

    @property
    def active(self) -> bool: ...

    @property
    def stats(self) -> MonitorStats: ...

    def signatures(self) -> list[SignatureSeen]: ...


def _state(monitor: Watched) -> str:
    return "running" if monitor.active else "stopped"


def monitor_line(monitor: Watched) -> str:
    """One line: state, steps, signatures, bytes, the biggest signature's pattern."""
    seen = sorted(monitor.signatures(), key=lambda s: -s.total_bytes)
    line = f"{_state(monitor)}, {plural(monitor.stats.steps, 'step')}, "
    line += f"{plural(monitor.stats.examined, 'collection')} examined, "
    if not seen:
        return line + "no cycle signature seen"
    held = sum(s.total_bytes for s in seen)
    return (
        line + f"{plural(len(seen), 'cycle signature')}, {size_to_words(held)}; "
        f"top: {seen[0].cycle.pattern}"
    )


def monitor_text(monitor: Watched) -> str:
    """``print(mon)``: at most 15 lines, the biggest signatures with first step, count, bytes."""
    stats = monitor.stats
    head = (
        f"whyalive monitor ({_state(monitor)}): {plural(stats.steps, 'step')}, "
        f"{plural(stats.examined, 'collection')} examined, "
        f"{plural(stats.analyses, 'analysis', 'analyses')} ({stats.seconds * 1000:.1f} ms)"
    )
    if stats.unexamined_objects:
        head += (
            f", {plural(stats.unexamined_objects, 'garbage object')} freed without a look "
            "(sampled to stay cheap)"
        )
    seen = sorted(monitor.signatures(), key=lambda s: (-s.total_bytes, s.first_step))
    if not seen:
        return (
            f"{head}\nNo cycle signature seen yet. A cycle shows at the first safe point after a "
            "collection that finds it (see docs/monitor.md).\n"
        )
    held = sum(s.total_bytes for s in seen)
    table = [("signature", "pattern", "first step", "cycles", "bytes")]
    table.extend(
        (
            item.cycle.signature,
            item.cycle.pattern,
            str(item.first_step),
            str(item.occurrences),
            size_to_words(item.total_bytes),
        )
        for item in seen[:MAX_ROWS]
    )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = [
        head,
        f"{plural(len(seen), 'cycle signature')}, "
        f"{size_to_words(held)} found, summed over the run:",
    ]
    for number, row in enumerate(table):
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        )
        if number:
            cycle = seen[number - 1].cycle
            words = cycle.title + (f"; cut {cycle.cut.description}" if cycle.cut else "")
            lines.append(f"    {shorten(words, _TITLE_LIMIT)}")
    if len(seen) > MAX_ROWS:
        lines.append(f"  ... and {plural(len(seen) - MAX_ROWS, 'more signature')}")
    lines.append("mon.report(): holder paths, fixes and a timeline of bytes per step.")
    return "\n".join(lines) + "\n"
