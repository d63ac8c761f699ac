"""The report's table of heavy objects: each storage counted once, shared ones marked."""

from __future__ import annotations

from whyalive.analysis import AnalysisOptions, CycleGroup
from whyalive.kinds import HeavyFacts
from whyalive.report import HeavyObject
from whyalive.report.builder.nodes import NodeTable


def heavy_table(
    table: NodeTable,
    kept: list[CycleGroup],
    facts: dict[int, HeavyFacts],
    storage_users: dict[object, int],
    options: AnalysisOptions,
) -> list[HeavyObject]:
    """The heavy objects the cycles list (:attr:`CycleReport.heavy`); ``counted`` marks a
    storage's first among them."""
    storages: dict[object, int] = {}
    result: list[HeavyObject] = []
    seen_nodes: set[int] = set()
    for group in kept:
        for node in group.retained:
            if node in seen_nodes or node not in table.ids:
                continue
            seen_nodes.add(node)
            fact = facts[node]
            counted = fact.storage not in storages
            if counted:
                storages[fact.storage] = len(storages)
            result.append(
                HeavyObject(
                    node_id=table.add(node),
                    kind=fact.kind,
                    description=fact.own.description,
                    nbytes=fact.own.nbytes,
                    device=fact.device,
                    storage_id=storages[fact.storage],
                    counted=counted,
                    shared_with_live=fact.storage_users > storage_users[fact.storage],
                    allocation_site=_allocation_site(table.graph.nodes[node], options),
                )
            )
    return result


def _allocation_site(obj: object, options: AnalysisOptions) -> str | None:
    return options.site_of(obj) if options.site_of is not None else None
