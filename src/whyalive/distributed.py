"""Every rank: rank tags on reports and one summary gathered to rank 0.

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

The summary itself is plain data (:mod:`whyalive.report.summary`), rendered by
:mod:`whyalive.render.summary`.

torch is never imported here at module import time: :func:`rank_and_world`
reads ``sys.modules`` only, and :func:`gather_summary` imports
``torch.distributed`` when the user calls it.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import sys
import time
from typing import Any

from whyalive.errors import UsageError
from whyalive.report import Report
from whyalive.report.run_info import rank_and_world
from whyalive.report.summary import RankCycle, Summary, SummaryRow, rank_cycles, summarize

# The summary types live in whyalive.report.summary; they stay importable from here, where
# gather_summary() returns them.
__all__ = [
    "RankCycle",
    "Summary",
    "SummaryRow",
    "gather_summary",
    "rank_and_world",
    "rank_cycles",
    "rank_tag",
    "summarize",
]

logger = logging.getLogger("whyalive")

_KEY_PREFIX = "whyalive/summary"
# Calls per group, so that two gathers on one group never read each other's keys.
_calls: dict[str, int] = {}


def rank_tag() -> str:
    """``"[rank 1/4] "`` for log lines, or ``""`` outside a distributed job."""
    rank, world = rank_and_world()
    if rank is None:
        return ""
    return f"[rank {rank}/{world}] " if world is not None else f"[rank {rank}] "


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
