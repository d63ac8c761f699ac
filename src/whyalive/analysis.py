"""From captured garbage to a :class:`~whyalive.report.Report`: graph, cycles, diagnosis.

The analysis holds the garbage only while it runs; the report it returns is plain
data. Per-object work happens in :mod:`whyalive.graphcore` (C when compiled);
Python-level work is limited to cycles that retain heavy objects, grouped by a
cheap key so that a thousand copies of one leak are diagnosed once.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from whyalive import edges as ek
from whyalive import graphcore
from whyalive.diagnose import Diagnosis, diagnose
from whyalive.diagnose.naming import expression, is_instance_node, short_name
from whyalive.diagnose.patterns import cell_variable, enclosing_function, label, qualname_of
from whyalive.edges import name_node, variable_name
from whyalive.graph import ObjectGraph, build_graph
from whyalive.guarded import type_module, type_qualname, type_short_name
from whyalive.kinds import HeavyFacts, KindResolver, merge_shared_memory
from whyalive.kinds.torch import AutogradWalk
from whyalive.origin import CODE_TYPES, made_inside
from whyalive.paths import (
    MAX_VERIFIED_EDGES,
    CycleView,
    NamedEdge,
    closed_loop,
    named_path,
    view_cycle,
)
from whyalive.report import (
    Cut,
    CycleReport,
    Edge,
    HeavyObject,
    HolderPath,
    Holding,
    Node,
    Report,
    RunInfo,
)
from whyalive.sourcelines import SourceLines
from whyalive.structure import STRUCTURE_MIN_MEMBERS, Structure, find_structure, type_words
from whyalive.words import BLIND_SPOTS, a_code, heavy_brief, heavy_group_words, index_range_words

# Places listed under a cycle's holds; the rest are counted in the heavy objects.
MAX_HOLDINGS = 24
# A cut of many different references is named by its first few (the edges keep them all).
MAX_CUT_PHRASES = 3


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
    # Seconds after which a long analysis says on stderr what it is doing (None: never).
    progress_after: float | None = 2.0
    # Files under this directory are the user's code (unless installed in a virtual
    # environment there); a cycle whose code is all elsewhere was made inside a package.
    user_root: str | None = None


@dataclass
class _Group:
    """All cycles that share one signature (or, before diagnosis, one quick key)."""

    members: Sequence[int]
    retained: list[int]
    view: CycleView | None = None
    diagnosis: Diagnosis | None = None
    structure: Structure | None = None
    occurrences: int = 0
    heavy_count: int = 0
    storages: dict[object, tuple[int, str]] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """Bytes held by every occurrence, each storage counted once."""
        return sum(nbytes for nbytes, _ in self.storages.values())

    def absorb(self, other: _Group) -> None:
        """Count another group's occurrences as this one's."""
        self.occurrences += other.occurrences
        self.heavy_count += other.heavy_count
        self.storages.update(other.storages)


class _Progress:
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


class _NodeTable:
    """Assigns report node ids to graph nodes as they are first shown."""

    def __init__(self, graph: ObjectGraph, facts: dict[int, HeavyFacts]) -> None:
        self.graph = graph
        self.facts = facts
        self.ids: dict[int, int] = {}
        self.nodes: list[Node] = []

    def add(self, node: int, variable: str | None = None) -> int:
        found = self.ids.get(node)
        if found is not None:
            return found
        obj = self.graph.nodes[node]
        named = name_node(obj, variable)
        facts = self.facts.get(node)
        try:
            size = sys.getsizeof(obj) if facts is None else facts.nbytes
        except Exception:
            size = 0
        report_id = len(self.nodes)
        text = facts.description if facts is not None else named.label
        self.nodes.append(
            Node(report_id, named.type_name, text, named.location, int(size), facts is not None)
        )
        self.ids[node] = report_id
        return report_id

    def edge(self, edge: NamedEdge) -> Edge:
        return Edge(self.add(edge.source), self.add(edge.target), edge.name.kind, edge.name.name)


def _quick_key(
    objects: Sequence[object], members: Sequence[int], component: int
) -> tuple[int, ...]:
    """Cycles made by the same code share code objects and types: group them cheaply."""
    key: list[int] = []
    specific = False
    for node in members:
        obj = objects[node]
        cls = type(obj)
        code = getattr(obj, "__code__", None) if cls is types.FunctionType else None
        if code is not None:
            key.append(id(code))
            specific = True
        else:
            key.append(id(cls))
            specific = specific or type_module(cls) != "builtins"
    key.sort()
    if not specific:
        key.append(-1 - component)  # builtins only: the shape needs the full signature
    return tuple(key)


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
    options = options or AnalysisOptions()
    progress = _Progress(len(objects), options.progress_after)
    # An automatic collection during the analysis would traverse all the garbage we
    # hold (it is reachable now) for nothing: keep the collector off until we return.
    enabled = gc.isenabled()
    gc.disable()
    try:
        resolver = KindResolver()
        progress.stage("building the reference graph")
        graph = build_graph(objects, resolver)
        try:
            return _analyze_graph(graph, resolver, options, progress)
        finally:
            graph.release()
    finally:
        if enabled:
            gc.enable()


def _analyze_graph(
    graph: ObjectGraph, resolver: KindResolver, options: AnalysisOptions, progress: _Progress
) -> Report:
    nodes = graph.nodes
    facts: dict[int, HeavyFacts] = {}
    walk = AutogradWalk() if "torch" in sys.modules else None
    for index in graph.heavy_candidates:
        described = resolver.describe(nodes[index])
        if described is not None:
            if walk is not None and described.kind == "torch.Tensor":
                walk.visit(index, nodes[index])
            facts[index] = described
    if walk is not None:
        facts = walk.finish(facts, nodes[: graph.garbage_count])
    facts = merge_shared_memory(facts)
    progress.stage("finding the cycles")
    # Only cycles that retain a heavy object are diagnosed, unless all are wanted.
    component_of, cycle_count, candidates = graphcore.cycle_candidates(
        graph.offsets, graph.targets, None if options.all_cycles else facts
    )
    members_of = _members_by_component(component_of, candidates, cycle_count)
    graph.open_workspace(component_of)

    storage_users: dict[object, int] = defaultdict(int)
    for fact in facts.values():
        for held in fact.held():
            storage_users[held.storage] += 1
    heavy_mask = bytearray(len(graph))
    for index in facts:
        heavy_mask[index] = 1
    # A cycle retains what it reaches without passing through another cycle: a chain of
    # cycles is then linear to analyse, and each heavy object is blamed on its nearest cycle.
    blocked = bytearray(len(graph))
    for component in members_of:
        blocked[component] = 1

    progress.stage(f"grouping {len(members_of):,} cycles")
    quick: dict[object, _Group] = {}
    for component, members in members_of.items():
        retained = graph.reachable_from(members, heavy_mask, blocked)
        if not retained and not options.all_cycles:
            continue
        # A big cycle is its own group: keying it would cost a sort of its members.
        if _is_big(graph, members):
            key: object = ("structure", component)
        else:
            key = _quick_key(nodes, members, component)
        group = quick.get(key)
        if group is None:
            group = quick[key] = _Group(members, retained)
        group.occurrences += 1
        group.heavy_count += len(retained)
        for node in retained:
            for fact in facts[node].held():
                group.storages[fact.storage] = (fact.nbytes, fact.device)
    heavy_cycles = sum(g.occurrences for g in quick.values() if g.retained)

    # The costly per-cycle work (views, structures, patterns) only for what is reported.
    by_signature: dict[str, _Group] = {}
    below = 0
    for group in sorted(quick.values(), key=lambda g: -g.total_bytes):
        if group.total_bytes < options.min_bytes:
            below += 1
            continue
        _diagnose_group(graph, group, facts, progress)
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
        notes.append(f"{skipped} cycle signature(s) below min_bytes or allowed were not reported.")
    kept.sort(key=lambda g: (-g.total_bytes, -g.occurrences, _signature(g)))
    if len(kept) > options.max_cycles:
        notes.append(f"{len(kept) - options.max_cycles} more cycle signature(s) not shown.")
        kept = kept[: options.max_cycles]
    notes.append(BLIND_SPOTS)

    progress.stage("writing the report")
    table = _NodeTable(graph, facts)
    sources = SourceLines()
    cycles = [_cycle_report(table, g, facts, storage_users, options, sources) for g in kept]
    heavy_objects = _heavy_table(table, kept, facts, storage_users, options)
    storages: dict[object, tuple[int, str]] = {}
    for group in kept:
        storages.update(group.storages)
    by_device: dict[str, int] = defaultdict(int)
    for nbytes, device in storages.values():
        by_device[device] += nbytes
    total = sum(by_device.values())
    light = cycle_count - heavy_cycles
    return Report(
        run=run_info(options.where),
        nodes=tuple(table.nodes),
        cycles=tuple(cycles),
        heavy_objects=tuple(heavy_objects),
        total_bytes=total,
        bytes_by_device=dict(by_device),
        garbage_objects=graph.garbage_count,
        cycle_count=cycle_count,
        light_cycle_count=max(light, 0),
        notes=tuple(notes),
    )


def _members_by_component(
    component_of: memoryview, candidates: memoryview, cycle_count: int
) -> dict[int, Sequence[int]]:
    """Candidate nodes grouped by component, each ascending."""
    if not candidates:
        return {}
    if cycle_count == 1:
        # One cycle in the whole graph (a big structure): no pass over the ids.
        return {component_of[candidates[0]]: candidates}
    # Copying the ids out is worth it only when many nodes are candidates.
    many = len(candidates) * 8 > len(component_of)
    components: Sequence[int] = component_of.tolist() if many else component_of
    first = components[candidates[0]]
    # A component is a candidate whole or not at all: one count tells one big cycle.
    if many and cast("list[int]", components).count(first) == len(candidates):
        return {first: candidates}
    members_of: dict[int, list[int]] = defaultdict(list)
    for index in candidates:
        members_of[components[index]].append(index)
    return dict(members_of)


def _is_big(graph: ObjectGraph, members: Sequence[int]) -> bool:
    """Read as a structure: many objects, or so many references that cuts cannot be tried."""
    if len(members) >= STRUCTURE_MIN_MEMBERS:
        return True
    offsets = graph.offsets
    if sum(offsets[node + 1] - offsets[node] for node in members) <= MAX_VERIFIED_EDGES:
        return False  # even counting references that leave the cycle
    inside = set(members)
    count = 0
    for node in members:
        count += sum(1 for succ in graph.successors(node) if succ in inside)
        if count > MAX_VERIFIED_EDGES:
            return True
    return False


def _signature(group: _Group) -> str:
    return group.diagnosis.signature if group.diagnosis is not None else ""


def _diagnose_group(
    graph: ObjectGraph, group: _Group, facts: dict[int, HeavyFacts], progress: _Progress
) -> None:
    """View, holder paths and diagnosis of a group's first cycle; linear in its size."""
    members = group.members
    if _is_big(graph, members):
        progress.stage(f"reading a cycle of {len(members):,} objects as a structure")
        structure = find_structure(graph, members)
        shown = list(dict.fromkeys(n for e in structure.loop for n in (e.source, e.target)))
        view = CycleView(graph, members, shown, list(structure.loop))
        group.structure = structure
    else:
        view = view_cycle(graph, members)
    view.holder_paths = _holder_paths(graph, view, group.retained, facts)
    view.heavy_bytes = {node: facts[node].nbytes for node in group.retained}
    group.view = view
    group.diagnosis = diagnose(view, structure=group.structure)


def _storage_bytes(
    heavy: list[int], facts: dict[int, HeavyFacts], storage_users: dict[object, int]
) -> tuple[dict[str, int], int]:
    """Bytes by device, each storage counted once, and how much of it live objects share."""
    by_device: dict[str, int] = defaultdict(int)
    shared = 0
    seen: set[object] = set()
    for fact in (held for node in heavy for held in facts[node].held()):
        if fact.storage in seen:
            continue
        seen.add(fact.storage)
        by_device[fact.device] += fact.nbytes
        if fact.storage_users > storage_users.get(fact.storage, 0):
            shared += fact.nbytes
    return dict(by_device), shared


def _bytes(heavy: list[int], facts: dict[int, HeavyFacts]) -> int:
    return sum(_storage_bytes(heavy, facts, {})[0].values())


def _holder_paths(
    graph: ObjectGraph,
    view: CycleView,
    retained: list[int],
    facts: dict[int, HeavyFacts],
) -> list[tuple[list[int], list[NamedEdge]]]:
    goals = sorted(retained, key=lambda n: -facts[n].nbytes)
    found = graph.shortest_paths(view.members, goals)
    paths: list[tuple[list[int], list[NamedEdge]]] = []
    for goal in goals:
        path = found.get(goal)
        if path is None:
            continue
        owner = view.owner_of.get(path[0])
        if owner is not None:
            path = [owner, *path]
        paths.append(named_path(graph, path))
    # One path per holder first, so the shown paths cover every list that holds something.
    by_exit: dict[str, list[tuple[list[int], list[NamedEdge]]]] = defaultdict(list)
    for named in paths:
        by_exit[named[1][0].name.name if named[1] else ""].append(named)
    ordered: list[tuple[list[int], list[NamedEdge]]] = []
    for rank in range(max((len(v) for v in by_exit.values()), default=0)):
        ordered.extend(v[rank] for v in by_exit.values() if rank < len(v))
    return ordered


def _variables_along(edges: list[NamedEdge]) -> list[str | None]:
    """The user's variable name each path node gets (a cell's contents inherit it)."""
    names: list[str | None] = []
    current: str | None = None
    for edge in edges:
        given = variable_name(edge.name)
        if edge.name.kind == ek.CELL:
            given = current
        names.append(given)
        current = given
    return names


def holder_path_record(table: _NodeTable, nodes: list[int], edges: list[NamedEdge]) -> HolderPath:
    """The report's record of a named path; its nodes carry the user's variable names."""
    for node, variable in zip(nodes[1:], _variables_along(edges), strict=True):
        table.add(node, variable)
    return HolderPath(
        table.add(nodes[-1]),
        tuple(table.add(n) for n in nodes),
        tuple(table.edge(e) for e in edges),
    )


def _holding_words(view: CycleView, facts: dict[int, HeavyFacts]) -> str:
    """ "the same closure's cell `xs` holds a list of 4 tensors, ...": what the cycle holds."""
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    exits: dict[tuple[str, int], str] = {}
    for nodes, edges in view.holder_paths:
        if not edges:
            continue
        heavy = nodes[-1]
        holder = nodes[-2] if len(nodes) > 1 else nodes[0]
        first = edges[0]
        names = _variables_along(edges)
        if first.name.kind == ek.CLOSURE:
            exit_words = f"the same closure's cell `{names[0]}`"
        elif first.name.kind == ek.ATTRIBUTE:
            exit_words = f"its attribute `{first.name.name}`"
        elif first.name.kind == ek.LOCAL:
            local = first.name.name.replace("local ", "local `", 1)
            exit_words = f"the {local}` of {label(view, first.source)}"
        else:
            exit_words = f"`{first.name.name}` of {label(view, first.source)}"
        middle = [e.name.name for e in edges[1:-1] if e.name.kind != ek.CELL]
        through = f" (through `{' -> '.join(middle)}`)" if middle else ""
        key = (exit_words + through, holder if len(edges) > 1 else heavy)
        groups[key].append(heavy)
        exits[key] = exit_words + through
    phrases: list[str] = []
    for key, heavy_nodes in list(groups.items())[:3]:
        holder = key[1]
        first_fact = facts[heavy_nodes[0]]
        nbytes = _bytes(heavy_nodes, facts)
        descriptions = [facts[n].description for n in heavy_nodes]
        words = heavy_group_words(first_fact.kind, descriptions, nbytes)
        holder_obj = view.obj(holder)
        if holder not in facts and type(holder_obj) in (list, tuple, dict, set):
            phrases.append(f"{exits[key]} holds a {type_short_name(type(holder_obj))} of {words}")
        else:
            phrases.append(f"{exits[key]} holds {words}")
    if len(groups) > 3:
        phrases.append(f"and {len(groups) - 3} more holders")
    return "; ".join(phrases)


def _path_start(view: CycleView, edges: list[NamedEdge]) -> tuple[str, list[NamedEdge], bool]:
    """The code-level name a holder path starts from, the steps after it, and if it is code."""
    first = edges[0]
    variable = variable_name(first.name)
    if first.name.kind in (ek.CLOSURE, ek.LOCAL) and variable is not None:
        return variable, edges[1:], True
    if first.name.kind == ek.ATTRIBUTE and is_instance_node(view.obj(first.source)):
        return "self", edges, True
    return label(view, first.source), edges, False


def _holding_place(view: CycleView, edges: list[NamedEdge]) -> tuple[str, str, int | None]:
    """(``"stage_output_tensors"``, ``""``, 3) for ``...[3]``: the index apart so siblings fold.

    The place reads ``head + [index] + tail``: Python from a variable or ``self`` where
    every step has a spelling, else the steps' names ``of`` the member that starts them.
    """
    base, steps, is_code = _path_start(view, edges)
    index: int | None = None
    last = steps[-1] if steps else None
    if last is not None and last.name.kind == ek.INDEX and last.name.name[1:-1].isdigit():
        index = int(last.name.name[1:-1])
        steps = steps[:-1]
    if is_code:
        where = expression(base, steps)
        if where is not None:
            return where, "", index
    names = "".join(e.name.name if e.name.name[:1] in ".[" else f" {e.name.name}" for e in steps)
    return names.strip(), f" of {base}", index


def _holds(view: CycleView, facts: dict[int, HeavyFacts]) -> list[Holding]:
    """Every heavy object by the place that holds it, siblings of one list folded."""
    groups: dict[tuple[str, str, str, bool], tuple[list[int], list[int]]] = {}
    for nodes, edges in view.holder_paths:
        heavy = nodes[-1]
        fact = facts[heavy]
        head, tail, index = _holding_place(view, edges) if edges else ("", "", None)
        key = (head, tail, fact.kind, index is not None)
        indices, heavy_nodes = groups.setdefault(key, ([], []))
        if index is not None:
            indices.append(index)
        heavy_nodes.append(heavy)
    holds = []
    for (head, tail, kind, indexed), (indices, heavy_nodes) in list(groups.items())[:MAX_HOLDINGS]:
        briefs = {heavy_brief(facts[n].description) for n in heavy_nodes}
        where = head + (index_range_words(indices) if indexed else "") + tail
        holds.append(
            Holding(
                where=where.strip().removeprefix("of ") or "the cycle itself",
                count=len(heavy_nodes),
                kind=kind,
                description=briefs.pop() if len(briefs) == 1 else "of several shapes",
                nbytes=_bytes(heavy_nodes, facts),
            )
        )
    return holds


def _source_of(
    sources: SourceLines, view: CycleView, edge: NamedEdge
) -> tuple[str | None, str | None]:
    """The line that made the cut's reference; a source that raises is said, not raised."""
    try:
        return sources.line_for(view, edge)
    except Exception:  # user source or hostile objects; the rest of the report stands
        return None, "the source that made this reference could not be read"


def _cycle_report(
    table: _NodeTable,
    group: _Group,
    facts: dict[int, HeavyFacts],
    storage_users: dict[object, int],
    options: AnalysisOptions,
    sources: SourceLines,
) -> CycleReport:
    view, diagnosis = group.view, group.diagnosis
    assert view is not None
    assert diagnosis is not None
    match = diagnosis.match
    for node in view.shown:
        table.add(
            node, cell_variable(view, node) if type(view.obj(node)) is types.CellType else None
        )
    cycle_edges = [table.edge(e) for e in view.edges]
    holder_paths = [
        holder_path_record(table, nodes, edges)
        for nodes, edges in view.holder_paths[: options.max_paths]
    ]
    heavy_ids = tuple(table.add(n) for n in group.retained)
    holding = _holding_words(view, facts)
    summary = f"{match.summary}; {holding}." if holding else f"{match.summary}."
    cut = None
    if diagnosis.cut:
        source_line, source_note = _source_of(sources, view, diagnosis.cut[0])
        cut = Cut(
            tuple(table.edge(e) for e in diagnosis.cut),
            match.cut_words or _cut_words(view, diagnosis.cut),
            all(e.name.kind in ek.USER_KINDS for e in diagnosis.cut),
            source_line,
            source_note,
        )
    by_device, shared = _storage_bytes(group.retained, facts, storage_users)
    held = sum(by_device.values())
    structure = group.structure
    if structure is not None:
        loop = [table.edge(e) for e in structure.loop]
        hidden, hidden_after = structure.loop_hidden, structure.loop_hidden_after
        member_count, member_types = structure.member_count, structure.member_types
    else:
        loop = [
            table.edge(e) for e in closed_loop(view, diagnosis.cut[0] if diagnosis.cut else None)
        ]
        hidden = hidden_after = 0
        member_count = len(view.shown)
        member_types = dict(Counter(type_words(view.obj(n)) for n in view.shown).most_common())
    return CycleReport(
        signature=diagnosis.signature,
        pattern=match.pattern,
        title=match.title,
        summary=summary,
        explanation=match.explanation,
        fix=match.fix,
        members=tuple(table.ids[n] for n in view.shown),
        edges=tuple(cycle_edges),
        heavy=heavy_ids,
        holder_paths=tuple(holder_paths),
        cut=cut,
        bytes_held=held,
        bytes_by_device=by_device,
        bytes_shared=shared,
        occurrences=group.occurrences,
        total_bytes=group.total_bytes,
        heavy_count=group.heavy_count,
        lint_rule=match.lint_rule,
        loop=tuple(loop),
        loop_hidden=hidden,
        loop_hidden_after=hidden_after,
        member_count=member_count,
        member_types=member_types,
        structure=match.summary if structure is not None else None,
        holds=tuple(_holds(view, facts)),
        made_inside=made_inside(_code_members(view, structure), options.user_root or os.getcwd()),
    )


def _code_members(view: CycleView, structure: Structure | None) -> list[object]:
    """The members with code (functions, frames, generators); a structure without any skips
    the pass over its members."""
    if structure is not None and not structure.member_classes.intersection(CODE_TYPES):
        return []
    nodes = view.graph.nodes
    return [nodes[n] for n in view.members if type(nodes[n]) in CODE_TYPES]


def _cut_words(view: CycleView, cut: list[NamedEdge]) -> str:
    phrases = []
    for edge in cut:
        kind = edge.name.kind
        source = view.obj(edge.source)
        if kind == ek.CELL:
            variable = cell_variable(view, edge.source) or "?"
            functions = [
                e.source for e in view.edges_into(edge.source) if e.name.kind == ek.CLOSURE
            ]
            # The variable belongs to the function that defines the closure's function.
            inner = view.obj(functions[0]) if functions else view.obj(edge.target)
            owner = short_name(enclosing_function(qualname_of(inner)))
            phrases.append(f"the closure variable `{variable}` in `{owner}`")
        elif kind == ek.ATTRIBUTE:
            phrases.append(
                f"the attribute `{edge.name.name}` of {a_code(type_qualname(type(source)))} object"
            )
        elif kind == ek.LOCAL:
            phrases.append(
                "the "
                + edge.name.name.replace("local ", "local variable `", 1)
                + f"` of {label(view, edge.source)}"
            )
        elif kind == ek.KEY:
            phrases.append(
                f"the entry `{edge.name.name}` of {a_code(type_short_name(type(source)))}"
            )
        elif kind == ek.INDEX:
            phrases.append(
                f"the item `{edge.name.name}` of {a_code(type_short_name(type(source)))}"
            )
        elif kind == ek.UNKNOWN:
            phrases.append(f"an unnamed reference from {label(view, edge.source)}")
        else:
            phrases.append(f"`{edge.name.name}` of {label(view, edge.source)}")
    # A tree's cut is every child's `.parent`: say it once, with the count.
    counts = dict.fromkeys(phrases, 0)
    for phrase in phrases:
        counts[phrase] += 1
    said = [p if n == 1 else f"{p} (each of {n})" for p, n in counts.items()]
    if len(said) > MAX_CUT_PHRASES:
        rest = len(phrases) - sum(list(counts.values())[:MAX_CUT_PHRASES])
        said = [
            *said[:MAX_CUT_PHRASES],
            f"{rest} more {'reference' if rest == 1 else 'references'}",
        ]
    return " and ".join(said)


def _heavy_table(
    table: _NodeTable,
    kept: list[_Group],
    facts: dict[int, HeavyFacts],
    storage_users: dict[object, int],
    options: AnalysisOptions,
) -> list[HeavyObject]:
    """The heavy objects of the shown occurrences; ``counted`` marks a storage's first."""
    storages: dict[object, int] = {}
    result: list[HeavyObject] = []
    seen_nodes: set[int] = set()
    for group in kept:
        for node in group.retained:
            if node in seen_nodes:
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
                    description=fact.description,
                    nbytes=fact.nbytes,
                    device=fact.device,
                    storage_id=storages[fact.storage],
                    counted=counted,
                    shared_with_live=fact.storage_users > storage_users[fact.storage],
                    allocation_site=_allocation_site(table.graph.nodes[node], options),
                )
            )
    return result


@functools.lru_cache(maxsize=1)
def _platform() -> tuple[str, str]:
    import platform

    # Not platform.platform(): on Linux it runs `uname -p` in a subprocess and scans the
    # interpreter binary for its libc, about 10 ms that the first check of a process paid
    # (a third of a plain collection of 20,000 objects).
    system, _, release, _, machine = (
        os.uname() if hasattr(os, "uname") else (platform.system(), "", platform.release(), "", "")
    )
    name = "-".join(part for part in (system, release, machine) if part)
    return platform.python_version(), name


def _allocation_site(obj: object, options: AnalysisOptions) -> str | None:
    return options.site_of(obj) if options.site_of is not None else None


def run_info(where: str | None = None) -> RunInfo:
    """Metadata of this process: versions, rank, time, where the check ran."""
    import datetime

    from whyalive import __version__
    from whyalive.distributed import rank_and_world

    python, platform_name = _platform()
    torch = sys.modules.get("torch")
    numpy = sys.modules.get("numpy")
    rank, world = rank_and_world()
    return RunInfo(
        whyalive=__version__,
        python=python,
        platform=platform_name,
        torch=str(getattr(torch, "__version__", "")) or None,
        numpy=str(getattr(numpy, "__version__", "")) or None,
        pid=os.getpid(),
        rank=rank,
        world_size=world,
        time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        where=where,
    )
