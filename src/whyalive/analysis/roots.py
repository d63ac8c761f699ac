"""The search from a live object back to the roots that keep it alive.

The heap it searches is a :class:`~whyalive.graph.heap.HeapGraph`; roots are
modules, classes and every thread's frames. An object the interpreter shares with every
use of its value (:func:`shared_by_interpreter`) is not searched: any path would do.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections import deque
from itertools import compress

from whyalive.graph.heap import CLASS, FRAME, MODULE, HeapGraph

# The search from an object back to the roots that keep it alive.

# How many levels past the first root we keep looking for other holders.
_EXTRA_LEVELS = 1
# The reverse search gives way to one forward search (a deep and wide ancestry) past
# this budget. Each level costs min(frontier, _SCAN_PER_NODE): the budget of the edge-list
# scans it once measured, kept so that the paths shown stay the same now that a level is
# a few lookups in the graph's reverse index.
_MAX_SCANS = 60
_SCAN_PER_NODE = 6
_ROOT_ORDER = {MODULE: 0, CLASS: 1, FRAME: 2}


def forward_search(graph: HeapGraph, mask: bytes, max_paths: int) -> dict[int, list[list[int]]]:
    """BFS from every root that can reach a target; paths end at distinct last holders.

    The fallback for long chains, where the level-by-level reverse search would
    scan the edges too many times.

    The search stops as soon as every target and the direct holders that can give
    it more paths (up to ``max_paths``) are reached, or a few levels past the first
    path, whichever comes first.
    """
    roots = sorted(
        (
            n
            for n in compress(range(len(mask)), mask)
            if graph.root_kind[n] and not graph.is_excluded(n)
        ),
        key=lambda n: _ROOT_ORDER[graph.root_kind[n]],
    )
    holders = {t: _direct_holders(graph, t, mask, max_paths) for t in graph.target_nodes}
    goals = set(graph.target_nodes).union(*holders.values())
    parent: dict[int, int] = dict.fromkeys(roots, -1)
    depth: dict[int, int] = dict.fromkeys(roots, 0)
    unreached = goals - parent.keys()
    queue = deque(roots)
    offsets, targets = graph.offsets, graph.targets
    stop_depth: int | None = None
    while queue and unreached:
        node = queue.popleft()
        level = depth[node]
        if stop_depth is not None and level > stop_depth:
            break
        for succ in targets[offsets[node] : offsets[node + 1]]:
            if succ not in parent and mask[succ] and not graph.is_excluded(succ):
                parent[succ] = node
                depth[succ] = level + 1
                queue.append(succ)
                if succ in unreached:
                    unreached.discard(succ)
                    if stop_depth is None and succ in holders:
                        stop_depth = level + 1 + _EXTRA_LEVELS
    paths: dict[int, list[list[int]]] = {}
    for target, direct in holders.items():
        if target not in parent:
            paths[target] = []
            continue
        found = [_chain(parent, target)]
        seen_last = {found[0][-2]} if len(found[0]) > 1 else set()
        for holder in direct:
            if len(found) >= max_paths:
                break
            if holder in parent and holder not in seen_last and holder != target:
                seen_last.add(holder)
                found.append([*_chain(parent, holder), target])
        found.sort(key=len)
        paths[target] = found
    return paths


def reverse_search(graph: HeapGraph, target: int, max_paths: int) -> list[list[int]] | None:
    """Level-by-level search from ``target`` back to the nearest roots.

    Each level finds the holders of the whole frontier in the graph's reverse index.
    Roots are not expanded. Returns None past the ``_MAX_SCANS`` budget.
    """
    towards: dict[int, int] = {target: -1}  # node -> the node it refers to, one step nearer
    if graph.root_kind[target]:
        return [[target]]
    frontier = [target]
    found_roots: list[int] = []
    direct: list[int] = []
    stop_level: int | None = None
    level = scans = 0
    while frontier:
        level += 1
        scans += min(len(frontier), _SCAN_PER_NODE)
        if scans > _MAX_SCANS:
            return None
        following: list[int] = []
        for source, succ in _holders_of(graph, frontier):
            if source in towards or graph.is_excluded(source):
                continue
            towards[source] = succ
            if level == 1:
                direct.append(source)
            if graph.root_kind[source]:
                found_roots.append(source)
            else:
                following.append(source)
        if found_roots and stop_level is None:
            stop_level = level + _EXTRA_LEVELS
        if stop_level is not None and (
            level >= stop_level or _enough(found_roots, towards, target, max_paths)
        ):
            break
        frontier = following
    if not found_roots:
        return []
    paths = _paths_from(found_roots, towards, graph, max_paths)
    # Holders whose own way up was cut short by a shared ancestor get a search each.
    shown = {path[-2] for path in paths if len(path) > 1}
    for holder in direct:
        if len(paths) >= max_paths:
            break
        if holder in shown:
            continue
        more = reverse_search(graph, holder, 1)
        if more and target not in more[0]:
            paths.append([*more[0], target])
            shown.add(holder)
    return paths


def _enough(roots: list[int], towards: dict[int, int], target: int, max_paths: int) -> bool:
    return len({_last_holder(r, towards, target) for r in roots}) >= max_paths


def _last_holder(node: int, towards: dict[int, int], target: int) -> int:
    while towards[node] != target and towards[node] != -1:
        node = towards[node]
    return node


def _paths_from(
    roots: list[int], towards: dict[int, int], graph: HeapGraph, max_paths: int
) -> list[list[int]]:
    """Shortest first, modules before classes before frames, one per last holder."""
    chains = []
    for root in roots:
        chain = [root]
        while towards[chain[-1]] != -1:
            chain.append(towards[chain[-1]])
        chains.append(chain)
    chains.sort(key=lambda c: (len(c), _ROOT_ORDER[graph.root_kind[c[0]]]))
    paths: list[list[int]] = []
    seen: set[int] = set()
    for chain in chains:
        last = chain[-2]
        if last not in seen:
            seen.add(last)
            paths.append(chain)
        if len(paths) >= max_paths:
            break
    return paths


def _holders_of(graph: HeapGraph, frontier: list[int]) -> list[tuple[int, int]]:
    """(source, target) for every edge into ``frontier``, in edge order."""
    offsets, targets = graph.offsets, graph.targets
    edges: list[int] = []
    for node in dict.fromkeys(frontier):
        edges.extend(graph.edges_into(node))
    edges.sort()
    return [(bisect_right(offsets, e) - 1, targets[e]) for e in edges]


def _direct_holders(graph: HeapGraph, target: int, mask: bytes, limit: int) -> list[int]:
    """Up to ``limit`` + 1 nodes with a reference to ``target`` (from the reverse index)."""
    found: list[int] = []
    for position in graph.edges_into(target):
        if len(found) > limit:
            break
        source = bisect_right(graph.offsets, position) - 1
        if source == target or not mask[source] or source in found:
            continue
        if not graph.is_excluded(source):
            found.append(source)
    return found


def _chain(parent: dict[int, int], node: int) -> list[int]:
    chain = [node]
    while parent[chain[-1]] != -1:
        chain.append(parent[chain[-1]])
    return chain[::-1]


def nearest_path(
    graph: HeapGraph, members: list[int], unseen: dict[int, int], target: int
) -> list[int]:
    """The shortest path from an object with unseen references to ``target``."""
    if not unseen:
        return []
    member_set = set(members)
    parent: dict[int, int] = dict.fromkeys(unseen, -1)
    queue = deque(unseen)
    offsets, targets = graph.offsets, graph.targets
    while queue:
        node = queue.popleft()
        if node == target:
            return _chain(parent, node)
        for succ in targets[offsets[node] : offsets[node + 1]]:
            if succ in member_set and succ not in parent:
                parent[succ] = node
                queue.append(succ)
    return []


# A reference count this high is the mark of an immortal object (3.12+), never a count.
_IMMORTAL_COUNT = 1 << 30
_SINGLETONS = {id(None): "None", id(True): "True", id(False): "False"}
_SINGLETONS.update({id(Ellipsis): "Ellipsis", id(NotImplemented): "NotImplemented"})


def shared_by_interpreter(obj: object) -> str | None:
    """Why holder paths say nothing about ``obj``: one object the interpreter shares with
    every use of its value (a singleton, a cached small int or character, an immortal
    object), so any reference anywhere holds it; None for an ordinary object."""
    cls = type(obj)
    singleton = _SINGLETONS.get(id(obj))  # ids of objects that live as long as the process
    if singleton is not None:
        what = f"`{singleton}` is a singleton"
    elif cls is int and -5 <= obj <= 256:  # type: ignore[operator]
        what = f"CPython caches the small ints -5..256: every `{obj}` in the program is this object"
    elif (cls is bytes and len(obj) <= 1) or (cls is str and len(obj) <= 1 and obj <= "\xff"):  # type: ignore[arg-type,operator]
        what = (
            f"CPython caches the empty and the one-character {cls.__name__} objects: "
            f"every `{obj!r}` in the program is this object"
        )
    elif cls is tuple and not obj:
        what = "the empty tuple is a singleton"
    elif sys.getrefcount(obj) >= _IMMORTAL_COUNT:
        what = "it is immortal (Python 3.12+ never frees it) and shared by every use of its value"
    else:
        return None
    return (
        f"Shared by the whole interpreter: {what}. Nothing in your program keeps it alive "
        "on its own and it is never freed, so holder paths would name unrelated references."
    )
