"""``analyze()``: captured garbage in, plain :class:`~whyalive.report.Report` out.

graph (:mod:`whyalive.graph`) -> cycles (:mod:`whyalive.analysis`) -> report
(:mod:`whyalive.report.builder`); the graph's strong references are dropped before
the report is returned, so the caller's release of the garbage frees it.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from whyalive.analysis import AnalysisOptions, CycleGroup, Progress, find_cycles
from whyalive.analysis.repeats import RepeatMemo
from whyalive.analysis.uncollectable import find_loops_among, find_uncollectable
from whyalive.capture import CapturedGarbage, GarbageWatch
from whyalive.capture.gcstate import OWNER
from whyalive.graph import ObjectGraph, build_graph
from whyalive.graph.core import announce_implementation, scratch_held
from whyalive.kinds import KindResolver
from whyalive.kinds.autograd_graph import loaded_torch
from whyalive.report import Report
from whyalive.report.builder import build_report, counts_report
from whyalive.report.merge import merge_reports
from whyalive.report.survivors import listed_survivors

PROBE_AUTOGRAD_WALKS = 4
"""Occurrences of one loop whose autograd graphs a probe walks; the others are counted as
holding what those held, on average."""

UNPROBED_NOTE = (
    "Uncollectable leaks (loops through the autograd graph) were not looked for: that needs "
    "the heap frozen at the start (gc.freeze), and objects were already frozen."
)


class InBlockAnalyses:
    """:func:`analyze` for the collections that run inside one watched block, whose
    reports become one (:func:`~whyalive.report.merge.merge_reports`): each signature's
    words are written once (again after a handover, :attr:`GcOwner.handovers
    <whyalive.capture.gcstate.GcOwner.handovers>`). A collection that finds only
    signatures already written counts them (:func:`~whyalive.report.builder.counts_report`),
    with the diagnoses a :class:`~whyalive.analysis.repeats.RepeatMemo` keeps: a loop
    that leaks every iteration makes one report per collection, and writing its words
    each time was most of a check's cost (7.5x the block's own time at 1,160
    collections).
    """

    def __init__(self, options: Callable[[], AnalysisOptions]) -> None:
        self._options = options  # asked each time: a check may be renamed once begun
        self._memo = RepeatMemo()
        self._worded: set[str] = set()
        self._handovers = OWNER.handovers

    def __call__(self, objects: list[object]) -> Report:
        if OWNER.handovers != self._handovers:
            # The reports with the words may have gone to another block than the next
            # ones (a block opened since, a claim that took them): written again.
            self._worded.clear()
            self._handovers = OWNER.handovers
        # Inside a collection: no progress lines.
        options = replace(self._options(), repeats=self._memo, progress_after=None)
        report = analyze(objects, options, words_for=self._wants_words)
        # Only once the report exists: an analysis cut short wrote no words.
        self._worded.update(cycle.signature for cycle in report.cycles if cycle.members)
        return report

    def _wants_words(self, signatures: list[str]) -> bool:
        return not self._worded.issuperset(signatures)


def analyze_block(captured: CapturedGarbage, options: AnalysisOptions) -> Report:
    """What a watched block left: its closing collection's garbage analysed, merged with
    the reports of the collections inside it (:class:`InBlockAnalyses`)."""
    records = [record for record in captured.records if isinstance(record, Report)]
    return merge_reports([analyze(captured.objects, options), *records])


@functools.cache
def prepare_in_collector() -> None:
    """Import now what an analysis imports lazily, so one can run inside a gc callback.

    A gc callback must not import (the import system may be mid-way through a
    module in this very thread); once imported, a module is only looked up.
    """
    import ctypes  # noqa: F401  (kinds.buffers reads addresses through it)

    announce_implementation()

    analyze([], AnalysisOptions(progress_after=None))


def analyze(
    objects: list[object],
    options: AnalysisOptions | None = None,
    *,
    words_for: Callable[[list[str]], bool] | None = None,
) -> Report:
    """Analyse captured garbage; the returned report holds no live object.

    ``words_for`` is asked with the signatures found whether the report should be
    written in full; when it says no, the report only counts (see
    :func:`~whyalive.report.builder.counts_report`).
    """
    options = options or AnalysisOptions()
    if options.progress_after is not None:  # ordinary code, not a gc callback: it may warn
        announce_implementation()
    # An automatic collection during the analysis would traverse all the garbage we
    # hold (it is reachable now) for nothing: the collector stays off until we return.
    # Switched back on here and in _analyze_paused: an interrupt can cut either
    # finally, never both (docs/architecture.md, GC rules 10).
    enabled = gc.isenabled()
    try:
        return _analyze_paused(objects, options, enabled, words_for)
    finally:
        if enabled:
            gc.enable()


def _analyze_paused(
    objects: list[object],
    options: AnalysisOptions,
    enabled: bool,
    words_for: Callable[[list[str]], bool] | None,
) -> Report:
    try:
        gc.disable()
        progress = Progress(len(objects), options.progress_after)
        resolver = KindResolver()
        progress.stage("building the reference graph")
        with scratch_held():  # each stage's big arrays cut from the last one's
            # Recorded allocation sites are told per array: no array stands for others.
            graph = build_graph(objects, resolver, fold_arrays=options.site_of is None)
            return _report_of(graph, resolver, options, progress, words_for)
    finally:
        if enabled:
            gc.enable()


@contextmanager
def _collector_off() -> Iterator[None]:
    # An automatic collection while we hold a block's leftovers would traverse them
    # for nothing. gc.disable() inside the try: an interrupt just after it still
    # switches the collector back on.
    enabled = gc.isenabled()
    try:
        gc.disable()
        yield
    finally:
        if enabled:
            gc.enable()


def _report_of(
    graph: ObjectGraph,
    resolver: KindResolver,
    options: AnalysisOptions,
    progress: Progress,
    words_for: Callable[[list[str]], bool] | None = None,
) -> Report:
    """Cycles to report; the graph's strong references are dropped before returning."""
    try:
        findings = find_cycles(graph, resolver, options, progress)
        if words_for is not None and not words_for([_signature(g) for g in findings.kept]):
            return counts_report(findings, options)
        if findings.reused:  # the words need the views and walks that counting skipped
            findings = find_cycles(graph, resolver, options, progress, reuse=False)
        progress.stage("writing the report")
        return build_report(findings, options)
    finally:
        graph.release()


def _signature(group: CycleGroup) -> str:
    return group.diagnosis.signature if group.diagnosis is not None else ""


def probe_uncollectable(
    mark: int | None,
    options: AnalysisOptions,
    *,
    collect: bool = True,
    max_nodes: int | None = None,
    held: list[object] | None = None,
) -> Report | None:
    """What the block left that only loops through the autograd graph hold, as a report.

    Call after the block's closing collection, with its baseline still frozen (see
    :func:`whyalive.analysis.uncollectable.find_uncollectable`); ``mark`` is the autograd
    sequence mark taken when the block began. The loops are in ``uncollectable``;
    None when there are none. ``held`` receives the block's tensors only an unnamed
    C/C++ owner holds, for :func:`~whyalive.report.survivors.listed_survivors` to list
    once the heap is unfrozen.
    """
    probe = find_uncollectable(mark, collect=collect, max_nodes=max_nodes)
    if probe is None:
        return None
    if held is not None:
        held.extend(probe.held)
    probe.held.clear()
    return uncollectable_report(probe.graph, options) if probe.graph is not None else None


def uncollectable_report(
    graph: ObjectGraph, options: AnalysisOptions, *, freed: bool = False
) -> Report | None:
    """The loops of a graph of :mod:`whyalive.analysis.uncollectable` as a report
    (``uncollectable``; ``cycles`` when ``freed``: loops the collector frees); the graph
    is released."""
    if options.autograd_walks is None:
        # A loop leaked once per step repeats one shape: the autograd graphs of a few
        # occurrences tell what each holds beyond itself (docs/patterns.md, "Cost").
        options = replace(options, autograd_walks=PROBE_AUTOGRAD_WALKS)
    with _collector_off():
        progress = Progress(len(graph), options.progress_after)
        report = _report_of(graph, KindResolver(), options, progress)
    if not report.cycles:
        return None
    if freed:
        return replace(report, notes=tuple(n for n in report.notes if n in options.notes))
    # The totals (bytes, by device, heavy objects) stay: a report's cover its loops too.
    return replace(
        report,
        cycles=(),
        uncollectable=report.cycles,
        garbage_objects=0,
        cycle_count=0,
        light_cycle_count=0,
        notes=tuple(n for n in report.notes if n in options.notes),
    )


def probe_block(
    watch: GarbageWatch, options: AnalysisOptions, *, listing: bool = True
) -> tuple[Report | None, bool]:
    """:func:`probe_uncollectable` for a watched block whose garbage was released, then
    :meth:`~whyalive.capture.GarbageWatch.finish`: (the loops' report, whether the
    block froze or unfroze the heap under whyalive's freeze).

    Only with the block's baseline frozen (otherwise what the block made cannot be
    told from the rest of the heap: a report with that note). A failure of the probe
    never fails the check: it becomes a note. With ``listing``, the block's survivors
    that only an unnamed C/C++ owner holds are listed (``held_natively``).
    """
    held: list[object] = []
    try:
        if not watch.used_freeze:
            probed = Report(notes=(UNPROBED_NOTE,)) if loaded_torch() is not None else None
        else:
            wanted = held if listing else None
            probed = probe_uncollectable(watch.autograd_mark, options, held=wanted)
    except Exception as error:  # the check's own findings stand; say what was not done
        note = f"whyalive could not look for uncollectable leaks ({type(error).__name__})."
        probed = Report(notes=(note,))
    finally:
        watch.finish()
    listed = list_survivors(held, options)
    if listed is not None:
        probed = merge_reports([probed, listed]) if probed is not None else listed
    return probed, watch.freeze_changed


def list_survivors(held: list[object], options: AnalysisOptions) -> Report | None:
    """The listing of :func:`~whyalive.report.survivors.listed_survivors`, when the heap is
    unfrozen (another check or the monitor holding the freeze hides the tensors whose
    ``.grad`` they may be: then nothing is listed); ``held`` is emptied."""
    try:
        if not held or OWNER.freeze.frozen:
            return None
        return listed_survivors(held, options)
    except Exception:  # a listing is extra: the check's findings stand without it
        return None
    finally:
        held.clear()


def with_uncollectable_loops(
    report: Report,
    targets: list[object],
    unrooted: dict[int, object],
    own_refs: int,
    where: str | None,
) -> Report:
    """The report with the loops through the autograd graph that keep unrooted targets.

    ``unrooted`` (id -> object, emptied here) is what no root reaches. A target that
    only loops among those keep gets the loop, in the words a check prints, and a note
    that says so instead of the generic one.
    """
    own = {id(target): own_refs for target in targets}
    objects = list(unrooted.values())
    unrooted.clear()  # before the reference counts are read: the list is the only holder
    graph = find_loops_among(objects, own, targets)
    if graph is None:
        return report
    held = {id(obj) for obj in graph.nodes}
    looped = [id(target) in held for target in targets]
    freed = graph.freed_by_collector
    options = AnalysisOptions(where=where, progress_after=None)
    loops = uncollectable_report(graph, options, freed=freed)
    if loops is None:
        return report
    note = FREED_LOOP_NOTE if freed else LOOP_NOTE
    alive = tuple(
        replace(entry, note=note) if in_loop else entry
        for entry, in_loop in zip(report.alive, looped, strict=True)
    )
    return merge_reports([replace(report, alive=alive), loops])


LOOP_NOTE = (
    "held only by a loop through the autograd graph (C++), which the collector never frees: "
    "see the uncollectable loop for its cut and fix."
)
FREED_LOOP_NOTE = (
    "held only by a reference cycle (through its autograd graph) that no root reaches: "
    "cyclic garbage that the next collection frees; see the cycle for its cut and fix."
)
