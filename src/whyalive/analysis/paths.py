"""Named views of cycles and holder paths, and the choice of the cut.

Holder path and cut as docs/architecture.md, "Words", defines them.
"""

from __future__ import annotations

import types
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive.analysis.edge_namer import EdgeNamer, name_edges, sequence_indices
from whyalive.analysis.edges import EdgeName, is_owned_part, names_of
from whyalive.analysis.origin import is_installed_code
from whyalive.graph import ObjectGraph
from whyalive.kinds import HeavyFacts
from whyalive.words import edge_kinds as ek

# How much a reference looks like something the user wrote and can remove.
CUT_SCORE = {
    ek.CELL: 100,
    ek.ATTRIBUTE: 90,
    ek.LOCAL: 85,
    ek.KEY: 80,
    ek.BOUND_SELF: 70,
    ek.INDEX: 60,
    ek.DEFAULTS: 40,
    ek.CLOSURE: 30,
    ek.TRACEBACK: 20,
    ek.FRAME: 10,
    ek.CLASS: 5,
}
# Above this many references a cycle is read as a structure (whyalive.analysis.structure).
MAX_VERIFIED_EDGES = 400
# Shown first when a cycle is listed: what the user wrote (functions, methods, objects).
# Keyed by the type's id: hashing a user's class would run its metaclass's __hash__.
_SHOW_FIRST = {
    id(cls): rank
    for cls, rank in (
        (types.FunctionType, 0),
        (types.MethodType, 0),
        (types.CellType, 2),
        (tuple, 3),
        (dict, 3),
    )
}


@dataclass(frozen=True)
class NamedEdge:
    """A reference between two graph nodes, with its name."""

    source: int
    target: int
    name: EdgeName

    @property
    def score(self) -> int:
        """How good a cut this reference makes (user-written references score high)."""
        return CUT_SCORE.get(self.name.kind, 0)


@dataclass
class CycleView:
    """A cycle's members as the user sees them: owned parts folded into their owners.

    ``edges`` is fixed at construction; the per-node indexes below are built
    from it once, so patterns look up a node's references in O(1), never by
    scanning the edge list.
    """

    graph: ObjectGraph
    members: Sequence[int]
    shown: list[int] = field(default_factory=list)
    edges: list[NamedEdge] = field(default_factory=list)
    holder_paths: list[tuple[list[int], list[NamedEdge]]] = field(default_factory=list)
    owner_of: dict[int, int] = field(default_factory=dict)
    heavy_bytes: dict[int, int] = field(default_factory=dict)
    siblings: dict[int, list[int]] = field(default_factory=dict)
    """Heavy objects that one container holds side by side, beyond a few: the first one's
    holder path stands for all (``holder_paths`` has that one), keyed by the first."""
    sibling_indices: dict[int, list[int]] = field(default_factory=dict)
    """For siblings held by a list or tuple: their indices in it, keyed by the first."""
    _out: dict[int, list[NamedEdge]] = field(default_factory=dict, repr=False)
    _in: dict[int, list[NamedEdge]] = field(default_factory=dict, repr=False)
    edge_set: frozenset[NamedEdge] = field(default_factory=frozenset, repr=False)
    _cell_names: dict[int, str] | None = field(default=None, repr=False)
    raw_out: dict[int, list[int]] | None = field(default=None, repr=False)
    """The captured references between members (owned parts included), built once for the
    proofs of the cut candidates (``whyalive.analysis.cuts``)."""

    def __post_init__(self) -> None:
        out: dict[int, list[NamedEdge]] = defaultdict(list)
        into: dict[int, list[NamedEdge]] = defaultdict(list)
        for edge in self.edges:
            out[edge.source].append(edge)
            into[edge.target].append(edge)
        self._out, self._in = dict(out), dict(into)
        self.edge_set = frozenset(self.edges)

    def obj(self, node: int) -> object:
        """The live object behind a node id (only during analysis)."""
        return self.graph.nodes[node]

    def held_with(self, heavy: int) -> list[int]:
        """The heavy objects a holder path to ``heavy`` stands for: it and its siblings."""
        return self.siblings.get(heavy) or [heavy]

    def edges_from(self, node: int) -> list[NamedEdge]:
        """Shown edges leaving ``node``."""
        return self._out.get(node, [])

    def edges_into(self, node: int) -> list[NamedEdge]:
        """Shown edges arriving at ``node``."""
        return self._in.get(node, [])

    def closure_variable(self, cell: object) -> str | None:
        """The closure variable a member function knows ``cell`` by (one scan per view)."""
        if self._cell_names is None:
            self._cell_names = {}
            for node in self.members:
                fn = self.obj(node)
                if type(fn) is types.FunctionType and fn.__closure__:
                    for held, name in zip(fn.__closure__, fn.__code__.co_freevars, strict=False):
                        self._cell_names.setdefault(id(held), str(name))
        return self._cell_names.get(id(cell))


def view_cycle(graph: ObjectGraph, members: Sequence[int]) -> CycleView:
    """Name the references inside a cycle, hiding closure tuples and instance dicts."""
    member_set = set(members)
    owner_of: dict[int, int] = {}
    for node in members:
        for succ in graph.successors(node):
            if (
                succ in member_set
                and succ not in owner_of
                and succ != node
                and is_owned_part(graph.nodes[node], graph.nodes[succ])
            ):
                owner_of[succ] = node
    shown = sorted(
        (node for node in members if node not in owner_of),
        key=lambda node: _SHOW_FIRST.get(id(type(graph.nodes[node])), 1),
    )
    found: dict[tuple[int, int], list[NamedEdge]] = {}
    for node in shown:
        ends: list[int] = []
        counts: dict[int, int] = defaultdict(int)
        for succ in graph.successors(node):
            if succ not in member_set:
                continue
            owned = owner_of.get(succ) == node
            for end in graph.successors(succ) if owned else (succ,):
                if end in member_set and end not in owner_of:
                    counts[end] += 1
                    if (node, end) not in found:
                        found[node, end] = []
                        ends.append(end)
        # One pass over the source names all its references (a list of 10^5 items too).
        source = graph.nodes[node]
        names = name_edges(source, [graph.nodes[end] for end in ends])
        for end, name in zip(ends, names, strict=True):
            cpp = _held_in_cpp(graph, node, end)
            if cpp is not None:
                found[node, end] = [NamedEdge(node, end, cpp)]
                continue
            # A holder with two references to one object (`.parent` and `._root` both the
            # root) has two names: a cut must remove both.
            every = names_of(source, graph.nodes[end]) if counts[end] > 1 else [name]
            found[node, end] = [NamedEdge(node, end, n) for n in dict.fromkeys(every)]
    return CycleView(graph, members, shown, _walk_order(shown, found), owner_of=owner_of)


def _walk_order(shown: list[int], found: dict[tuple[int, int], list[NamedEdge]]) -> list[NamedEdge]:
    """Edges in the order a walk from the first shown node meets them (a ring reads as one)."""
    out: dict[int, list[NamedEdge]] = defaultdict(list)
    for edges in found.values():
        for edge in edges:
            out[edge.source].append(edge)
    ordered: list[NamedEdge] = []
    seen_nodes: set[int] = set()
    for start in shown:
        stack = [start]
        while stack:
            node = stack.pop()
            if node in seen_nodes:
                continue
            seen_nodes.add(node)
            ordered.extend(out[node])
            stack.extend(edge.target for edge in reversed(out[node]))
    return ordered


def named_path(
    graph: ObjectGraph, path: list[int], namer: EdgeNamer | None = None
) -> tuple[list[int], list[NamedEdge]]:
    """Name a node path, folding owned parts (closure tuples, instance dicts) away.

    Pass one ``namer`` for the many paths of one analysis: a container they all pass
    through is then read once, not once per path.
    """
    namer = namer or EdgeNamer()
    nodes = [path[0]]
    named: list[NamedEdge] = []
    index = 1
    while index < len(path):
        prev = nodes[-1]
        node = path[index]
        if index + 1 < len(path) and is_owned_part(graph.nodes[prev], graph.nodes[node]):
            node = path[index + 1]
            index += 1
        name = _held_in_cpp(graph, prev, node) or namer.name(graph.nodes[prev], graph.nodes[node])
        named.append(NamedEdge(prev, node, name))
        nodes.append(node)
        index += 1
    return nodes, named


def _held_in_cpp(graph: ObjectGraph, source: int, target: int) -> EdgeName | None:
    """The name of a reference the autograd graph holds in C++, if this is one."""
    name = graph.cpp_edges.get((source, target)) if graph.cpp_edges else None
    return EdgeName(ek.AUTOGRAD, name) if name is not None else None


def closed_loop(view: CycleView, through: NamedEdge | None = None) -> list[NamedEdge]:
    """One shortest closed path through ``through`` (default: the first shown edge).

    Every hop is a shown reference from the previous object; no object repeats;
    the last hop ends where the first starts; it starts at the member listed first
    (functions and methods before the objects they hold). One BFS over the view. A
    loop through the autograd graph shows a hop that C++ holds (through ``through``
    when one does): that hop is why the collector never frees it.
    """
    if through is None:
        if not view.edges:
            return []
        through = view.edges[0]
    loop = _loop_through(view, through)
    if view.graph.cpp_edges and not any(e.name.kind == ek.AUTOGRAD for e in loop):
        # The loop that matters is the one the collector cannot see: through C++.
        loops = [_loop_through(view, e) for e in view.edges if e.name.kind == ek.AUTOGRAD]
        loops = [found for found in loops if found]
        loops.sort(key=lambda found: (through not in found, len(found)))
        if loops:
            loop = loops[0]
    return loop


def _loop_through(view: CycleView, through: NamedEdge) -> list[NamedEdge]:
    if through.target == through.source:
        return [through]
    parent: dict[int, NamedEdge | None] = {through.target: None}
    queue = deque([through.target])
    while queue and through.source not in parent:
        node = queue.popleft()
        for edge in view.edges_from(node):
            if edge.target not in parent:
                parent[edge.target] = edge
                queue.append(edge.target)
    if through.source not in parent:
        return []
    back: list[NamedEdge] = []
    node = through.source
    while (step := parent[node]) is not None:
        back.append(step)
        node = step.source
    loop = [through, *reversed(back)]
    # Read from the object the user wrote first (a function, a method), as cycles list them;
    # the user's code before an installed package's (Grad-CAM's hook before torch's).
    order = {node: index for index, node in enumerate(view.shown)}
    start = min(
        range(len(loop)),
        key=lambda i: (
            is_installed_code(view.obj(loop[i].source)),
            order.get(loop[i].source, len(order)),
        ),
    )
    return loop[start:] + loop[:start]


# Heavy objects one container holds side by side: up to this many get a holder path each;
# more are siblings of the first, whose path stands for them all (a list of 10^5 arrays is
# one named path, one holding and a range of indices, whatever its length).
NAMED_SIBLINGS = 16


def instance_of_dict(graph: ObjectGraph, attrs: int, known: dict[int, int]) -> int | None:
    """The instance whose attribute dict ``attrs`` is: every instance keeps one apart on
    3.10, and on 3.11+ one whose attributes were not set in its class's usual order.

    ``known`` answers first (a structure's samples met a few dicts' owners), so that a
    structure with a single such instance builds no reverse index of its graph.
    """
    if attrs in known:
        return known[attrs]
    nodes = graph.nodes
    holders = graph.holders_of(attrs)
    return next((node for node in holders if is_owned_part(nodes[node], nodes[attrs])), None)


def holder_paths(
    graph: ObjectGraph,
    view: CycleView,
    retained: list[int],
    facts: dict[int, HeavyFacts],
    instances: dict[int, int] | None = None,
) -> list[tuple[list[int], list[NamedEdge]]]:
    """The named holder paths from ``view``'s cycle to each heavy object it retains, one
    per holder first; a container's many siblings share their first one's path
    (``view.siblings``, ``view.sibling_indices``).

    ``instances``: some of a structure's instances keep their attributes in dicts of
    their own (some known ones given), and its view names no owners: a path that starts
    at such a dict starts at its instance, so that it reads ``.data`` of each `Node`.
    """
    goals = sorted(retained, key=lambda n: -facts[n].nbytes)
    found = graph.shortest_paths(view.members, goals)
    # Goals by the path to their holder: the siblings of one container share it.
    by_holder: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for goal in goals:
        path = found.get(goal)
        if path is not None:
            by_holder[tuple(path[:-1])].append(goal)
    nodes = graph.nodes
    standing_in: set[int] = set()  # siblings whose first one's path stands for them
    for holder, heavy in by_holder.items():
        if len(heavy) > NAMED_SIBLINGS:
            view.siblings[heavy[0]] = heavy
            standing_in.update(heavy[1:])
            indices = sequence_indices(nodes[holder[-1]], [nodes[n] for n in heavy])
            if indices is not None:
                view.sibling_indices[heavy[0]] = indices
    namer = EdgeNamer()  # many paths out of one list: the list is read once
    paths: list[tuple[list[int], list[NamedEdge]]] = []
    for goal in goals:
        path = found.get(goal)
        if path is None or goal in standing_in:
            continue
        owner = view.owner_of.get(path[0])
        if owner is None and instances and type(nodes[path[0]]) is dict:
            owner = instance_of_dict(graph, path[0], instances)
        if owner is not None:
            path = [owner, *path]
        paths.append(named_path(graph, path, namer))
    # One path per holder first, so the shown paths cover every list that holds something.
    by_exit: dict[str, list[tuple[list[int], list[NamedEdge]]]] = defaultdict(list)
    for named in paths:
        by_exit[named[1][0].name.name if named[1] else ""].append(named)
    ordered: list[tuple[list[int], list[NamedEdge]]] = []
    for rank in range(max((len(v) for v in by_exit.values()), default=0)):
        ordered.extend(v[rank] for v in by_exit.values() if rank < len(v))
    return ordered
