"""Uncollectable leaks: what a block left alive that only loops through the autograd graph hold.

A tensor owns its autograd node in C++; the node owns hook dicts, its ``ctx``, its
``metadata`` and the tensors it saved. When one of those refers back to the tensor
the loop is never freed: the cyclic GC sees the node's references as coming from
outside and keeps everything (docs/architecture.md, "Blind spots").

:func:`find_uncollectable` runs after a check's closing collection, while the
baseline is still frozen, so the collector's generations hold only what the block
made and left alive:

1. Nothing happens unless the block left a tensor or an autograd node alive (one
   pass over the types of what it left).
2. A second collection; then one graph of what the block left (in C, as for
   garbage), and each object's references from outside it: its reference count
   minus the references the graph holds. Such an object is held by a root (a
   global, a running function, an older object), by native code, or by autograd.
3. What the objects held from outside for sure reach is alive for a reason; only
   the rest is walked: the autograd graph of its tensors (bounded, never an
   exception per node). Each reference autograd holds becomes an edge and is
   subtracted from its target's outside count.
4. What no object with an unexplained outside reference reaches is held only by
   loops through the autograd graph: uncollectable. It is returned as an
   :class:`~whyalive.graph.ObjectGraph` that the usual analysis reads (cycles,
   patterns, cuts), the C++ references named in ``cpp_edges``.

Errors lean one way: a reference that cannot be explained keeps its target (and
what it reaches) out of the result, so a rooted object is never reported.
"""

from __future__ import annotations

import gc
import sys
from collections import deque
from dataclasses import dataclass, field

from whyalive.analysis.uncollectable.accounts import (
    Accounts,
    add_autograd_holds,
    build_accounts,
    owned_by_young_tensors,
    successors,
)
from whyalive.capture.gcstate import OWNER
from whyalive.graph import ObjectGraph
from whyalive.graph import core as graphcore
from whyalive.guarded import distinct_types
from whyalive.kinds import KindResolver
from whyalive.kinds.autograd_graph import AutogradReader, loaded_torch

# A tensor's C++ side holds its Python object once at most; a node holds its own once.
_MAX_NATIVE_HOLDS = 1


def block_left_tensors(objects: list[object], reader: AutogradReader) -> bool:
    """Whether ``objects`` (what a block left) hold a tensor or an autograd node."""
    return any(
        issubclass(cls, reader.base) or reader.is_node_type(cls) for cls in distinct_types(objects)
    )


@dataclass
class Probe:
    """What a probe found: the loops' graph (released by its ``release()``), and the
    block's tensors that only a C/C++ owner whyalive cannot name holds (``held``: strong
    references, for :func:`grads_of_live_tensors` to rule out once the heap is unfrozen)."""

    graph: ObjectGraph | None
    held: list[object] = field(default_factory=list)


def find_uncollectable(
    mark: int | None, *, collect: bool = True, max_nodes: int | None = None
) -> Probe | None:
    """The block's objects that only loops through the autograd graph keep alive.

    Call with the block's baseline frozen (after its closing collection). ``mark``
    is :func:`whyalive.kinds.autograd_graph.sequence_mark` at the block's start: nodes
    made before it are held from outside. ``collect`` runs the second collection
    first; ``max_nodes`` bounds the autograd walk (what lies further is not seen).
    None when nothing is held that way.

    A tensor of the block that nothing the probe can read holds, yet whose C++ side has
    more owners than its Python object, is held by a C/C++ owner outside Python (an
    extension's registry, a TorchScript module, a communication buffer) or is the
    ``.grad`` of an older tensor: it is returned in ``held``, never as a loop.
    """
    torch = loaded_torch()
    if torch is None or sys.is_finalizing():
        return None
    reader = AutogradReader(torch)
    if max_nodes is not None:
        reader.limit = max_nodes
    if not block_left_tensors(gc.get_objects(), reader):
        return None
    if collect:
        OWNER.free_collect()
    return _with_collector_off(gc.get_objects(), {}, reader, mark)


def grads_of_live_tensors() -> set[int]:
    """The ids of the ``.grad`` of every tensor the collector lists: one pass over the heap
    (unfrozen), which rules out the gradients among :attr:`Probe.held`."""
    torch = loaded_torch()
    if torch is None:
        return set()
    reader = AutogradReader(torch)
    found: set[int] = set()
    for obj in gc.get_objects():
        if reader.is_tensor(obj):
            grad = reader.grad(obj)
            if grad is not None:
                found.add(id(grad))
    return found


def find_loops_among(
    objects: list[object], own: dict[int, int], goals: list[object]
) -> ObjectGraph | None:
    """Like :func:`find_uncollectable`, over ``objects`` (what no root reaches, for
    :func:`whyalive.explain.explain`), keeping only what leads to one of ``goals``.
    ``own`` counts the caller's references to some objects beyond the list, which the
    list gives up (it is emptied)."""
    torch = loaded_torch()
    if torch is None:
        objects.clear()
        return None
    wanted = {id(goal) for goal in goals}
    found = _with_collector_off(objects, own, AutogradReader(torch), None, wanted)
    return found.graph if found is not None else None


def _with_collector_off(
    objects: list[object],
    own: dict[int, int],
    reader: AutogradReader,
    mark: int | None,
    goals: set[int] | None = None,
) -> Probe | None:
    enabled = gc.isenabled()
    gc.disable()  # the graph holds everything it reads: a collection would traverse it for nothing
    try:
        accounts = build_accounts(objects, own)
        try:
            return _uncollectable(accounts, reader, mark, goals)
        finally:
            accounts.release()
    finally:
        if enabled:
            gc.enable()


def _uncollectable(
    accounts: Accounts, reader: AutogradReader, mark: int | None, goals: set[int] | None
) -> Probe | None:
    nodes = accounts.nodes
    rooted = _surely_rooted(accounts, reader)
    left = [node for node in range(accounts.young) if not rooted[node]]
    if not any(reader.is_tensor(nodes[n]) or reader.is_node(nodes[n]) for n in left):
        return None
    add_autograd_holds(accounts, reader, left, mark)
    found, listed = _held_only_by_loops(accounts, reader, left, rooted, goals is None)
    held = [nodes[n] for n in listed]
    if goals is not None:
        found = _leading_to(accounts, found, goals)
    if not any(reader.is_tensor(accounts.obj(v)) for v in found):
        return Probe(None, held) if held else None
    graph = _subgraph(accounts, found)
    if goals is not None and _collector_frees(accounts, found, goals):
        graph.freed_by_collector = True
        graph.cpp_edges = {}  # the collector sees these references: named as a check names them
    return Probe(graph, held)


def _collector_frees(accounts: Accounts, members: list[int], goals: set[int]) -> bool:
    """Whether the next collection frees one of ``goals`` (ids) among ``members``.

    The collector's own test over the members: what a member with a reference the
    collector cannot see reaches through references it sees stays; the rest is garbage
    and is freed. Then, as reference counting would, a member goes too once everything
    that holds it (the C++ references autograd explains included) is gone.
    """
    young = accounts.young
    inside = set(members)
    outside, explained = accounts.outside, accounts.explained
    held_by: dict[int, list[int]] = {}  # source -> the members it holds (GC-seen and C++)
    holders = dict.fromkeys(members, 0)
    for source in members:
        for target in successors(accounts, source) if source < young else ():
            if target in inside:
                held_by.setdefault(source, []).append(target)
                holders[target] += 1
    for source, target, _ in accounts.cpp:
        if source in inside and target in inside:
            held_by.setdefault(source, []).append(target)
            holders[target] += 1
    held = [v for v in members if v < young and outside[v] > 0]
    kept = _reach(accounts, held, bytearray(len(accounts.nodes) + len(accounts.extra)), None)
    queue = deque(v for v in members if v < young and not kept[v])
    freed = set(queue)
    while queue:  # each freed member lets go of what it holds
        for target in held_by.get(queue.popleft(), ()):
            holders[target] -= 1
            unexplained = target < young and outside[target] > explained[target]
            if holders[target] == 0 and target not in freed and not unexplained:
                freed.add(target)
                queue.append(target)
    return any(id(accounts.obj(v)) in goals for v in freed)


def _leading_to(accounts: Accounts, members: list[int], goals: set[int]) -> list[int]:
    """The members from which an object of ``goals`` (ids) can be reached among them."""
    inside = set(members)
    held: dict[int, list[int]] = {}
    for source, target, _ in accounts.cpp:
        held.setdefault(source, []).append(target)
    into: dict[int, list[int]] = {}
    for source in members:
        following = list(successors(accounts, source)) if source < accounts.young else []
        for target in following + held.get(source, []):
            if target in inside:
                into.setdefault(target, []).append(source)
    queue = deque(v for v in members if id(accounts.obj(v)) in goals)
    kept = set(queue)
    while queue:
        for source in into.get(queue.popleft(), ()):
            if source not in kept:
                kept.add(source)
                queue.append(source)
    return [v for v in members if v in kept]


def _may_be_native(reader: AutogradReader, obj: object, count: int) -> bool:
    """Whether autograd could account for ``count`` outside references to ``obj``."""
    if isinstance(obj, dict):
        return True  # hook and metadata dicts: any number of registrations
    if reader.is_tensor(obj) or reader.is_node(obj):
        return count <= _MAX_NATIVE_HOLDS
    return False


def _surely_rooted(accounts: Accounts, reader: AutogradReader) -> bytearray:
    """A byte per node: reached from an object held from outside that autograd cannot explain."""
    nodes, outside = accounts.nodes, accounts.outside
    sources = [
        node
        for node, count in enumerate(outside)
        if count > 0 and not _may_be_native(reader, nodes[node], count)
    ]
    component_of, _, _ = graphcore.find_components(accounts.offsets, accounts.targets)
    work = graphcore.workspace(accounts.nodes, accounts.offsets, accounts.targets, component_of)
    try:
        reached = bytearray(accounts.young)
        for node in work.reach(sources, None, None):
            reached[node] = 1
        return reached
    finally:
        work.close()


def _reach(
    accounts: Accounts,
    sources: list[int],
    reached: bytearray,
    extra_edges: dict[int, list[int]] | None,
) -> bytearray:
    """Mark what ``sources`` reach (``reached`` grows to cover added vertices)."""
    offsets, targets = accounts.offsets, accounts.targets
    young = accounts.young
    queue = deque(node for node in sources if not reached[node])
    for node in queue:
        reached[node] = 1
    while queue:
        node = queue.popleft()
        following: list[int] = []
        if node < young:
            following.extend(targets[offsets[node] : offsets[node + 1]])
        if extra_edges is not None:
            following.extend(extra_edges.get(node, ()))
        for succ in following:
            if not reached[succ]:
                reached[succ] = 1
                queue.append(succ)
    return reached


def _held_only_by_loops(
    accounts: Accounts, reader: AutogradReader, left: list[int], rooted: bytearray, listing: bool
) -> tuple[list[int], list[int]]:
    """The vertices of ``left`` (and added ones) no unexplained outside reference reaches;
    and, when ``listing``, the tensors of ``left`` held only by an unnamed C/C++ owner."""
    nodes, outside, explained = accounts.nodes, accounts.outside, accounts.explained
    unnamed: list[int] = []  # tensors whose only outside reference is their C++ side's
    for node in left:
        obj = nodes[node]
        if reader.is_tensor(obj):
            users = reader.use_count(obj)
            if users > 1 and accounts.impl_holders[node] >= users - 1:
                explained[node] += 1  # its C++ implementation holds the Python object
            elif users > 1 and outside[node] - explained[node] == 1:
                unnamed.append(node)
    total = accounts.young + len(accounts.extra)
    edges: dict[int, list[int]] = {}
    for source, target, _ in accounts.cpp:
        edges.setdefault(source, []).append(target)
    sources = [n for n in left if outside[n] != explained[n]]
    sources.extend(accounts.rooted_cpp)
    # What the surely rooted part holds through autograd is rooted too.
    sources.extend(s for s in edges if s < accounts.young and rooted[s])
    reached = rooted + bytearray(total - accounts.young)
    listed: list[int] = []
    if listing and unnamed:
        unnamed_set = set(unnamed) - owned_by_young_tensors(accounts, reader)
        # Listed: what nothing else reaches (not Python, not autograd, not another of the
        # block's tensors); the rest of the tensors' C++ owners are named.
        _reach(accounts, [n for n in sources if n not in unnamed_set], reached, edges)
        listed = [n for n in unnamed if n in unnamed_set and not reached[n]]
    _reach(accounts, sources, reached, edges)
    return [v for v in range(total) if not reached[v]], listed


def _subgraph(accounts: Accounts, members: list[int]) -> ObjectGraph:
    """The members as an object graph: their references and the C++ ones, renumbered."""
    position = {vertex: new for new, vertex in enumerate(members)}
    cpp: dict[int, list[tuple[int, str]]] = {}
    for source, target, name in accounts.cpp:
        if source in position and target in position:
            cpp.setdefault(source, []).append((target, name))
    offsets = [0]
    targets: list[int] = []
    names: dict[tuple[int, int], str] = {}
    young, renumbered = accounts.young, position.get
    # Plain lists, read once: a slice of a list per member is cheaper than of the buffer.
    starts, following = list(accounts.offsets), list(accounts.targets)
    for vertex in members:
        start = len(targets)
        if vertex < young:
            found = map(renumbered, following[starts[vertex] : starts[vertex + 1]])
            targets.extend(new for new in found if new is not None)
        held = cpp.get(vertex)
        if held:
            seen = set(targets[start:])
            for target, name in held:
                new_source, new_target = position[vertex], position[target]
                if (new_source, new_target) not in names:
                    names[new_source, new_target] = name
                    if new_target not in seen:  # seen by the GC too (one edge)
                        seen.add(new_target)
                        targets.append(new_target)
        offsets.append(len(targets))
    objects = [accounts.obj(v) for v in members]
    resolver = KindResolver()
    heavy = [n for n, obj in enumerate(objects) if resolver[type(obj)] is not None]
    return ObjectGraph(
        objects,
        _int64(offsets),
        _int64(targets),
        len(objects),
        heavy,
        cpp_edges=names,
    )


def _int64(values: list[int]) -> memoryview:
    """A read-only int64 buffer, the form the graph core takes."""
    from array import array

    return memoryview(array("q", values)).toreadonly()
