"""The live heap as one graph, and its roots: modules, classes, every thread's frames.

``snapshot_heap`` takes one graph of everything the collector tracks (plus the
frozen objects it can find, and the untracked containers and heavy objects they
hold), built in one pass by :mod:`whyalive.graphcore`. The caller's own
containers are named up front, before the snapshot, so they can be excluded by
index: the tool never explains an object by its own references.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive import graphcore
from whyalive.kinds import KindResolver

MODULE = 1
CLASS = 2
FRAME = 3

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Followed although untracked: the GC untracks tuples and dicts holding only
# untracked values (NumPy arrays), so they can hide heavy objects.
_UNTRACKED_CONTAINERS: tuple[type, ...] = (tuple, dict)
_type_subclasscheck = type.__subclasscheck__


class _RootKinds(dict[type, int]):
    """type -> MODULE / CLASS / 0, filled at C speed by ``map`` after the first miss."""

    def __missing__(self, cls: type) -> int:
        kind = 0
        if _type_subclasscheck(types.ModuleType, cls):
            kind = MODULE
        elif _type_subclasscheck(type, cls):
            kind = CLASS
        self[cls] = kind
        return kind


@dataclass
class HeapGraph:
    """Strong references to every node of the live heap and CSR edges between them.

    Node indices: the tracked heap first, then objects found frozen
    (``frozen_range``), then the explicitly added ``targets``, then the untracked
    referents discovered while building.
    """

    nodes: list[object]
    offsets: list[int]
    targets: list[int]
    target_nodes: list[int]
    buffers: tuple[memoryview, memoryview] | None = None
    root_kind: dict[int, int] = field(default_factory=dict)
    root_words: dict[int, str] = field(default_factory=dict)
    excluded: set[int] = field(default_factory=set)
    frozen_range: range = range(0)

    def release(self) -> None:
        """Drop every strong reference (call before returning to the user)."""
        self.nodes = []
        self.offsets = []
        self.targets = []
        self.buffers = None

    def reaching(self, seeds: list[int]) -> bytes:
        """A mask of the nodes from which some seed can be reached (computed in C)."""
        assert self.buffers is not None, "the graph was released"
        return bytes(graphcore.nodes_reaching(*self.buffers, seeds))


def is_tool_frame(frame: types.FrameType) -> bool:
    """A frame running whyalive's own code: never a root, never on a path."""
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def _thread_frames() -> tuple[list[types.FrameType], dict[int, str], set[int]]:
    """Every thread's frames (top to bottom) but ours, their thread names, and our frames' ids.

    Our own frame objects are never stored: a list of them held by a local of
    one of them would be a cycle keeping the tool's locals alive.
    """
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    frames: list[types.FrameType] = []
    words: dict[int, str] = {}
    tool: set[int] = set()
    current = sys._current_frames()
    for ident in list(current):
        thread = names.get(ident, f"thread {ident}")
        frame: types.FrameType | None = current.pop(ident)
        while frame is not None:
            if is_tool_frame(frame):
                tool.add(id(frame))
            else:
                frames.append(frame)
                words[id(frame)] = thread
            frame = frame.f_back
    return frames, words, tool


def _frozen_objects(seen: list[object]) -> list[object]:
    """Tracked objects the snapshot missed because ``gc.freeze()`` hid them.

    Found by following references out of the snapshot, a whole frontier per C
    call: ``gc.get_referents(*frontier)`` and set arithmetic on ids, so Python
    code runs only for the new objects.
    """
    known = set(map(id, seen))
    found: list[object] = []
    frontier = seen
    while frontier:
        referents = gc.get_referents(*frontier)
        by_id = dict(zip(map(id, referents), referents, strict=True))
        fresh = list(filter(gc.is_tracked, map(by_id.__getitem__, by_id.keys() - known)))
        known.update(map(id, fresh))
        found.extend(fresh)
        frontier = fresh
    return found


def snapshot_heap(
    targets: Sequence[object], resolver: KindResolver, own: Sequence[object]
) -> HeapGraph:
    """One graph of the live heap with ``targets`` in it; ``own`` objects are excluded."""
    frames, thread_of, tool_frames = _thread_frames()
    own_ids = {id(frames), *map(id, own), *tool_frames}
    objects = gc.get_objects()
    frozen_start = len(objects)
    if gc.get_freeze_count():
        objects.extend(_frozen_objects(objects))
    frozen_range = range(frozen_start, len(objects))
    index = dict(zip(map(id, objects), range(len(objects)), strict=True))
    target_nodes: list[int] = []
    for target in targets:
        found = index.get(id(target))
        if found is None:
            found = len(objects)
            objects.append(target)
            index[id(target)] = found
        target_nodes.append(found)
    follow = resolver.covered_types + _UNTRACKED_CONTAINERS
    nodes, offsets, edge_targets = graphcore.build_graph(objects, follow)
    del objects
    graph = HeapGraph(
        nodes,
        offsets.tolist(),
        edge_targets.tolist(),
        target_nodes,
        buffers=(offsets, edge_targets),
        frozen_range=frozen_range,
    )
    graph.excluded = {index[i] for i in own_ids if i in index}
    kinds = _RootKinds()
    for node, kind in enumerate(map(kinds.__getitem__, map(type, nodes))):
        if kind:
            graph.root_kind[node] = kind
    for frame in frames:
        node = index.get(id(frame))
        if node is not None:
            graph.root_kind[node] = FRAME
            graph.root_words[node] = thread_of[id(frame)]
    return graph


def heavy_census(resolver: KindResolver) -> list[object]:
    """Every heavy object alive now, tracked or not (one graph pass over the heap)."""
    follow = resolver.covered_types + _UNTRACKED_CONTAINERS
    nodes, _, _ = graphcore.build_graph(gc.get_objects(), follow)
    kinds = map(resolver.__getitem__, map(type, nodes))
    found = [obj for obj, kind in zip(nodes, kinds, strict=True) if kind is not None]
    del nodes
    return [obj for obj in found if resolver.describe(obj) is not None]
