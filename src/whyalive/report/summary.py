"""The plain summary of every rank's findings: rows per cycle signature, ranks missing.

Built on the group's first rank by :func:`whyalive.distributed.gather_summary` from
the :class:`RankCycle` rows each rank sends; :mod:`whyalive.render.summary` and
:mod:`whyalive.render.notebook` display it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from whyalive.report import Report
from whyalive.report.displays import display


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
        return display("summary_text", self)

    def __repr__(self) -> str:
        return f"<whyalive.Summary: {display('summary_line', self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return display("summary_html", self)


def rank_cycles(reports: Iterable[Report]) -> list[RankCycle]:
    """The rows one rank contributes: its reports' cycles and uncollectable loops, merged
    by signature."""
    merged: dict[str, RankCycle] = {}
    for report in reports:
        for cycle in (*report.cycles, *report.uncollectable):
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
