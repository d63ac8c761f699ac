"""One cycle's record: loop, cut, holder paths, holdings and summary, named off the objects."""

from __future__ import annotations

import os
import types
from collections import Counter

from whyalive.analysis import AnalysisOptions, CycleGroup
from whyalive.analysis.diagnose import Diagnosis
from whyalive.analysis.edges import variable_name
from whyalive.analysis.naming import (
    cell_variable,
    code_qualname_of,
    enclosing_function,
    expression,
    is_instance_node,
    label,
    short_name,
)
from whyalive.analysis.origin import CODE_TYPES, made_inside
from whyalive.analysis.paths import CycleView, NamedEdge, closed_loop
from whyalive.analysis.sourcelines import SourceLines
from whyalive.analysis.structure import Structure, type_words
from whyalive.guarded import is_one_of, type_qualname, type_short_name
from whyalive.kinds import HeavyFacts, alike_runs, objects_in
from whyalive.report import Cut, CycleReport, Holding
from whyalive.report.builder.advice import Advice, advise
from whyalive.report.builder.nodes import NodeTable, holder_path_record
from whyalive.report.builder.storages import Memo, autograd_held, bytes_of, storage_bytes
from whyalive.words import (
    MAX_HOLDER_PHRASES,
    Reference,
    cut_words,
    cycle_summary,
    exit_words,
    heavy_brief,
    holding_description,
    holding_phrase,
    holding_place,
    holdings_words,
    holds_words,
    index_range_words,
    says_holder,
    steps_words,
    through_words,
)
from whyalive.words import edge_kinds as ek

_Place = tuple[list[int], list[int], list[int], list[int]]
# Places listed under a cycle's holds; the rest are counted in the heavy objects.
MAX_HOLDINGS = 24
# Of the many heavy objects one container holds side by side (see
# whyalive.analysis.paths.NAMED_SIBLINGS), the first few are listed by node id (and described
# in the report's table), all when allocation sites are recorded; the holding's count and
# bytes are of all of them.
LISTED_SIBLINGS = 16


def _reference(
    view: CycleView, edge: NamedEdge, labels: dict[int, str], *, as_exit: bool = False
) -> Reference:
    """The facts a sentence says of one reference, read off the live objects."""
    kind, source = edge.name.kind, edge.source
    holder = ""
    if says_holder(kind, as_exit=as_exit):
        holder = labels.get(source) or labels.setdefault(source, label(view, source))
    cls = type(view.obj(source))
    holder_type = type_qualname(cls) if kind == ek.ATTRIBUTE else type_short_name(cls)
    variable = function = None
    if kind == ek.CLOSURE:
        variable = variable_name(edge.name)
    elif kind == ek.CELL and not as_exit:
        variable = cell_variable(view, source)
        functions = [e.source for e in view.edges_into(source) if e.name.kind == ek.CLOSURE]
        # The variable belongs to the function that defines the closure's function.
        inner = view.obj(functions[0]) if functions else view.obj(edge.target)
        function = short_name(enclosing_function(code_qualname_of(inner)))
    return Reference(kind, edge.name.name, holder, holder_type, variable, function)


def _briefs(heavy_nodes: list[int], facts: dict[int, HeavyFacts]) -> set[str]:
    """The distinct briefs of heavy objects: each distinct description worded once (a list
    of 10^5 equal arrays reads one; a run's node says those of its arrays)."""
    described = {facts[n].description for n in heavy_nodes}
    for run in alike_runs(heavy_nodes, facts):
        described |= run.descriptions
    return {heavy_brief(d) for d in described}


def _holding_words(view: CycleView, facts: dict[int, HeavyFacts], memo: Memo) -> str:
    """ "the same closure's cell `xs` holds a list of 4 tensors, ...": what the cycle holds."""
    # One phrase per place that reads the same (`its attribute `.data``), however many
    # members hold one there: a ring of 50 is one phrase, not 50.
    groups: dict[tuple[str, str, str | None], tuple[set[int], list[int]]] = {}
    labels: dict[int, str] = {}
    for nodes, edges in view.holder_paths:
        if not edges:
            continue
        heavy = nodes[-1]
        holder = nodes[-2] if len(edges) > 1 else heavy
        place = exit_words(_reference(view, edges[0], labels, as_exit=True))
        middle = [e.name.name for e in edges[1:-1] if e.name.kind != ek.CELL]
        holder_cls = type(view.obj(holder))
        container = None
        if holder not in facts and is_one_of(holder_cls, (list, tuple, dict, set)):
            container = type_short_name(holder_cls)
        key = (place + through_words(middle), facts[heavy].kind, container)
        starts, heavy_nodes = groups.setdefault(key, (set(), []))
        starts.add(nodes[0])
        heavy_nodes.extend(view.held_with(heavy))
    phrases: list[str] = []
    for (place, kind, container), (starts, heavy_nodes) in list(groups.items())[
        :MAX_HOLDER_PHRASES
    ]:
        briefs = _briefs(heavy_nodes, facts)
        count = objects_in(heavy_nodes, facts)
        held = holding_phrase(kind, count, briefs, bytes_of(heavy_nodes, facts, memo))
        phrases.append(holds_words(place, held, container, len(starts)))
    return holdings_words(phrases, more=len(groups) - len(phrases))


def _path_start(view: CycleView, edges: list[NamedEdge]) -> tuple[str, list[NamedEdge], bool]:
    """The code-level name a holder path starts from, the steps after it, and if it is code."""
    first = edges[0]
    variable = _variable_of(first)
    if variable is not None:
        return variable, edges[1:], True
    if first.name.kind == ek.ATTRIBUTE and is_instance_node(view.obj(first.source)):
        return "self", edges, True
    # A member dict that an object of the cycle keeps as an attribute (a module's
    # `_modules`): read from that object, `self._modules['2']...`, not "of `dict of 3`".
    owner = next(
        (
            e
            for e in view.edges_into(first.source)
            if e.name.kind == ek.ATTRIBUTE and is_instance_node(view.obj(e.source))
        ),
        None,
    )
    if owner is not None and type(view.obj(first.source)) is dict:
        return "self", [owner, *edges], True
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
    else:  # code further on (a traceback's frame out of the cycle): from its last variable
        for at in range(len(steps) - 1, -1, -1):
            variable = _variable_of(steps[at])
            if variable is not None:
                where = expression(variable, steps[at + 1 :])
                if where is not None:
                    return where, f" in {label(view, steps[at].source)}", index
                break
    return steps_words([e.name.name for e in steps]), f" of {base}", index


def _variable_of(edge: NamedEdge) -> str | None:
    """The local or closure variable an edge is, if it is one."""
    return variable_name(edge.name) if edge.name.kind in (ek.CLOSURE, ek.LOCAL) else None


def _holds(
    view: CycleView,
    facts: dict[int, HeavyFacts],
    table: NodeTable,
    memo: Memo,
    listed_siblings: int | None,
) -> tuple[list[Holding], list[int]]:
    """Every heavy object by the place that holds it, siblings of one list folded; and the
    report ids of those listed (the first few of a container's siblings, shown or not)."""
    # Per place: the indices of its objects (the runs' as bits), its heavy nodes and those
    # listed.
    groups: dict[tuple[str, str, str, bool], _Place] = {}
    for nodes, edges in view.holder_paths:
        heavy = nodes[-1]
        fact = facts[heavy]
        head, tail, index = _holding_place(view, edges) if edges else ("", "", None)
        key = (head, tail, fact.kind, index is not None)
        indices, runs, heavy_nodes, shown = groups.setdefault(key, ([], [], [], []))
        held = view.held_with(heavy)
        if index is not None:
            indices.extend(view.sibling_indices.get(heavy, [index]))
            runs.extend(run.positions for run in alike_runs(held, facts))
        heavy_nodes.extend(held)
        shown.extend(held[:listed_siblings])
    holds = []
    listed: list[int] = []
    for number, (key, (indices, runs, heavy_nodes, shown)) in enumerate(groups.items()):
        ids = tuple(table.add(n) for n in shown)
        listed.extend(ids)
        if number >= MAX_HOLDINGS:
            continue
        head, tail, kind, indexed = key
        briefs = _briefs(heavy_nodes, facts)
        autograd_bytes, autograd_count = autograd_held(heavy_nodes, facts)
        holds.append(
            Holding(
                where=holding_place(
                    head, index_range_words(indices, runs) if indexed else "", tail
                ),
                count=objects_in(heavy_nodes, facts),
                kind=kind,
                description=holding_description(briefs, autograd_count),
                nbytes=bytes_of(heavy_nodes, facts, memo),
                heavy=ids,
                autograd_bytes=autograd_bytes,
                autograd_count=autograd_count,
            )
        )
    return holds, listed


def _paths_to_show(
    view: CycleView, holds: list[Holding], table: NodeTable, limit: int
) -> list[tuple[list[int], list[NamedEdge]]]:
    """The first ``limit`` holder paths, and one to the first object of every holding, so a
    picture can draw each place that holds heavy objects (:attr:`Holding.heavy`)."""
    chosen = list(view.holder_paths[:limit])
    ending = {nodes[-1] for nodes, _ in chosen}
    wanted = {h.heavy[0] for h in holds if h.heavy} - {table.ids[n] for n in ending}
    if wanted:
        for nodes, edges in view.holder_paths[limit:]:
            if table.ids.get(nodes[-1]) in wanted:
                chosen.append((nodes, edges))
                wanted.discard(table.ids[nodes[-1]])
                if not wanted:
                    break
    return chosen


def cycle_report(
    table: NodeTable,
    group: CycleGroup,
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
    memo: Memo = {}
    # Recorded allocation sites are said per object: every one is listed then.
    listed_siblings = LISTED_SIBLINGS if options.site_of is None else None
    holds, listed = _holds(view, facts, table, memo, listed_siblings)
    holder_paths = [
        holder_path_record(table, nodes, edges)
        for nodes, edges in _paths_to_show(view, holds, table, options.max_paths)
    ]
    # Each heavy object once, in the order the analysis kept them; a container's siblings
    # past its first few are counted, not listed.
    shown = set(listed).union(p.heavy_node for p in holder_paths)
    heavy_ids = tuple(i for i in map(table.ids.get, group.retained) if i is not None and i in shown)
    holding = _holding_words(view, facts, memo)
    summary = cycle_summary(match.summary, holding)
    cut = None
    advice = Advice(fix=match.fix)
    edges = diagnosis.cut
    if diagnosis.cut:
        sites = _sites(group, options)
        user_root = options.user_root or os.getcwd()
        advice = advise(view, diagnosis, group.structure, sources, sites, user_root)
        proof = advice.proof or diagnosis.proof
        edges = list(advice.cut) if advice.cut else diagnosis.cut
        cut = Cut(
            tuple(table.edge(e) for e in edges),
            advice.cut_words
            or (
                _cut_words(view, edges)
                if advice.cut
                else _cut_description(view, diagnosis, group.structure is not None)
            ),
            all(e.name.kind in ek.USER_KINDS for e in edges),
            advice.source_lines[0] if advice.source_lines else None,
            advice.source_note,
            advice.source_lines,
            advice.source_rule,
            proof.proven,
            tuple(table.add(n) for n in proof.stays),
            proof.checked and not proof.frees_cycle and proof.proven,
        )
    by_device, shared = storage_bytes(group.retained, facts, storage_users, memo)
    held = sum(by_device.values())
    structure = group.structure
    if structure is not None:
        loop = [table.edge(e) for e in structure.loop]
        hidden, hidden_after = structure.loop_hidden, structure.loop_hidden_after
        member_count, member_types = structure.member_count, structure.member_types
    else:
        loop = [table.edge(e) for e in closed_loop(view, edges[0] if edges else None)]
        hidden = hidden_after = 0
        member_count = len(view.shown)
        member_types = dict(Counter(type_words(view.obj(n)) for n in view.shown).most_common())
    return CycleReport(
        signature=diagnosis.signature,
        pattern=match.pattern,
        title=match.title,
        summary=summary,
        explanation=advice.explanation or match.explanation,
        fix=advice.fix,
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
        holds=tuple(holds),
        made_inside=made_inside(_code_members(view, structure), options.user_root or os.getcwd()),
        fix_edit=advice.fix_edit,
        heavy_unlisted=objects_in(group.retained, facts) - len(heavy_ids),
    )


def _sites(group: CycleGroup, options: AnalysisOptions) -> list[str]:
    """Where the cycle's heavy objects were allocated, when that was recorded."""
    if options.site_of is None:
        return []
    nodes = group.view.graph.nodes if group.view is not None else []
    sites = []
    for node in group.retained[:16]:
        try:
            site = options.site_of(nodes[node])
        except Exception:  # a site that cannot be read is left out
            site = None
        if site:
            sites.append(site)
    return list(dict.fromkeys(sites))


# By the types' ids: `in` and set operations on classes run a metaclass's __eq__/__hash__.
_CODE_TYPE_IDS = frozenset(map(id, CODE_TYPES))


def _code_members(view: CycleView, structure: Structure | None) -> list[object]:
    """The members with code (functions, frames, generators); a structure without any skips
    the pass over its members."""
    if structure is not None and _CODE_TYPE_IDS.isdisjoint(map(id, structure.member_classes)):
        return []
    nodes = view.graph.nodes
    return [nodes[n] for n in view.members if id(type(nodes[n])) in _CODE_TYPE_IDS]


def _cut_description(view: CycleView, diagnosis: Diagnosis, is_structure: bool) -> str:
    """The pattern's words for its cut, when the proven cut is the pattern's; else the
    cut's references, named."""
    match = diagnosis.match
    same = is_structure or not match.cut or set(match.cut) == set(diagnosis.cut)
    return match.cut_words if match.cut_words and same else _cut_words(view, diagnosis.cut)


def _cut_words(view: CycleView, cut: list[NamedEdge]) -> str:
    labels: dict[int, str] = {}
    return cut_words([_reference(view, edge, labels) for edge in cut])
