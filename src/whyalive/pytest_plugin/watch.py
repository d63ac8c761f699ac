"""The bracket around one checked test: segments, checkpoints and the leaks they found.

One bracket watches a test from the start of its setup to the end of its
teardown: the baseline heap is frozen once (so each collection traverses only
what the test created) and ``DEBUG_SAVEALL`` stays on. Checkpoints between the
segments (each fixture's setup, the call, each fixture's finalizer) take what
the segment left as garbage, so a leak is blamed on the phase and fixture that
made it, and garbage from an earlier test was frozen before this one began.
Debug flags, thresholds, callbacks and the freeze count stay constant inside the
bracket, so a suite's own "gc state unchanged" fixture sees nothing move.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whyalive.analysis import AnalysisOptions
    from whyalive.capture import CapturedGarbage
    from whyalive.capture.gcstate import Lease
    from whyalive.pytest_plugin.options import TestOptions
    from whyalive.report import Report
    from whyalive.report.pipeline import InBlockAnalyses


@dataclass
class Leak:
    """A leak found in one segment of one test."""

    phase: str
    report: Report


@dataclass
class TestWatch:
    """The bracket around one test: segments, their labels, and the leaks found."""

    options: TestOptions
    where: str
    label: str = "setup"
    leaks: list[Leak] = field(default_factory=list)
    reported: int = 0
    _lease: Lease | None = None
    _holds_freeze: bool = False
    _captured: CapturedGarbage | None = None
    _mark: int | None = None
    _analyses: dict[str, InBlockAnalyses] = field(default_factory=dict)

    def begin(self) -> None:
        """Open the bracket: earlier young garbage is freed as usual, later garbage is saved.

        What the test's own collections (and automatic ones) save is analysed and
        freed before they return, so ``gc.collect()`` in a test frees what it would
        free without whyalive.
        """
        from whyalive.capture.collector import YOUNG
        from whyalive.capture.gcstate import OWNER
        from whyalive.report.pipeline import prepare_in_collector

        prepare_in_collector()
        gc.collect(YOUNG)
        self._lease = OWNER.new_lease(analyze_now=self._analyze)
        OWNER.open_lease(self._lease)

    def _analyze(self, objects: list[object]) -> Leak | None:
        """The leak in what one collection saved (inside that collection: no gc, no import);
        a leak already explained in this segment is only counted (:meth:`take_new` merges)."""
        from whyalive.report.pipeline import InBlockAnalyses

        if not objects:
            return None
        label = self.label
        analyses = self._analyses.get(label)
        if analyses is None:
            options = self._analysis_options()
            analyses = self._analyses[label] = InBlockAnalyses(lambda: options)
        report = analyses(objects)
        return Leak(label, report) if report.found else None

    def _analysis_options(self, **more: Any) -> AnalysisOptions:
        from whyalive.analysis import AnalysisOptions

        return AnalysisOptions(
            min_bytes=self.options.min_bytes,
            allow=self.options.allow,
            where=f"{self.where} ({self.label})",
            user_root=self.options.user_root,
            **more,
        )

    def checkpoint(self, next_label: str | None) -> None:
        """Take the segment's garbage, blame it on ``label``, and go on as ``next_label``.

        The call segment freezes its baseline and ends with a full collection, which
        then traverses only what the test body created. Setup and teardown segments
        run user fixtures, which a suite may ask about the freeze count, so they end
        with a young-generation collection instead (fixture cycles are young).

        When the baseline cannot be frozen (objects were frozen already, as Python
        3.12 does at startup), the call segment is bracketed by two full collections
        instead: the test's garbage may have been promoted to the oldest generation
        while it ran, and a young collection would miss it.
        """
        from whyalive.capture import OVERLAP_NOTE, CapturedGarbage
        from whyalive.capture.collector import YOUNG
        from whyalive.capture.gcstate import OWNER
        from whyalive.report.pipeline import analyze

        lease = self._lease
        if lease is None:
            return
        full = (
            self._holds_freeze
            or self.label == "call"
            or (next_label == "call" and not OWNER.freeze.available())
        )
        generation = 2 if full else YOUNG
        captured = self._captured = CapturedGarbage()
        captured.objects = OWNER.collect(lease, generation)
        if next_label is None:
            captured.objects.extend(OWNER.close_lease(lease))
            self._lease = None
        captured.user_keeps = lease.user_keeps
        self.leaks.extend(leak for leak in lease.records if isinstance(leak, Leak))
        lease.records.clear()
        try:
            if captured.objects:
                notes = (OVERLAP_NOTE,) if lease.overlapped else ()
                report = analyze(captured.objects, self._analysis_options(notes=notes))
                if report.found:
                    self.leaks.append(Leak(self.label, report))
        finally:
            captured.release()
        self._captured = None
        if self._holds_freeze:
            held: list[object] = []
            try:
                # The body's garbage is freed and its baseline still frozen: what it left
                # alive that only loops through the autograd graph hold is a leak too.
                self._probe(held)
            finally:
                self._holds_freeze = False
                OWNER.freeze.drop(self)
            self._list(held)
        if next_label is None:
            return
        self.label = next_label
        if next_label == "call":
            from whyalive.kinds.autograd_graph import sequence_mark

            self._mark = sequence_mark()
            self._holds_freeze = OWNER.freeze.hold(self)[0]

    def abandon(self) -> None:
        """Undo what the bracket still holds (a test whose hooks an interrupt cut short)."""
        from whyalive.capture import abandon_capture

        abandon_capture(self._lease, self._captured, self)
        self._lease = self._captured = None
        self._holds_freeze = False

    def _probe(self, held: list[object]) -> None:
        from whyalive.report.pipeline import probe_uncollectable

        try:
            report = probe_uncollectable(self._mark, self._analysis_options(), held=held)
        except Exception:  # the test's own outcome stands; the probe is extra
            return
        if report is not None:
            self.leaks.append(Leak(self.label, report))

    def _list(self, held: list[object]) -> None:
        """Once the baseline is unfrozen: the survivors only an unnamed C/C++ owner holds."""
        from whyalive.report.pipeline import list_survivors

        report = list_survivors(held, self._analysis_options())
        if report is not None:
            self.leaks.append(Leak(self.label, report))

    def take_new(self) -> list[Leak]:
        """Leaks found since the last call, one per segment: a loop that leaks in every
        collection of the call is one report (its occurrences and bytes summed), not one
        explanation per collection."""
        from whyalive.report.merge import merge_reports

        new = self.leaks[self.reported :]
        self.reported = len(self.leaks)
        by_phase: dict[str, list[Report]] = {}
        for leak in new:
            by_phase.setdefault(leak.phase, []).append(leak.report)
        return [Leak(phase, merge_reports(reports)) for phase, reports in by_phase.items()]
