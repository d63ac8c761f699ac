"""``analyze()``: captured garbage in, plain :class:`~whyalive.report.Report` out.

graph (:mod:`whyalive.graph`) -> cycles (:mod:`whyalive.analysis`) -> report
(:mod:`whyalive.report_builder`); the graph's strong references are dropped before
the report is returned, so the caller's release of the garbage frees it.
"""

from __future__ import annotations

import functools
import gc

from whyalive.analysis import AnalysisOptions, Progress, find_cycles
from whyalive.graph import build_graph
from whyalive.kinds import KindResolver
from whyalive.report import Report
from whyalive.report_builder import build_report


@functools.cache
def prepare_in_collector() -> None:
    """Import now what an analysis imports lazily, so one can run inside a gc callback.

    A gc callback must not import (the import system may be mid-way through a
    module in this very thread); once imported, a module is only looked up.
    """
    import ctypes  # noqa: F401  (kinds.buffers reads addresses through it)

    analyze([], AnalysisOptions(progress_after=None))


def analyze(objects: list[object], options: AnalysisOptions | None = None) -> Report:
    """Analyse captured garbage; the returned report holds no live object."""
    # An automatic collection during the analysis would traverse all the garbage we
    # hold (it is reachable now) for nothing: the collector stays off until we return.
    # Switched back on here and in _analyze_paused: an interrupt can cut either
    # finally, never both (docs/architecture.md, GC rules 10).
    enabled = gc.isenabled()
    try:
        return _analyze_paused(objects, options or AnalysisOptions(), enabled)
    finally:
        if enabled:
            gc.enable()


def _analyze_paused(objects: list[object], options: AnalysisOptions, enabled: bool) -> Report:
    try:
        gc.disable()
        progress = Progress(len(objects), options.progress_after)
        resolver = KindResolver()
        progress.stage("building the reference graph")
        graph = build_graph(objects, resolver)
        try:
            findings = find_cycles(graph, resolver, options, progress)
            progress.stage("writing the report")
            return build_report(findings, options)
        finally:
            graph.release()
    finally:
        if enabled:
            gc.enable()
