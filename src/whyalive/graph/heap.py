"""The live heap as one graph: every tracked object, the frozen ones, and their roots.

Roots are modules, classes and every thread's frames. ``snapshot_heap`` takes one
graph of everything the collector tracks (plus the frozen objects it can find, and
the untracked containers and heavy objects they hold), built in one pass by
:mod:`whyalive.graph.core`. The caller's own containers are named up front, before
the snapshot, so they can be excluded by index: the tool never explains an object by
its own references.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive.graph import core as graphcore
from whyalive.graph.garbage import UNTRACKED_CONTAINERS
from whyalive.guarded import by_identity, module_dict, unsafe_to_traverse
from whyalive.kinds import KindResolver

MODULE = 1
CLASS = 2
FRAME = 3

# whyalive/, two levels up from here.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_type_subclasscheck = type.__subclasscheck__


class _RootKinds(dict[int, int]):
    """id(type) -> MODULE / CLASS / 0, each type looked at once. Keyed by id: hashing a
    class runs its metaclass's ``__hash__`` (the snapshot's objects keep their types)."""

    def of(self, cls: type) -> int:
        kind = self.get(id(cls))
        if kind is None:
            kind = self[id(cls)] = _root_kind(cls)
        return kind

    def learn(self, nodes: Sequence[object]) -> None:
        """Look at every type of ``nodes`` not seen yet (one pass at C speed)."""
        for key, cls in by_identity(map(type, nodes)).items():
            if key not in self:
                self[key] = _root_kind(cls)


def _root_kind(cls: type) -> int:
    if _type_subclasscheck(types.ModuleType, cls):
        return MODULE
    if _type_subclasscheck(type, cls):
        return CLASS
    return 0


class RootKinds:
    """Node -> MODULE / CLASS / FRAME / 0, read from the node's type when first asked.

    A search visits a small part of the heap: deciding the kind of every node up front
    cost a Python call per object of the snapshot.
    """

    def __init__(self, nodes: list[object]) -> None:
        self._nodes = nodes
        self._by_type = _RootKinds()
        self._set: dict[int, int] = {}

    def __getitem__(self, node: int) -> int:
        kind = self._set.get(node)
        if kind is None:
            kind = self._by_type.of(type(self._nodes[node]))
        return kind

    def __setitem__(self, node: int, kind: int) -> None:
        self._set[node] = kind

    def every_root(self) -> list[int]:
        """Every node that is a root, in one pass over the types (at C speed after the
        first of each type)."""
        self._by_type.learn(self._nodes)
        kinds = map(self._by_type.__getitem__, map(id, map(type, self._nodes)))
        found = {node for node, kind in enumerate(kinds) if kind}
        found.update(node for node, kind in self._set.items() if kind)
        found.difference_update(node for node, kind in self._set.items() if not kind)
        return sorted(found)


@dataclass
class HeapGraph:
    """Strong references to every node of the live heap and CSR edges between them.

    Node indices: the tracked heap first, then objects found frozen
    (``frozen_range``), then the explicitly added ``targets``, then the untracked
    referents discovered while building.
    """

    nodes: list[object]
    offsets: Sequence[int]
    targets: Sequence[int]
    target_nodes: list[int]
    buffers: tuple[memoryview, memoryview] | None = None
    reverse: tuple[memoryview, memoryview] | None = None
    """Edge positions grouped by target (see :meth:`edges_into`), made on first use."""
    root_kind: RootKinds = field(default_factory=lambda: RootKinds([]))
    root_words: dict[int, str] = field(default_factory=dict)
    excluded: set[int] = field(default_factory=set)
    excluded_ids: set[int] = field(default_factory=set)
    frozen_range: range = range(0)

    def edges_into(self, node: int) -> list[int]:
        """Positions in ``targets`` of every edge into ``node``, ascending.

        From a reverse index of every edge, built once (one counting sort in C, about
        what a collection costs) the first time any node's holders are asked for.
        """
        if self.reverse is None:
            assert self.buffers is not None, "the graph was released"
            self.reverse = graphcore.reverse_edges(*self.buffers)
        offsets, edges = self.reverse
        return edges[offsets[node] : offsets[node + 1]].tolist()

    def is_excluded(self, node: int) -> bool:
        """Our own containers and frames: never on a path, never blamed."""
        obj = self.nodes[node]
        if node in self.excluded or id(obj) in self.excluded_ids:
            return True
        return type(obj) is types.FrameType and is_tool_frame(obj)

    def release(self) -> None:
        """Drop every strong reference (call before returning to the user)."""
        self.nodes = []
        self.offsets = ()
        self.targets = ()
        self.reverse = None
        self.buffers = None
        self.root_kind = RootKinds([])

    def unrooted(self) -> dict[int, object]:
        """Every object no root reaches (id -> object), ours excluded: what only C/C++
        owners or cyclic garbage hold, where a loop through the autograd graph would be."""
        roots = [n for n in self.root_kind.every_root() if not self.is_excluded(n)]
        component_of, _, _ = graphcore.find_components(self.offsets, self.targets)
        work = graphcore.workspace(self.nodes, self.offsets, self.targets, component_of)
        try:
            reached = bytearray(len(self.nodes))
            for node in work.reach(roots, None, None):
                reached[node] = 1
        finally:
            work.close()
        return {
            id(obj): obj
            for node, obj in enumerate(self.nodes)
            if not reached[node] and not self.is_excluded(node)
        }

    def reaching(self, seeds: list[int]) -> bytes:
        """A mask of the nodes from which some seed can be reached (computed in C)."""
        assert self.buffers is not None, "the graph was released"
        return bytes(graphcore.nodes_reaching(*self.buffers, seeds))


def is_tool_frame(frame: types.FrameType) -> bool:
    """A frame running whyalive's own code: never a root, never on a path."""
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def _thread_frames() -> tuple[list[types.FrameType], dict[int, str]]:
    """Every thread's frames (top to bottom) but whyalive's own, and their thread names.

    Our own frame objects are never stored: a list of them held by a local of
    one of them would be a cycle keeping the tool's locals alive.
    """
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    frames: list[types.FrameType] = []
    words: dict[int, str] = {}
    current = sys._current_frames()
    for ident in list(current):
        thread = names.get(ident, f"thread {ident}")
        frame: types.FrameType | None = current.pop(ident)
        while frame is not None:
            if not is_tool_frame(frame):
                frames.append(frame)
                words[id(frame)] = thread
            frame = frame.f_back
    return frames, words


# An immortal object's reference count on 3.12 (2**32 - 1 on 64-bit builds); no mortal
# object is referred to this often.
_IMMORTAL_COUNT = 1 << 30
# type's own descriptors: a metaclass may shadow ``__bases__`` or ``__mro__``.
_BASES = type.__dict__["__bases__"]
_MRO = type.__dict__["__mro__"]


def _immortal_type_tuples() -> int:
    """How many ``__bases__`` and ``__mro__`` tuples of classes are tracked and immortal."""
    found: set[int] = set()
    seen: set[int] = set()
    stack: list[type] = [object]
    while stack:
        cls = stack.pop()
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        stack.extend(type.__subclasses__(cls))
        for items in (_BASES.__get__(cls), _MRO.__get__(cls)):
            if gc.is_tracked(items) and sys.getrefcount(items) >= _IMMORTAL_COUNT:
                found.add(id(items))
    return len(found)


# CPython 3.12 moves every immortal object a collection meets into the permanent
# generation, and starts with the immortal ``__bases__`` and ``__mro__`` tuples of its
# builtin types there (375 in a fresh 3.12.1 process; 3.13 leaves them out of the lists).
_INTERPRETER_FROZEN = _immortal_type_tuples() if sys.version_info[:2] == (3, 12) else 0


def user_freeze_count() -> int:
    """``gc.get_freeze_count()`` less what the interpreter freezes by itself.

    Read as it is on 3.12, the count is never 0: whyalive took the interpreter's
    immortal tuples for the user's freeze (so it never froze the heap, and
    ``explain()`` noted 375 frozen objects). A freeze by the user freezes the whole
    heap, far more than these.
    """
    return max(gc.get_freeze_count() - _INTERPRETER_FROZEN, 0)


def _frozen_objects(seen: list[object]) -> list[object]:
    """Tracked objects the snapshot missed because ``gc.freeze()`` hid them.

    Found by following references out of the snapshot, a whole frontier per C
    call: ``gc.get_referents(*frontier)`` and set arithmetic on ids, so Python
    code runs only for the new objects.
    """
    known = set(map(id, seen))
    found: list[object] = []
    frontier = seen
    unsafe = unsafe_to_traverse()
    while frontier:
        if unsafe is not None:
            frontier = [module_dict(unsafe) if o is unsafe else o for o in frontier]
        referents = gc.get_referents(*frontier)
        by_id = dict(zip(map(id, referents), referents, strict=True))
        fresh = list(filter(gc.is_tracked, map(by_id.__getitem__, by_id.keys() - known)))
        known.update(by_id)  # untracked ones too: each id is looked at once
        found.extend(fresh)
        frontier = fresh
    return found


def snapshot_heap(
    targets: Sequence[object], resolver: KindResolver, own: Sequence[object]
) -> HeapGraph:
    """One graph of the live heap with ``targets`` in it; ``own`` objects are excluded.

    The targets, our own containers and the threads' frames go first in the node
    list, so their indices are known without a search (``build_graph`` points
    every edge at an object's first index; later copies have no holders).
    """
    frames, thread_of = _thread_frames()
    head: list[object] = [*targets, *own, frames, *frames]
    objects = head + gc.get_objects()
    frozen_start = len(objects)
    if user_freeze_count():
        objects.extend(_frozen_objects(objects))
    frozen_range = range(frozen_start, len(objects))
    follow = resolver.covered_types + UNTRACKED_CONTAINERS
    # In place: the snapshot list becomes the node list, without a copy of the heap.
    nodes, offsets, edge_targets, _ = graphcore.build_graph(objects, follow, (), True)
    head_id = id(head)  # the snapshot lists `head` itself: one of our containers
    del objects, head
    count = len(targets)
    graph = HeapGraph(
        nodes,
        offsets,
        edge_targets,
        list(range(count)),
        buffers=(offsets, edge_targets),
        frozen_range=frozen_range,
    )
    first_frame = count + len(own) + 1
    graph.excluded = set(range(count, first_frame))
    # The snapshot holds second copies of our containers: exclude those by identity.
    graph.excluded_ids = {head_id, id(frames), *map(id, own)}
    graph.root_kind = RootKinds(nodes)
    for node, frame in enumerate(frames, first_frame):
        graph.root_kind[node] = FRAME
        graph.root_words[node] = thread_of[id(frame)]
    return graph
