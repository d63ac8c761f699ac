"""From live findings to a plain :class:`~whyalive.report.Report`: the last stage that
sees the user's objects.

It numbers the graph nodes a report shows (:class:`NodeTable`), names each cycle's
loop, cut, holder paths and holdings, tabulates the heavy objects and stamps the run
info. Everything it returns is strings and numbers: the report holds no reference to
anything it describes. :mod:`whyalive.explain` and the census build their reports
with the same table and path records (:mod:`~whyalive.report.builder.nodes`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from whyalive.analysis import AnalysisOptions, Findings
from whyalive.analysis.autograd_share import held_count
from whyalive.analysis.sourcelines import SourceLines
from whyalive.kinds import objects_in
from whyalive.report import CycleReport, HeavyObject, Node, Report
from whyalive.report.builder.cycles import cycle_report
from whyalive.report.builder.heavy import heavy_table
from whyalive.report.builder.nodes import NodeTable, holder_path_record
from whyalive.report.run_info import run_info
from whyalive.words import BLIND_SPOTS, FINALIZED_LOOPS

__all__ = ["NodeTable", "build_report", "counts_report", "holder_path_record"]


def counts_report(findings: Findings, options: AnalysisOptions) -> Report:
    """What :func:`build_report` counts, without its words: no nodes, loops, cuts, paths.

    For a caller that already holds the full report of every signature found (the
    monitor, after a leak's first sighting): each cycle keeps its signature, pattern,
    occurrences and bytes over all occurrences; every sentence, and what describes the
    one occurrence shown (its members, paths, bytes held), is empty; its heavy objects
    are counted in ``heavy_objects_unlisted``, not listed.
    """
    cycles = []
    for group in findings.kept:
        assert group.diagnosis is not None
        cycles.append(
            CycleReport(
                signature=group.diagnosis.signature,
                pattern=group.diagnosis.match.pattern,
                title="",
                summary="",
                explanation="",
                fix="",
                members=(),
                edges=(),
                heavy=(),
                holder_paths=(),
                cut=None,
                bytes_held=0,
                occurrences=group.occurrences,
                total_bytes=group.total_bytes,
                heavy_count=group.heavy_count,
            )
        )
    retained = {node for group in findings.kept for node in group.retained}
    return _report(findings, options, (), cycles, (), objects_in(retained, findings.facts))


def build_report(findings: Findings, options: AnalysisOptions) -> Report:
    """The plain report of what the analysis found; nothing live is kept."""
    graph, facts, kept = findings.graph, findings.facts, findings.kept
    table = NodeTable(graph, facts)
    sources = SourceLines()
    storage_users = findings.storage_users
    cycles = [cycle_report(table, g, facts, storage_users, options, sources) for g in kept]
    heavy_objects = heavy_table(table, kept, facts, storage_users, options)
    unlisted = objects_in({n for g in kept for n in g.retained}, facts) - len(heavy_objects)
    return _report(findings, options, table.nodes, cycles, heavy_objects, unlisted)


def _report(
    findings: Findings,
    options: AnalysisOptions,
    nodes: Sequence[Node],
    cycles: Sequence[CycleReport],
    heavy_objects: Sequence[HeavyObject],
    unlisted: int,
) -> Report:
    """The report's totals and run info around its parts (``unlisted``: the heavy objects
    the report counts but does not list)."""
    kept = findings.kept
    storages: dict[object, tuple[int, str]] = {}
    for group in kept:
        storages.update(group.storages)
    by_device: dict[str, int] = defaultdict(int)
    for nbytes, device in storages.values():
        by_device[device] += nbytes
    light = findings.cycle_count - findings.heavy_cycles
    return Report(
        run=run_info(options.where),
        nodes=tuple(nodes),
        cycles=tuple(cycles),
        heavy_objects=tuple(heavy_objects),
        heavy_objects_unlisted=unlisted,
        total_bytes=sum(by_device.values()),
        bytes_by_device=dict(by_device),
        garbage_objects=findings.graph.garbage_count,
        cycle_count=findings.cycle_count,
        heavy_count=held_count(kept, findings.facts),
        light_cycle_count=max(light, 0),
        # A clean report says what its headline cannot rule out.
        notes=(*findings.notes, *(() if cycles else (FINALIZED_LOOPS,)), BLIND_SPOTS),
    )
