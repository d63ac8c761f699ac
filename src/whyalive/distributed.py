"""Every rank: rank tags on reports and one summary gathered to rank 0 (DESIGN §7).

whyalive runs inside each rank of the user's ``torch.distributed`` job. This
module answers two questions: *which rank am I* (:func:`rank_and_world`, read
from an initialised process group, else from ``RANK``/``LOCAL_RANK``/
``WORLD_SIZE``) and *which ranks leak, how much, through which code*
(:func:`gather_summary`, a :class:`Summary` on the group's first rank).

The exchange goes through the process group's own c10d store, the key-value
store every ``torch.distributed`` job already has, not through a collective:
a collective cannot finish while one rank is dead or stuck, and it cannot say
which rank that was. Each rank writes its rows under a per-call key and
returns at once; the first rank waits for each key until one deadline and
reports the ranks it did not hear from as missing. So a crashed rank costs at
most ``timeout`` seconds on one rank and never hangs the others. The store
does not care whether the group runs gloo or NCCL.

torch is never imported here at module import time: :func:`rank_and_world`
reads ``sys.modules`` only, and :func:`gather_summary` imports
``torch.distributed`` when the user calls it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from whyalive.errors import UsageError
from whyalive.report import Report
from whyalive.words import cycles_words, plural, size_to_words, verb

logger = logging.getLogger("whyalive")

_KEY_PREFIX = "whyalive/summary"
# Calls per group, so that two gathers on one group never read each other's keys.
_calls: dict[str, int] = {}


def rank_and_world() -> tuple[int | None, int | None]:
    """This process's rank and world size, or ``(None, None)`` outside a distributed job.

    An initialised ``torch.distributed`` default group wins; otherwise the
    launcher's environment (``RANK``, else ``LOCAL_RANK``; ``WORLD_SIZE``).
    """
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a half-torn-down group must not break a report
        pass
    rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK")
    world = os.environ.get("WORLD_SIZE")
    try:
        return (int(rank) if rank else None), (int(world) if world else None)
    except ValueError:
        return None, None


def rank_tag() -> str:
    """``"[rank 1/4] "`` for log lines, or ``""`` outside a distributed job."""
    rank, world = rank_and_world()
    if rank is None:
        return ""
    return f"[rank {rank}/{world}] " if world is not None else f"[rank {rank}] "


@dataclass(frozen=True)
class RankCycle:
    """One cycle signature as one rank saw it: the unit a rank sends to the first rank."""

    signature: str
    pattern: str
    title: str
    total_bytes: int
    occurrences: int
    cut: str | None = None


@dataclass(frozen=True)
class SummaryRow:
    """One cycle signature across ranks: which ranks hold it and how many bytes each."""

    signature: str
    pattern: str
    title: str
    bytes_by_rank: dict[int, int]
    occurrences_by_rank: dict[int, int]
    cut: str | None = None

    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks whose reports contain this signature, in order."""
        return tuple(sorted(self.bytes_by_rank))

    @property
    def total_bytes(self) -> int:
        """Bytes held by this signature on all ranks together."""
        return sum(self.bytes_by_rank.values())


@dataclass(frozen=True)
class Summary:
    """What every rank's checks found, on the first rank of the group.

    ``ranks`` are the ranks that answered, ``missing`` those that did not answer
    before the deadline (crashed, stuck, or never called). ``str(summary)`` is
    a text table, one row per cycle signature.
    """

    world_size: int
    ranks: tuple[int, ...]
    missing: tuple[int, ...] = ()
    rows: tuple[SummaryRow, ...] = ()
    reports_by_rank: dict[int, int] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        """True when some rank reported a cycle holding heavy objects."""
        return bool(self.rows)

    @property
    def leaking_ranks(self) -> tuple[int, ...]:
        """Ranks that reported at least one cycle."""
        return tuple(sorted({r for row in self.rows for r in row.bytes_by_rank}))

    @property
    def total_bytes(self) -> int:
        """Bytes held by reported cycles on all ranks together."""
        return sum(row.total_bytes for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (rank keys become strings, as JSON needs)."""
        return {
            "world_size": self.world_size,
            "ranks": list(self.ranks),
            "missing": list(self.missing),
            "reports_by_rank": {str(k): v for k, v in self.reports_by_rank.items()},
            "rows": [
                {
                    "signature": row.signature,
                    "pattern": row.pattern,
                    "title": row.title,
                    "cut": row.cut,
                    "ranks": list(row.ranks),
                    "total_bytes": row.total_bytes,
                    "bytes_by_rank": {str(k): v for k, v in row.bytes_by_rank.items()},
                    "occurrences_by_rank": {str(k): v for k, v in row.occurrences_by_rank.items()},
                }
                for row in self.rows
            ],
        }

    def __str__(self) -> str:
        return render_summary(self)

    def __repr__(self) -> str:
        from whyalive.render.notebook import summary_line

        return f"<whyalive.Summary: {summary_line(self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        from whyalive.render.notebook import summary_html

        return summary_html(self)


def rank_cycles(reports: Iterable[Report]) -> list[RankCycle]:
    """The rows one rank contributes: its reports' cycles, merged by signature."""
    merged: dict[str, RankCycle] = {}
    for report in reports:
        for cycle in report.cycles:
            old = merged.get(cycle.signature)
            cut = cycle.cut.description if cycle.cut is not None else None
            if old is None:
                merged[cycle.signature] = RankCycle(
                    cycle.signature,
                    cycle.pattern,
                    cycle.title,
                    cycle.total_bytes,
                    cycle.occurrences,
                    cut,
                )
            else:
                merged[cycle.signature] = RankCycle(
                    old.signature,
                    old.pattern,
                    old.title,
                    old.total_bytes + cycle.total_bytes,
                    old.occurrences + cycle.occurrences,
                    old.cut or cut,
                )
    return list(merged.values())


def summarize(
    per_rank: Mapping[int, Sequence[RankCycle]],
    world_size: int,
    *,
    expected: Iterable[int] | None = None,
    reports_by_rank: Mapping[int, int] | None = None,
) -> Summary:
    """Join the ranks' rows into one :class:`Summary`; ranks expected but absent are missing."""
    rows: dict[str, dict[str, Any]] = {}
    for rank in sorted(per_rank):
        for item in per_rank[rank]:
            row = rows.setdefault(
                item.signature,
                {"cycle": item, "bytes": {}, "occurrences": {}, "cut": item.cut},
            )
            row["bytes"][rank] = row["bytes"].get(rank, 0) + item.total_bytes
            row["occurrences"][rank] = row["occurrences"].get(rank, 0) + item.occurrences
            row["cut"] = row["cut"] or item.cut
    built = [
        SummaryRow(
            signature,
            data["cycle"].pattern,
            data["cycle"].title,
            dict(data["bytes"]),
            dict(data["occurrences"]),
            data["cut"],
        )
        for signature, data in rows.items()
    ]
    built.sort(key=lambda r: (-r.total_bytes, r.signature))
    wanted = set(range(world_size) if expected is None else expected)
    return Summary(
        world_size=world_size,
        ranks=tuple(sorted(per_rank)),
        missing=tuple(sorted(wanted - set(per_rank))),
        rows=tuple(built),
        reports_by_rank=dict(reports_by_rank or {}),
    )


def _ranks_words(ranks: Sequence[int]) -> str:
    return ",".join(str(r) for r in ranks) if ranks else "-"


def ranks_phrase(ranks: Sequence[int]) -> str:
    """``"rank 2"``, ``"ranks 0,1"``."""
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {_ranks_words(ranks)}"


def summary_headline(summary: Summary) -> str:
    """What the ranks found, in the words of a single report's headline."""
    heard = f"{len(summary.ranks)} of {plural(summary.world_size, 'rank')} reported"
    if not summary.rows:
        return f"{heard}; no cyclic garbage holds heavy objects"
    occurrences = sum(sum(row.occurrences_by_rank.values()) for row in summary.rows)
    return (
        f"{heard}; {cycles_words(occurrences, len(summary.rows))} "
        f"{verb(occurrences, 'keeps', 'keep')} {size_to_words(summary.total_bytes)} alive "
        f"on {ranks_phrase(summary.leaking_ranks)}"
    )


def render_summary(summary: Summary) -> str:
    """The summary as a text table: signature, pattern, ranks, bytes, occurrences."""
    lines = [f"whyalive summary: {summary_headline(summary)}"]
    if summary.missing:
        lines.append(
            f"missing: {ranks_phrase(summary.missing)} did not report "
            "(crashed, stuck, or never called gather_summary)"
        )
    if summary.rows:
        header = ("signature", "pattern", "ranks", "bytes", "per rank", "cycles")
        table = [header]
        for row in summary.rows:
            per_rank = " ".join(
                f"{r}:{size_to_words(b)}" for r, b in sorted(row.bytes_by_rank.items())
            )
            table.append(
                (
                    row.signature,
                    row.pattern,
                    _ranks_words(row.ranks),
                    size_to_words(row.total_bytes),
                    per_rank,
                    str(sum(row.occurrences_by_rank.values())),
                )
            )
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        lines.extend(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in table
        )
        lines.extend(
            f"{row.signature}: {row.title}" + (f"; cut {row.cut}" if row.cut else "")
            for row in summary.rows
        )
    return "\n".join(lines) + "\n"


def _reports_of(source: object) -> list[Report]:
    """Reports from a Report, a finished check_leaks, a monitor, or a sequence of reports."""
    if source is None:
        return []
    if isinstance(source, Report):
        return [source]
    summary_reports = getattr(source, "summary_reports", None)
    if callable(summary_reports):
        return list(summary_reports())
    if hasattr(source, "report") and not isinstance(source, (list, tuple)):
        report = source.report
        return [] if report is None else [report]
    if isinstance(source, (list, tuple)) and all(isinstance(r, Report) for r in source):
        return list(source)
    raise UsageError(
        "gather_summary() takes a Report, a check_leaks() that has run, a GcMonitor, "
        f"or a list of reports, not {type(source).__name__}"
    )


def gather_summary(
    source: object,
    group: Any = None,
    *,
    timeout: float = 60.0,
) -> Summary | None:
    """Send this rank's cycles to the group's first rank; return the :class:`Summary` there.

    Call it on every rank of ``group`` (the default group when ``None``), the
    same number of times, as you would a collective. Other ranks get ``None``
    and return without waiting. The first rank waits at most ``timeout``
    seconds in all; ranks not heard from by then are listed in
    :attr:`Summary.missing`. Outside an initialised process group it returns
    the summary of this process alone.
    """
    reports = _reports_of(source)
    rows = rank_cycles(reports)
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        rank, _world = rank_and_world()
        me = rank if rank is not None else 0
        return summarize({me: rows}, 1, expected=[me], reports_by_rank={me: len(reports)})
    return _gather_through_store(dist, group, rows, len(reports), timeout)


def _gather_through_store(
    dist: Any, group: Any, rows: list[RankCycle], report_count: int, timeout: float
) -> Summary | None:
    import datetime

    from torch.distributed import distributed_c10d as c10d

    chosen = dist.group.WORLD if group is None else group
    members = [int(r) for r in dist.get_process_group_ranks(chosen)]
    me = int(dist.get_rank())
    if me not in members:
        raise UsageError(f"rank {me} is not a member of the group passed to gather_summary()")
    group_key = ",".join(map(str, members))
    call = _calls.get(group_key, 0)
    _calls[group_key] = call + 1
    # The default store is the one every group is built on; keys carry the group's ranks.
    store = c10d._get_default_store()
    prefix = f"{_KEY_PREFIX}/{group_key}/{call}"
    payload = pickle.dumps((report_count, [_row_tuple(r) for r in rows]), protocol=4)
    first = me == members[0]
    try:
        store.set(f"{prefix}/{me}", payload)  # type: ignore[arg-type] # the store takes bytes
    except Exception as error:  # the store's host is gone: say so, never fail the caller's step
        logger.warning("%scould not send the whyalive summary: %s", rank_tag(), error)
        if not first:
            return None
        alone = {me: rows}
        return summarize(alone, len(members), expected=members, reports_by_rank={me: report_count})
    if not first:
        return None

    per_rank: dict[int, list[RankCycle]] = {}
    counts: dict[int, int] = {}
    deadline = time.monotonic() + max(timeout, 0.0)
    for rank in members:
        key = f"{prefix}/{rank}"
        left = deadline - time.monotonic()
        try:
            store.wait([key], datetime.timedelta(seconds=max(left, 0.001)))
            value = store.get(key)
        except Exception:  # the store's timeout error: this rank did not report in time
            continue
        count, items = pickle.loads(value)  # written by this module on a peer rank
        per_rank[rank] = [RankCycle(*item) for item in items]
        counts[rank] = int(count)
        with contextlib.suppress(Exception):  # a store without delete_key keeps a few bytes
            store.delete_key(key)
    return summarize(per_rank, len(members), expected=members, reports_by_rank=counts)


def _row_tuple(row: RankCycle) -> tuple[str, str, str, int, int, str | None]:
    # Plain builtins only, so unpickling on the first rank never imports anything.
    return (row.signature, row.pattern, row.title, row.total_bytes, row.occurrences, row.cut)
