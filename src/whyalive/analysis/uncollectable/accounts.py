"""What holds each of a block's objects from outside it, and which of those references
autograd accounts for (:mod:`whyalive.analysis.uncollectable` reads the result)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive.graph import core as graphcore
from whyalive.graph.garbage import UNTRACKED_CONTAINERS
from whyalive.kinds import KindResolver
from whyalive.kinds.autograd_graph import (
    NODE_HOOKS,
    NODE_PREHOOKS,
    PREHOOKS,
    TENSOR_HOOKS,
    AutogradReader,
)


@dataclass
class Accounts:
    """The block's objects as a graph, with what holds each from outside it."""

    nodes: list[object]
    offsets: Sequence[int]
    targets: Sequence[int]
    outside: list[int]
    """References to each node from outside the graph."""
    index: dict[int, int]
    """id(object) -> node, for every node (and every vertex the walk adds)."""
    extra: list[object] = field(default_factory=list)
    """Vertices the walk added: autograd nodes (and tensors) older than the block."""
    cpp: list[tuple[int, int, str]] = field(default_factory=list)
    """(source, target, name) for each reference autograd holds in C++."""
    explained: Counter[int] = field(default_factory=Counter)
    """Outside references of a node that autograd accounts for."""
    impl_holders: Counter[int] = field(default_factory=Counter)
    """Owners found for a tensor's C++ implementation besides its Python object."""
    rooted_cpp: set[int] = field(default_factory=set)
    """Added vertices held from outside the block (nodes made before it)."""

    @property
    def young(self) -> int:
        return len(self.nodes)

    def vertex(self, obj: object) -> int:
        found = self.index.get(id(obj))
        if found is None:
            found = len(self.nodes) + len(self.extra)
            self.extra.append(obj)
            self.index[id(obj)] = found
        return found

    def obj(self, vertex: int) -> object:
        if vertex < len(self.nodes):
            return self.nodes[vertex]
        return self.extra[vertex - len(self.nodes)]

    def release(self) -> None:
        self.nodes = []
        self.extra = []
        self.index = {}


def build_accounts(objects: list[object], own: dict[int, int]) -> Accounts:
    resolver = KindResolver()
    follow = resolver.covered_types + UNTRACKED_CONTAINERS
    nodes, offsets, targets, _ = graphcore.build_graph(objects, follow, (), False)
    objects.clear()
    # Measured, not assumed: a reference count read through map() of an object only
    # one list holds (interpreters differ in the temporaries they keep).
    alone = next(map(sys.getrefcount, [object()]))
    inside = Counter(targets)
    outside = [
        count - alone - inside[node] - own.get(id(nodes[node]), 0)
        for node, count in enumerate(map(sys.getrefcount, nodes))
    ]
    index = {id(obj): node for node, obj in enumerate(nodes)}
    return Accounts(nodes, offsets, targets, outside, index)


def add_autograd_holds(
    accounts: Accounts, reader: AutogradReader, left: list[int], mark: int | None
) -> None:
    """Add the references autograd holds for the tensors (and nodes) in ``left``.

    ``mark`` None: every node is taken for the block's (no baseline, or ``explain``).
    """
    nodes = accounts.nodes
    roots: list[object] = []
    reached_nodes: set[int] = set()

    def hop(source: int, target: object, name: str) -> int:
        vertex = accounts.vertex(target)
        accounts.cpp.append((source, vertex, name))
        return vertex

    for node in left:
        obj = nodes[node]
        if reader.is_node(obj):
            roots.append(obj)
            continue
        if not reader.is_tensor(obj):
            continue
        base = reader.tensor_field(obj, "_base")
        if reader.is_tensor(base):
            accounts.impl_holders[hop(node, base, "._base")] += 1
        grad = reader.grad(obj)
        if grad is not None and id(grad) in accounts.index:
            # A leaf's gradient: its C++ side keeps it (and is kept with the leaf).
            accounts.impl_holders[hop(node, grad, ".grad")] += 1
        grad_fn = reader.grad_fn(obj)
        if grad_fn is None:
            continue
        vertex = hop(node, grad_fn, ".grad_fn")
        roots.append(grad_fn)
        if vertex not in successors(accounts, node):
            reached_nodes.add(vertex)
        # else the tensor's traverse visits its node's own reference to the Python object.
        hooks = reader.hooks_dict(obj)
        if hooks is not None and not reader.is_leaf(obj):
            # register_hook() on a non-leaf also registers the tensor's dict on its node.
            _explain(accounts, vertex, hop(vertex, hooks, TENSOR_HOOKS))
    seen: dict[int, object] = {}
    hooked: list[object] = []
    made: list[tuple[int, object]] = []

    def older(graph_node: object) -> bool:
        return _made_before(accounts, reader, graph_node, mark)

    for graph_node in reader.walk(roots, seen, stop=older):
        vertex = accounts.vertex(graph_node)
        if older(graph_node):
            accounts.rooted_cpp.add(vertex)
            continue  # what an older node holds is held from outside: not walked further
        made.append((vertex, graph_node))
        if vertex < accounts.young or mark is None:
            # Hooks are registered through a node's Python object: in a block, one it made.
            hooked.append(graph_node)
        for position, following in enumerate(reader.next_nodes(graph_node)):
            reached_nodes.add(hop(vertex, following, f".next_functions[{position}][0]"))
        variable = reader.variable(graph_node)
        if variable is not None:
            accounts.impl_holders[hop(vertex, variable, ".variable")] += 1
    seen.clear()
    if _unexplained_implementations(accounts, reader, left):
        # Only then: reading saved tensors can make Python objects for C++-made ones.
        for vertex, graph_node in made:
            for label, tensor in reader.saved(graph_node, inputs_only=True):
                if id(tensor) in accounts.index:
                    accounts.impl_holders[hop(vertex, tensor, label)] += 1
                base = reader.tensor_field(tensor, "_base")
                if reader.is_tensor(base) and id(base) in accounts.index:
                    # A saved view (`x.t()`) holds the C++ side of the tensor it views.
                    accounts.impl_holders[hop(vertex, base, f"{label}._base")] += 1
    for vertex in reached_nodes:
        if vertex < accounts.young:
            accounts.explained[vertex] += 1  # a node holds its own Python object
    _hook_dicts(accounts, reader, hooked, left)


def owned_by_young_tensors(accounts: Accounts, reader: AutogradReader) -> set[int]:
    """The block's tensors whose C++ side another of its tensors holds, wherever that one
    is held: a view's base, a sparse tensor's parts, a gradient (one pass over the block's
    tensors, for :mod:`whyalive.analysis.uncollectable`'s unnamed owners)."""
    index, owned = accounts.index, set()
    for obj in accounts.nodes:
        if not reader.is_tensor(obj):
            continue
        for held in (*reader.parts(obj), reader.grad(obj)):
            vertex = index.get(id(held)) if held is not None else None
            if vertex is not None and vertex < accounts.young:
                owned.add(vertex)
    return owned


def _unexplained_implementations(
    accounts: Accounts, reader: AutogradReader, left: list[int]
) -> bool:
    """Whether a tensor of ``left`` has more owners of its C++ side than found so far."""
    nodes, holders = accounts.nodes, accounts.impl_holders
    return any(
        reader.is_tensor(nodes[n]) and reader.use_count(nodes[n]) - 1 > holders[n] for n in left
    )


def successors(accounts: Accounts, node: int) -> Sequence[int]:
    return accounts.targets[accounts.offsets[node] : accounts.offsets[node + 1]]


def _made_before(
    accounts: Accounts, reader: AutogradReader, node: object, mark: int | None
) -> bool:
    before = reader.made_before(node, mark)
    if before is None:  # AccumulateGrad: as old as the leaf it feeds
        variable = reader.variable(node)
        return variable is None or accounts.index.get(id(variable), accounts.young) >= (
            accounts.young
        )
    return before


def _hook_dicts(
    accounts: Accounts, reader: AutogradReader, hooked: list[object], left: list[int]
) -> None:
    """The hook and metadata dicts of the walked nodes, read only while a dict of ``left``
    has outside references not yet explained."""
    if not hooked or not _unexplained_dicts(accounts, left):
        return
    for node, held in reader.hook_dicts(hooked).items():
        source = accounts.index[node]
        for kind, hooks in held.items():
            if id(hooks) in accounts.index:
                name = NODE_PREHOOKS if kind == PREHOOKS else NODE_HOOKS
                _explain(accounts, source, _add(accounts, source, hooks, name))
    if not _unexplained_dicts(accounts, left):
        return
    for hooked_node in hooked:
        # Read last: torch makes an empty metadata dict for a node that had none.
        metadata = reader.metadata(hooked_node)
        if metadata is not None and id(metadata) in accounts.index:
            source = accounts.index[id(hooked_node)]
            _explain(accounts, source, _add(accounts, source, metadata, ".metadata"))


def _explain(accounts: Accounts, source: int, target: int) -> None:
    """Count the reference ``source`` holds in C++ to ``target`` as explained, unless the
    collector sees it too (a node nothing else holds shows its hook dicts and metadata to
    the GC): then the graph counted it already, and counting it twice would take it for
    a reference from outside."""
    if source >= accounts.young or target not in successors(accounts, source):
        accounts.explained[target] += 1


def _add(accounts: Accounts, source: int, target: object, name: str) -> int:
    vertex = accounts.vertex(target)
    accounts.cpp.append((source, vertex, name))
    return vertex


def _unexplained_dicts(accounts: Accounts, left: list[int]) -> bool:
    nodes, outside, explained = accounts.nodes, accounts.outside, accounts.explained
    return any(outside[node] > explained[node] and isinstance(nodes[node], dict) for node in left)
