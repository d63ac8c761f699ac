"""The pure-Python twin of ``_fastgraph.Workspace``: per-component reach, paths, edge classes."""

from __future__ import annotations

import operator
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from whyalive.graph.twin import CLASS_OF_DICT, ClassKey, int64_list, open_csr
from whyalive.guarded import instance_dict, is_in_mro

_CLASS_CAP = 15


def _key_id(key: ClassKey) -> tuple[int, int, int, int]:
    # Types are compared by identity, as in C: a metaclass __eq__/__hash__ never runs.
    return id(key[0]), id(key[1]), key[2], key[3]


class PyWorkspace:
    """Pure-Python twin of ``_fastgraph.Workspace``: the same results, dict-sized scratch."""

    def __init__(self, nodes: list[object], offsets: Any, targets: Any, component_of: Any) -> None:
        self._off, self._tgt, n = open_csr(offsets, targets)
        self._comp = int64_list(component_of, "component_of")
        if len(self._comp) != n:
            raise ValueError("component_of must have one entry per node")
        if len(nodes) < n:
            raise ValueError("nodes must hold every graph node (at most 2**32 - 2)")
        self._nodes: list[object] | None = nodes
        self._n = n

    def _check(self) -> None:
        if self._nodes is None:
            raise ValueError("workspace is closed")
        if len(self._nodes) < self._n:
            raise ValueError("nodes must hold every graph node")

    def _ids(self, items: Iterable[int], limit: int) -> list[int]:
        self._check()
        found = []
        for item in items:
            s = operator.index(item)
            if s < 0 or s >= limit:
                raise IndexError(f"seed {s} out of range for {limit} nodes")
            found.append(s)
        return found

    def reach(
        self, sources: Iterable[int], wanted: Any, blocked: Any, limit: int | None = None
    ) -> list[int]:
        """Nodes reachable from ``sources``, BFS order; see the module docstring."""
        order = list(dict.fromkeys(self._ids(sources, self._n)))
        flags = bytes(wanted) if wanted is not None else None
        if flags is not None and len(flags) < self._n:
            raise ValueError("wanted must have one byte per node")
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must not be negative")
            # The first ``limit`` listed in BFS order are the same whether or not
            # the search goes on: the C core stops, the twin cuts.
            return self.reach(sources, wanted, blocked)[:limit]
        stop = bytes(blocked) if blocked is not None else None
        home = self._comp[order[0]] if order else -1
        seen = set(order)
        off, tgt, comp = self._off, self._tgt, self._comp
        head = 0
        while head < len(order):
            u = order[head]
            head += 1
            for w in tgt[off[u] : off[u + 1]]:
                if w in seen:
                    continue
                c = comp[w]
                if stop is not None and c != home and c < len(stop) and stop[c]:
                    continue
                seen.add(w)
                order.append(w)
        return order if flags is None else [v for v in order if flags[v]]

    def shortest_paths(self, sources: Iterable[int], goals: Iterable[int]) -> dict[int, list[int]]:
        """Shortest path from any source to each reachable goal (one BFS)."""
        wanted = set(self._ids(goals, self._n))
        parent: dict[int, int] = {}
        queue: list[int] = []
        for s in self._ids(sources, self._n):
            if s not in parent:
                parent[s] = -1
                queue.append(s)
        found: dict[int, list[int]] = {}
        off, tgt = self._off, self._tgt
        head = 0
        while head < len(queue) and len(found) < len(wanted):
            u = queue[head]
            head += 1
            if u in wanted:
                path = [u]
                while parent[path[-1]] != -1:
                    path.append(parent[path[-1]])
                found[u] = path[::-1]
            for w in tgt[off[u] : off[u + 1]]:
                if w not in parent:
                    parent[w] = u
                    queue.append(w)
        return found

    def path_ends(
        self, source: int, goal: int, keep: int
    ) -> tuple[int, list[int], list[int]] | None:
        """The shortest path's length and its two ends; see the module docstring."""
        (source, goal) = self._ids((source, goal), self._n)
        if keep < 1:
            raise IndexError("path_ends: node out of range or keep < 1")
        if source == goal:
            return 0, [source], []
        parent = {source: -1}
        queue = [source]
        head = 0
        off, tgt = self._off, self._tgt
        while head < len(queue) and goal not in parent:
            u = queue[head]
            head += 1
            for v in tgt[off[u] : off[u + 1]]:
                if v not in parent:
                    parent[v] = u
                    queue.append(v)
                    if v == goal:
                        break
        if goal not in parent:
            return None
        path = [goal]
        while parent[path[-1]] != -1:
            path.append(parent[path[-1]])
        path.reverse()
        if len(path) <= 2 * (keep + 1):
            return len(path) - 1, path, []
        return len(path) - 1, path[: keep + 1], path[-(keep + 1) :]

    def _classed_edges(self, members: list[int]) -> Iterator[tuple[int, int, int, ClassKey]]:
        """(u, v, edge position, class key) of every edge between members."""
        assert self._nodes is not None
        nodes, off, tgt = self._nodes, self._off, self._tgt
        inside = set(members)
        owners = self._dict_owners(members, inside)
        for u in members:
            mine = [e for e in range(off[u], off[u + 1]) if tgt[e] in inside]
            deg = min(len(mine), _CLASS_CAP + 1)
            source = type(nodes[u])
            if source is dict and u in owners:
                source, deg = owners[u], deg | CLASS_OF_DICT
            for pos, e in enumerate(mine):
                v = tgt[e]
                yield u, v, e, (source, type(nodes[v]), min(pos, _CLASS_CAP), deg)

    def _dict_owners(self, members: list[int], inside: set[int]) -> dict[int, type]:
        """Member dicts that are another member's attribute dict -> that member's type."""
        assert self._nodes is not None
        nodes, off, tgt = self._nodes, self._off, self._tgt
        owners: dict[int, type] = {}
        if not any(type(nodes[u]) is dict for u in members):
            return owners
        for u in members:
            obj = nodes[u]
            held = [v for v in tgt[off[u] : off[u + 1]] if v in inside]
            if type(obj) is dict or not any(type(nodes[v]) is dict for v in held):
                continue
            # The C core reads the dict's slot; asking for it may make a dict (3.11+),
            # never one of the graph's nodes, so the classes found are the same. A class's
            # namespace is not an instance's attributes.
            attrs = None if is_in_mro(type(obj), type) else instance_dict(obj)
            owned = next((v for v in held if attrs is not None and nodes[v] is attrs), None)
            if owned is not None:
                owners[owned] = type(obj)
        return owners

    def edge_classes(
        self, members: Iterable[int], samples: int
    ) -> tuple[list[ClassKey], list[int], list[list[tuple[int, int, int]]]]:
        """Classes of the edges between members, with counts and spread samples (one pass)."""
        if samples < 1:
            raise ValueError("samples must be at least 1")
        chosen = list(dict.fromkeys(self._ids(members, self._n)))
        ids: dict[tuple[int, int, int, int], int] = {}
        keys: list[ClassKey] = []
        counts: list[int] = []
        strides: list[int] = []
        picked: list[list[tuple[int, int, int]]] = []
        for u, v, e, key in self._classed_edges(chosen):
            c = ids.setdefault(_key_id(key), len(keys))
            if c == len(keys):
                keys.append(key)
                counts.append(0)
                strides.append(1)
                picked.append([])
            index = counts[c]
            counts[c] += 1
            if index % strides[c] == 0:
                picked[c].append((u, v, e))
                if len(picked[c]) == 2 * samples:
                    del picked[c][1::2]  # the edges of the doubled stride
                    strides[c] *= 2
        for kept in picked:
            while len(kept) > samples:
                del kept[1::2]
        return keys, counts, picked

    def acyclic_without(
        self,
        members: Iterable[int],
        removed: Sequence[ClassKey],
        removed_edges: Sequence[int] | None,
    ) -> bool:
        """Whether no loop is left among the members without those edges."""
        self._check()
        gone = {_key_id(key) for key in removed}
        cut: set[int] = set()
        for edge in removed_edges or ():
            e = operator.index(edge)
            if e < 0 or e >= len(self._tgt):
                raise IndexError(f"edge {e} out of range for {len(self._tgt)} edges")
            cut.add(e)
        # Read last, as the C core marks them: an edge's __index__ may use or close this.
        chosen = list(dict.fromkeys(self._ids(members, self._n)))
        kept: dict[int, list[int]] = {}
        indegree = dict.fromkeys(chosen, 0)
        for u, v, e, key in self._classed_edges(chosen):
            if e not in cut and _key_id(key) not in gone:
                kept.setdefault(u, []).append(v)
                indegree[v] += 1
        queue = [u for u, degree in indegree.items() if degree == 0]
        head = 0
        while head < len(queue):
            u = queue[head]
            head += 1
            for v in kept.get(u, ()):
                indegree[v] -= 1
                if indegree[v] == 0:
                    queue.append(v)
        return len(queue) == len(indegree)

    def cycle_keys(
        self,
        groups: Iterable[Sequence[int]],
        wanted: Any,
        blocked: Any,
        limit: int,
        specific: Callable[[type], object],
        big_members: int,
        big_edges: int,
        keep_empty: bool,
    ) -> list[tuple[object, Sequence[int], list[int]]]:
        """Per group of members, its quick key and what it retains; see the C core."""
        self._check()
        found: list[tuple[object, Sequence[int], list[int]]] = []
        groups = list(groups)
        limit = operator.index(limit)
        if wanted is None or blocked is None:
            raise TypeError("wanted and blocked must be bytes-like, one byte per node / component")
        read: list[list[int]] = []  # each group's ids, read once (an __index__ runs code)
        for members in groups:
            if not isinstance(members, Sequence):
                raise TypeError("members must be a sequence of ints")
            ids = [operator.index(m) for m in tuple(members)]
            if not ids:
                raise IndexError("a group must have members")
            for before, node in zip([-1, *ids], ids, strict=False):
                if node <= before or node >= self._n:
                    raise IndexError(
                        f"members must be node ids below {self._n}, ascending (got {node})"
                    )
            read.append(ids)
        for members, ids in zip(groups, read, strict=True):
            retained = self.reach(ids, wanted, blocked, limit)
            if not retained and not keep_empty:
                continue
            component = self._comp[ids[0]]
            if self._is_big(ids, big_members, big_edges):
                found.append((("structure", component), members, retained))
                continue
            key: list[int] = []
            is_specific = False
            for node in ids:
                obj = self._nodes_checked()[node]
                cls = type(obj)
                if cls is types.FunctionType:
                    key.append(id(obj.__code__))  # type: ignore[attr-defined]
                    is_specific = True
                else:
                    key.append(id(cls))
                    is_specific = is_specific or bool(specific(cls))
            key.sort()
            if not is_specific:
                key.append(-1 - component)
            found.append((tuple(key), members, retained))
        return found

    def _nodes_checked(self) -> list[object]:
        self._check()
        assert self._nodes is not None
        return self._nodes

    def _is_big(self, members: Sequence[int], big_members: int, big_edges: int) -> bool:
        """Many members, or more than ``big_edges`` references between them."""
        if len(members) >= big_members:
            return True
        off, tgt = self._off, self._tgt
        if sum(off[m + 1] - off[m] for m in members) <= big_edges:
            return False  # even counting references that leave the cycle
        inside = set(members)
        count = 0
        for node in members:
            count += sum(1 for succ in tgt[off[node] : off[node + 1]] if succ in inside)
            if count > big_edges:
                return True
        return False

    def close(self) -> None:
        """Drop the nodes."""
        self._nodes = None
