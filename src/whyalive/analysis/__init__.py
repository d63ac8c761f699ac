"""Cycles on live objects: find them, group them, diagnose them, filter what is reported.

This stage works on the captured garbage and hands its :class:`Findings` (live) to
:mod:`whyalive.report.builder`, which turns them into a plain report;
:func:`whyalive.report.pipeline.analyze` runs both and releases the garbage. Per-object work
happens in :mod:`whyalive.graph.core` (C when compiled); Python-level work is limited
to cycles that retain heavy objects, grouped by a cheap key so that a thousand copies
of one leak are diagnosed once.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from whyalive.analysis.autograd_share import count_autograd, estimate_autograd
from whyalive.analysis.diagnose import Diagnosis, diagnose
from whyalive.analysis.paths import MAX_VERIFIED_EDGES, CycleView, holder_paths, view_cycle
from whyalive.analysis.repeats import Repeat, RepeatMemo, sampled_walk
from whyalive.analysis.structure import STRUCTURE_MIN_MEMBERS, Structure, find_structure
from whyalive.graph import ObjectGraph
from whyalive.graph import core as graphcore
from whyalive.graph.garbage import members_by_component
from whyalive.guarded import type_module
from whyalive.kinds import HeavyFacts, KindResolver, merge_shared_memory
from whyalive.kinds.torch import AutogradWalk
from whyalive.words import unreported_note, unshown_note

_THROUGH_AUTOGRAD = attrgetter("through_autograd")
_STORAGE = attrgetter("storage")


@dataclass(frozen=True)
class AnalysisOptions:
    """What to report: thresholds, allow-list, and how much detail."""

    min_bytes: int = 0
    all_cycles: bool = False
    allow: tuple[str, ...] = ()
    max_cycles: int = 20
    max_paths: int = 5
    where: str | None = None
    notes: tuple[str, ...] = ()
    # Asked only for the heavy objects a report shows (NumPy arrays are not in the
    # captured garbage, so the caller cannot key them by id beforehand).
    site_of: Callable[[object], str | None] | None = None
    # Seconds after which a long analysis says on stderr what it is doing (None: never, as
    # for the analyses that run inside a gc callback, where nothing may print or warn).
    progress_after: float | None = 2.0
    # Files under this directory are the user's code (unless installed in a virtual
    # environment there); a cycle whose code is all elsewhere was made inside a package.
    user_root: str | None = None
    # Occurrences of each group of alike cycles whose tensors' autograd graphs are walked
    # (None: all). The others are credited what the walked ones held, on average: the
    # monitor sees one leak every step, and a walk costs Python work per graph node.
    autograd_walks: int | None = None
    # What earlier analyses found about groups of alike cycles, for analyses that only
    # count (the monitor's): see whyalive.analysis.repeats.
    repeats: RepeatMemo | None = field(default=None, compare=False)


@dataclass
class CycleGroup:
    """All cycles that share one signature (or, before diagnosis, one quick key)."""

    members: Sequence[int]
    retained: list[int]
    big: bool = False
    """Read as a structure: many members, or so many references that cuts cannot be tried."""
    view: CycleView | None = None
    diagnosis: Diagnosis | None = None
    structure: Structure | None = None
    occurrences: int = 0
    heavy_nodes: set[int] = field(default_factory=set)
    """Every heavy object the occurrences hold, once however many of them reach it."""
    storages: dict[object, tuple[int, str]] = field(default_factory=dict)
    autograd_nodes: set[int] = field(default_factory=set)
    """Of ``heavy_nodes``, autograd nodes: heavy for the tensors they hold, not counted."""
    autograd_storages: set[object] = field(default_factory=set)
    """Storages of the tensors that only the walked occurrences' autograd graphs hold."""
    autograd_estimated: int = 0
    """Such tensors credited to the occurrences not walked (as many as the walked held)."""
    alike: dict[int, int] = field(default_factory=dict)
    """Of ``heavy_nodes``, runs' nodes: the arrays each stands for besides its own."""

    @property
    def heavy_count(self) -> int:
        """Heavy objects held by the occurrences, each counted once, the tensors only their
        autograd graphs (C++) hold and the arrays of runs included."""
        autograd = len(self.autograd_storages) + self.autograd_estimated
        runs = sum(self.alike.values())
        return len(self.heavy_nodes) - len(self.autograd_nodes) + autograd + runs

    @property
    def total_bytes(self) -> int:
        """Bytes held by every occurrence, each storage counted once."""
        return sum(map(itemgetter(0), self.storages.values()))

    def absorb(self, other: CycleGroup) -> None:
        """Count another group's occurrences as this one's."""
        self.occurrences += other.occurrences
        self.heavy_nodes |= other.heavy_nodes
        self.storages.update(other.storages)
        self.autograd_nodes |= other.autograd_nodes
        self.autograd_storages |= other.autograd_storages
        self.autograd_estimated += other.autograd_estimated
        self.alike.update(other.alike)


@dataclass
class Findings:
    """What :func:`find_cycles` found, still on the live graph (never returned to the user)."""

    graph: ObjectGraph
    facts: dict[int, HeavyFacts]
    # How many heavy objects of the garbage share each storage (the rest are live users).
    storage_users: dict[object, int]
    kept: list[CycleGroup]
    cycle_count: int
    heavy_cycles: int
    notes: list[str]
    reused: bool = False
    """Whether some group was counted with what an earlier analysis found (no view)."""


class Progress:
    """Says on stderr what a long analysis is doing; silent when it is quick."""

    def __init__(self, objects: int, after: float | None) -> None:
        self.objects = objects
        self.after = after
        self.start = time.monotonic()
        self.started = False

    def stage(self, words: str) -> None:
        """Report the stage about to run, once the analysis has run for ``after`` seconds."""
        if self.after is None:
            return
        elapsed = time.monotonic() - self.start
        if elapsed < self.after:
            return
        if not self.started:
            self.started = True
            _say(f"analysing {self.objects:,} garbage objects ({elapsed:.1f} s so far)...")
        _say(f"  {words} ({elapsed:.1f} s)")


def _say(line: str) -> None:
    try:
        sys.stderr.write(f"whyalive: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # no usable stderr: stay quiet
        pass


def find_cycles(
    graph: ObjectGraph,
    resolver: KindResolver,
    options: AnalysisOptions,
    progress: Progress,
    *,
    reuse: bool = True,
) -> Findings:
    """The heavy objects, and the cycle groups to report (diagnosed, filtered, sorted).

    With ``options.repeats``, a group an earlier analysis found is counted with its
    diagnosis and autograd share (unless ``reuse`` is False: then every group is analysed
    in full, and remembered).
    """
    nodes = graph.nodes
    facts: dict[int, HeavyFacts] = {}
    walk = AutogradWalk() if "torch" in sys.modules else None
    sampled = walk is not None and options.autograd_walks is not None
    heavy_candidates = graph.heavy_candidates
    described_all = resolver.describe_many([nodes[i] for i in heavy_candidates])
    for index, described in zip(heavy_candidates, described_all, strict=True):
        if described is not None:
            if walk is not None and not sampled and described.kind == "torch.Tensor":
                walk.visit(index, nodes[index])
            facts[index] = described
    for node, run in graph.alike.items():  # a run's node holds the bytes of all its arrays
        facts[node] = run.facts(facts[node])
    if walk is not None:
        # An autograd node of the garbage holds tensors the collector never lists (what it
        # saved, the leaves it accumulates into, their gradients). Walked even when tensors'
        # walks are sampled: a node is heavy only for what its walk finds.
        if sampled:  # what a tensor's walk (or estimate) covers is not walked from its nodes
            tensors = [i for i, fact in facts.items() if fact.kind == "torch.Tensor"]
            walk.visit_nodes(nodes, graph.garbage_count, tensors, graph.successors, graph.types)
        else:  # the tensors' walks came first
            walk.visit_nodes(nodes, graph.garbage_count, types=graph.types)
        facts = walk.finish(facts, nodes, graph.garbage_count)
    progress.stage("finding the cycles")
    # Only cycles that retain a heavy object are diagnosed, unless all are wanted.
    component_of, cycle_count, candidates = graphcore.cycle_candidates(
        graph.offsets, graph.targets, None if options.all_cycles else facts
    )
    members_of = members_by_component(component_of, candidates, cycle_count)
    graph.open_workspace(component_of)

    heavy_mask = bytearray(len(graph))
    for index in facts:
        heavy_mask[index] = 1
    # A cycle retains what it reaches without passing through another cycle: a chain of
    # cycles is then linear to analyse, and each heavy object is blamed on its nearest cycle.
    blocked = bytearray(len(graph))
    for component in members_of:
        blocked[component] = 1

    progress.stage(f"grouping {len(members_of):,} cycles")
    # Per cycle, in one call: what it retains (once every heavy object is found no other
    # can be: a giant cycle holding one payload stops at its first member's references),
    # and a quick key, alike cycles made by the same code sharing code objects and
    # types. A big cycle is its own group: keying it would cost a sort of its members.
    found = graph.work().cycle_keys(
        members_of.values(),
        heavy_mask,
        blocked,
        len(facts),
        _specific,
        STRUCTURE_MIN_MEMBERS,
        MAX_VERIFIED_EDGES,
        options.all_cycles,
    )
    known: dict[object, Repeat] = {}
    # A probe's loops run through the autograd graph (C++ references): never remembered.
    memo = options.repeats if not graph.cpp_edges else None
    if memo is not None and reuse:
        for key, members in {key: members for key, members, _ in reversed(found)}.items():
            hit = memo.lookup(key, graph, members)
            if hit is not None:
                known[key] = hit
    estimated = {key: hit.estimate for key, hit in known.items()}
    walked_first = dict.fromkeys(estimated, 0)  # occurrences walked, per group: none here
    if walk is not None and sampled:
        limit = options.autograd_walks or 0
        walked, facts = sampled_walk(walk, found, facts, nodes, graph.garbage_count, limit, known)
        estimated.update(walked)
        walked_first.update(dict.fromkeys(walked, limit))
    facts = merge_shared_memory(facts)

    storage_users: dict[object, int] = defaultdict(int)
    if any(map(_THROUGH_AUTOGRAD, facts.values())):
        for fact in facts.values():
            for held in fact.held():
                storage_users[held.storage] += 1
    else:  # at C speed
        storage_users.update(Counter(map(_STORAGE, facts.values())))
    quick = _groups_of(found, graph, facts, estimated, walked_first)
    estimate_autograd(quick, walked_first)
    heavy_cycles = sum(g.occurrences for g in quick.values() if g.retained)

    # The costly per-cycle work (views, structures, patterns) only for what is reported.
    by_signature: dict[str, CycleGroup] = {}
    below = 0
    for key, group in sorted(quick.items(), key=lambda kg: -kg[1].total_bytes):
        if group.total_bytes < options.min_bytes:
            below += 1
            continue
        if key in known:
            group.diagnosis = known[key].diagnosis
        else:
            _diagnose_group(graph, group, facts, progress)
            if memo is not None and group.diagnosis is not None:
                memo.learn(key, graph, group.members, group.diagnosis, estimated.get(key, []))
        assert group.diagnosis is not None
        same = by_signature.get(group.diagnosis.signature)
        if same is None:
            by_signature[group.diagnosis.signature] = group
        else:
            same.absorb(group)

    allowed = set(options.allow)
    kept = [
        g
        for g in by_signature.values()
        if g.total_bytes >= options.min_bytes
        and g.diagnosis is not None
        and g.diagnosis.signature not in allowed
        and g.diagnosis.match.pattern not in allowed
    ]
    notes = list(options.notes)
    skipped = below + len(by_signature) - len(kept)
    if skipped:
        notes.append(unreported_note(skipped))
    kept.sort(key=lambda g: (-g.total_bytes, -g.occurrences, _signature(g)))
    if len(kept) > options.max_cycles:
        notes.append(unshown_note(len(kept) - options.max_cycles))
        kept = kept[: options.max_cycles]

    findings = Findings(graph, facts, storage_users, kept, cycle_count, heavy_cycles, notes)
    findings.reused = bool(known)
    return findings


def _groups_of(
    found: list[tuple[object, Sequence[int], list[int]]],
    graph: ObjectGraph,
    facts: dict[int, HeavyFacts],
    estimated: dict[object, list[tuple[int, str]]],
    walked_first: dict[object, int],
) -> dict[object, CycleGroup]:
    """The cycles ``found`` counted per quick key, in order of first sight, with the
    storages each group holds. Group by group (the monitor's batch repeats one leak):
    what Python does per cycle is only for the occurrences whose autograd graphs were
    walked; the others are counted at C speed."""
    rows_of: dict[object, list[tuple[Sequence[int], list[int]]]] = defaultdict(list)
    for key, members, retained in found:
        rows_of[key].append((members, retained))
    # What each heavy object holds, read once.
    held_of = {node: (fact.storage, (fact.nbytes, fact.device)) for node, fact in facts.items()}
    walked_nodes = {node for node, fact in facts.items() if fact.through_autograd}
    groups: dict[object, CycleGroup] = {}
    for key, rows in rows_of.items():
        members, retained = rows[0]
        group = groups[key] = CycleGroup(members, retained, big=_is_structure(key))
        group.occurrences = len(rows)
        every = list(map(itemgetter(1), rows))
        group.heavy_nodes.update(itertools.chain.from_iterable(every))
        if graph.alike:
            group.alike.update(
                (n, facts[n].count - 1)
                for n in itertools.chain.from_iterable(every)
                if n in graph.alike
            )
        storages = group.storages
        shares = estimated.get(key, [])
        # The occurrences not walked: what a walked one's autograd graphs held, on average.
        first = min(walked_first[key], len(rows)) if shares else len(rows)
        gid = id(group)
        estimates: list[list[tuple[object, tuple[int, str]]]] = [[]] * first + [
            [(("estimated", gid, occurrence, number), share) for number, share in enumerate(shares)]
            for occurrence in range(first + 1, len(rows) + 1)
        ]
        if walked_nodes and not all(map(walked_nodes.isdisjoint, every)):
            # Some occurrences hold what an autograd walk found: those one by one.
            for retained, estimate in zip(every, estimates, strict=True):
                if walked_nodes.isdisjoint(retained):
                    storages.update(map(held_of.__getitem__, retained))
                else:
                    own = list(map(facts.__getitem__, retained))
                    for held in (held for fact in own for held in fact.held()):
                        storages[held.storage] = (held.nbytes, held.device)
                    count_autograd(group, retained, own)
                storages.update(estimate)
            continue
        # At C speed, in the order one by one would give: each occurrence's storages,
        # then its estimate.
        holdings = map(map, itertools.repeat(held_of.__getitem__), every)
        storages.update(
            itertools.chain.from_iterable(
                itertools.chain.from_iterable(zip(holdings, estimates, strict=True))
            )
        )
    return groups


def _specific(cls: type) -> bool:
    """Whether a class names what made a cycle: classes of builtins alone do not."""
    return type_module(cls) != "builtins"


def _is_structure(key: object) -> bool:
    """Whether a quick key is a big cycle's (see ``Workspace.cycle_keys``)."""
    return type(key) is tuple and key[:1] == ("structure",)


def _signature(group: CycleGroup) -> str:
    return group.diagnosis.signature if group.diagnosis is not None else ""


def _diagnose_group(
    graph: ObjectGraph, group: CycleGroup, facts: dict[int, HeavyFacts], progress: Progress
) -> None:
    """View, holder paths and diagnosis of a group's first cycle; linear in its size."""
    members = group.members
    if group.big:
        progress.stage(f"reading a cycle of {len(members):,} objects as a structure")
        structure = find_structure(graph, members)
        shown = list(dict.fromkeys(n for e in structure.loop for n in (e.source, e.target)))
        view = CycleView(graph, members, shown, list(structure.loop))
        group.structure = structure
    else:
        view = view_cycle(graph, members)
    instances = group.structure.instances if group.structure is not None else None
    view.holder_paths = holder_paths(graph, view, group.retained, facts, instances)
    view.heavy_bytes = {node: facts[node].nbytes for node in group.retained}
    group.view = view
    group.diagnosis = diagnose(view, structure=group.structure)
