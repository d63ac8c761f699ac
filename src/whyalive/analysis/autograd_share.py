"""What groups of alike cycles hold through the autograd graph (C++), counted: each tensor
once, autograd nodes (heavy only for what they hold) never."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from whyalive.kinds import HeavyFacts
from whyalive.words import AUTOGRAD_NODE_KIND

if TYPE_CHECKING:
    from whyalive.analysis import CycleGroup

_STORAGE = attrgetter("storage")


def count_autograd(group: CycleGroup, retained: list[int], own: list[HeavyFacts]) -> None:
    """Note the autograd nodes among ``retained`` (whose facts are ``own``) and the storages
    of the tensors only their autograd graphs hold."""
    mine = set(map(_STORAGE, own))
    for node, fact in zip(retained, own, strict=True):
        if fact.kind == AUTOGRAD_NODE_KIND:
            group.autograd_nodes.add(node)
        group.autograd_storages.update(
            held.storage for held in fact.through_autograd if held.storage not in mine
        )


def estimate_autograd(groups: Mapping[object, CycleGroup], walked: Mapping[object, int]) -> None:
    """Credit the occurrences of each group past its first ``walked[key]`` (not walked) with
    as many such tensors as the walked ones held, on average."""
    for key, first in walked.items():
        group = groups[key]
        if first and group.occurrences > first:
            unwalked = group.occurrences - first
            group.autograd_estimated = len(group.autograd_storages) * unwalked // first


def held_count(groups: Sequence[CycleGroup], facts: Mapping[int, HeavyFacts]) -> int:
    """Heavy objects the groups hold, each once: what ``CycleGroup.heavy_count`` counts, over
    several groups."""
    nodes = set().union(*(g.heavy_nodes for g in groups))
    autograd = set().union(*(g.autograd_storages for g in groups))
    if autograd:  # a tensor one group holds as itself is not counted again for another's graph
        autograd -= {facts[n].storage for n in nodes}
    carriers = set().union(*(g.autograd_nodes for g in groups))
    estimated = sum(g.autograd_estimated for g in groups)
    runs = sum({n: extra for g in groups for n, extra in g.alike.items()}.values())
    return len(nodes) - len(carriers) + len(autograd) + estimated + runs
