"""``analyze()``: captured garbage in, plain :class:`~whyalive.report.Report` out.

graph (:mod:`whyalive.graph`) -> cycles (:mod:`whyalive.analysis`) -> report
(:mod:`whyalive.report_builder`); the graph's strong references are dropped before
the report is returned, so the caller's release of the garbage frees it.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable

from whyalive.analysis import AnalysisOptions, CycleGroup, Progress, find_cycles
from whyalive.graph import build_graph
from whyalive.graph.core import announce_implementation
from whyalive.kinds import KindResolver
from whyalive.report import Report
from whyalive.report_builder import build_report, counts_report


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
    :func:`~whyalive.report_builder.counts_report`).
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
        graph = build_graph(objects, resolver)
        try:
            findings = find_cycles(graph, resolver, options, progress)
            if words_for is not None and not words_for([_signature(g) for g in findings.kept]):
                return counts_report(findings, options)
            progress.stage("writing the report")
            return build_report(findings, options)
        finally:
            graph.release()
    finally:
        if enabled:
            gc.enable()


def _signature(group: CycleGroup) -> str:
    return group.diagnosis.signature if group.diagnosis is not None else ""
