"""One report from several: every collection inside one check, or a monitor's first sightings."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

from whyalive.report import AliveObject, CycleReport, Edge, HolderPath, Report
from whyalive.words import FINALIZED_LOOPS


def merge_reports(reports: Sequence[Report]) -> Report:
    """The first report's run, with every report's nodes, cycles and bytes.

    Node ids of later reports are shifted past the earlier ones; a signature seen
    in several reports is one cycle entry whose occurrences and bytes add up.
    """
    first = reports[0]
    if len(reports) == 1:
        return first
    nodes = list(first.nodes)
    cycles: dict[str, CycleReport] = {c.signature: c for c in first.cycles}
    uncollectable: dict[str, CycleReport] = {c.signature: c for c in first.uncollectable}
    heavy = list(first.heavy_objects)
    alive = list(first.alive)
    held = list(first.held_natively)
    by_device: Counter[str] = Counter(first.bytes_by_device)
    notes = dict.fromkeys(first.notes)
    garbage, count, light = first.garbage_objects, first.cycle_count, first.light_cycle_count
    heavy_total = first.heavy_count
    unlisted = first.heavy_objects_unlisted
    timeline = list(first.timeline)
    for report in reports[1:]:
        timeline.extend(report.timeline)
        shift = len(nodes)
        nodes.extend(_changed(n, node_id=n.node_id + shift) for n in report.nodes)
        for found, into in ((report.cycles, cycles), (report.uncollectable, uncollectable)):
            for cycle in found:
                same = into.get(cycle.signature)
                if same is None:
                    into[cycle.signature] = shift_cycle(cycle, shift)
                elif same.members or not cycle.members:
                    # Seen before: only its counts are added (renumbering it is wasted).
                    into[cycle.signature] = _absorb(same, cycle)
                else:  # the first with words (the ones before only counted)
                    into[cycle.signature] = _absorb(shift_cycle(cycle, shift), same)
        heavy.extend(_changed(h, node_id=h.node_id + shift) for h in report.heavy_objects)
        alive.extend(_shift_alive(a, shift) for a in report.alive)
        held.extend(_shift_alive(a, shift) for a in report.held_natively)
        by_device.update(report.bytes_by_device)
        notes.update(dict.fromkeys(report.notes))
        garbage += report.garbage_objects
        count += report.cycle_count
        light += report.light_cycle_count
        heavy_total += report.heavy_count  # different collections: different objects
        unlisted += report.heavy_objects_unlisted
    if cycles:  # a clean collection's note on what it cannot rule out: not for the whole check
        notes.pop(FINALIZED_LOOPS, None)
    return dataclasses.replace(
        first,
        nodes=tuple(nodes),
        cycles=_ordered(cycles),
        uncollectable=_ordered(uncollectable),
        heavy_objects=tuple(heavy),
        alive=tuple(alive),
        held_natively=tuple(held),
        total_bytes=sum(by_device.values()),
        bytes_by_device=dict(by_device),
        garbage_objects=garbage,
        cycle_count=count,
        light_cycle_count=light,
        heavy_count=heavy_total,
        heavy_objects_unlisted=unlisted,
        notes=tuple(notes),
        timeline=tuple(sorted(timeline, key=lambda p: (p.signature, p.step))),
    )


_Record = TypeVar("_Record")


def _changed(record: _Record, **changes: object) -> _Record:
    """``dataclasses.replace`` for the report's plain frozen records, at a fraction of its
    cost (a check merges one report per collection: thousands of nodes): no field here has
    an ``__init__``-only part or a ``__post_init__`` to run."""
    copied = object.__new__(type(record))
    fields = copied.__dict__
    fields.update(record.__dict__)
    fields.update(changes)
    return copied


def with_loops(report: Report, loops: Sequence[CycleReport]) -> Report:
    """``report`` with more uncollectable loops (node ids already shifted), its totals grown
    by theirs: each loop's total bytes split by device as one occurrence's are."""
    by_device: Counter[str] = Counter(report.bytes_by_device)
    for loop in loops:
        held = sum(loop.bytes_by_device.values()) or 1
        for device, nbytes in loop.bytes_by_device.items():
            by_device[device] += loop.total_bytes * nbytes // held
    return dataclasses.replace(
        report,
        uncollectable=report.uncollectable + tuple(loops),
        total_bytes=sum(by_device.values()),
        bytes_by_device=dict(by_device),
        heavy_count=report.heavy_count + sum(loop.heavy_count for loop in loops),
    )


def _ordered(cycles: dict[str, CycleReport]) -> tuple[CycleReport, ...]:
    return tuple(sorted(cycles.values(), key=lambda c: (-c.total_bytes, c.signature)))


def shift_edge(edge: Edge, shift: int) -> Edge:
    """The same reference between nodes renumbered by ``shift``."""
    return dataclasses.replace(edge, source=edge.source + shift, target=edge.target + shift)


def _path(path: HolderPath, shift: int) -> HolderPath:
    return HolderPath(
        path.heavy_node + shift,
        tuple(n + shift for n in path.nodes),
        tuple(shift_edge(e, shift) for e in path.edges),
    )


def shift_cycle(cycle: CycleReport, shift: int) -> CycleReport:
    """The same cycle with its node ids renumbered by ``shift``."""
    cut = cycle.cut
    return dataclasses.replace(
        cycle,
        members=tuple(n + shift for n in cycle.members),
        edges=tuple(shift_edge(e, shift) for e in cycle.edges),
        heavy=tuple(n + shift for n in cycle.heavy),
        holder_paths=tuple(_path(p, shift) for p in cycle.holder_paths),
        cut=None
        if cut is None
        else dataclasses.replace(cut, edges=tuple(shift_edge(e, shift) for e in cut.edges)),
        loop=tuple(shift_edge(e, shift) for e in cycle.loop),
        holds=tuple(
            dataclasses.replace(h, heavy=tuple(n + shift for n in h.heavy)) for h in cycle.holds
        ),
    )


def _shift_alive(found: AliveObject, shift: int) -> AliveObject:
    return dataclasses.replace(
        found,
        node_id=found.node_id + shift,
        paths=tuple(_path(p, shift) for p in found.paths),
    )


def _absorb(kept: CycleReport, other: CycleReport) -> CycleReport:
    return _changed(
        kept,
        occurrences=kept.occurrences + other.occurrences,
        total_bytes=kept.total_bytes + other.total_bytes,
        heavy_count=kept.heavy_count + other.heavy_count,
    )
