"""``explain(obj)``: why is this object still alive? Shortest holder paths from roots.

One pass builds a graph of the live heap (:func:`whyalive.roots.snapshot_heap`,
in C); the C reverse search marks the objects that can reach a target; a
breadth-first search from the roots (modules, classes, every thread's frames)
runs over that marked part only and stops once the targets are reached. No heap
scan per visited node, as a ``gc.get_referrers`` search would do.

When no root reaches a target, the references Python cannot see are counted
(``sys.getrefcount`` against the references found in the graph) and stated:
a C/C++ owner such as an autograd node, or a local of a running frame.
"""

from __future__ import annotations

import gc
import sys
import threading
import types
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import compress

from whyalive.analysis import _NodeTable, _variables_along, run_info
from whyalive import edges as ek
from whyalive.edges import EdgeName, name_node
from whyalive.errors import UsageError
from whyalive.graph import ObjectGraph
from whyalive.kinds import HeavyFacts, KindResolver
from whyalive.paths import NamedEdge, named_path
from whyalive.report import AliveObject, HolderPath, Report
from whyalive.roots import CLASS, FRAME, MODULE, HeapGraph, snapshot_heap

# How many BFS levels past the first path we keep looking for other holders.
_EXTRA_LEVELS = 2
_ROOT_ORDER = {MODULE: 0, CLASS: 1, FRAME: 2}
_GENERATOR_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
INVISIBLE_LOCALS = sys.version_info[:2] in ((3, 11), (3, 12))


@dataclass(frozen=True)
class Explanation:
    """Why one object is alive: holder paths from roots, or the blind spot that hides them.

    ``str()`` is the text explanation; :meth:`to_report` gives a
    :class:`~whyalive.Report` that every renderer reads.

    .. versionadded:: 0.1
    """

    report: Report

    @property
    def alive(self) -> AliveObject:
        """The explained object's entry."""
        return self.report.alive[0]

    @property
    def paths(self) -> list[str]:
        """Each holder path as one line: ``module m --.CACHE--> dict ... --> Tensor(...)``."""
        return [path_words(self.report, p) for p in self.alive.paths]

    def to_report(self) -> Report:
        """The explanation as a report with one :class:`~whyalive.report.AliveObject`."""
        return self.report

    def __str__(self) -> str:
        return self.report.render("text")


def path_words(report: Report, path: HolderPath) -> str:
    """``root --edge--> node --edge--> object`` in the labels of the report."""
    parts = [report.node(path.nodes[0]).label]
    parts.extend(f"--{e.name}--> {report.node(e.target).label}" for e in path.edges)
    return " ".join(parts)


def explain(obj: object, *, max_paths: int = 3) -> Explanation:
    """The shortest holder paths from roots to ``obj``, named in the user's terms.

    Roots are loaded modules (a path names the module and the variable), class
    objects, and every thread's frames (whyalive's own frames excluded). Objects
    hidden by ``gc.freeze()`` are found from the snapshot and marked on a path.

    .. versionadded:: 0.1
    """
    if not isinstance(max_paths, int) or max_paths < 1:
        raise UsageError(f"max_paths must be a positive int, not {max_paths!r}")
    targets = [obj]
    # Two references to obj are ours: this frame's argument and `targets`.
    report = explain_objects(targets, max_paths=max_paths, own_refs=2)
    return Explanation(report)


def explain_objects(
    targets: list[object],
    *,
    max_paths: int = 3,
    own_refs: int = 1,
    where: str | None = None,
    notes: Sequence[str] = (),
) -> Report:
    """One report with an :class:`AliveObject` per target, from a single heap graph.

    ``own_refs`` is how many references to each target the caller holds outside
    the heap graph's view (its list, its locals); they are not blamed on anyone.
    """
    resolver = KindResolver()
    all_notes = [*notes, *_state_notes()]
    graph = snapshot_heap(targets, resolver, own=(targets,))
    try:
        return _report(graph, resolver, max_paths, own_refs, where, all_notes)
    finally:
        graph.release()


def _state_notes() -> list[str]:
    notes = []
    if not gc.isenabled():
        notes.append(
            "Automatic garbage collection is disabled: unreachable cycles stay alive "
            "until gc.collect() runs."
        )
    frozen = gc.get_freeze_count()
    if frozen:
        notes.append(
            f"{frozen} objects are frozen (gc.freeze()); those reachable from the heap were "
            "followed and are marked on paths, the others are not visible."
        )
    others = threading.active_count() - 1
    if others > 0:
        notes.append(
            f"{others} other thread(s) ran while the heap was read: the heap may have "
            "changed under us, so a path can be stale."
        )
    return notes


def _report(
    graph: HeapGraph,
    resolver: KindResolver,
    max_paths: int,
    own_refs: int,
    where: str | None,
    notes: list[str],
) -> Report:
    mask = graph.reaching(graph.target_nodes)
    holders = _search_from_roots(graph, mask, max_paths)
    view = ObjectGraph(graph.nodes, graph.offsets, graph.targets, len(graph.nodes))
    facts: dict[int, HeavyFacts] = {}
    for node in graph.target_nodes:
        described = resolver.describe(graph.nodes[node])
        if described is not None:
            facts[node] = described
    table = _NodeTable(view, facts)
    alive: list[AliveObject] = []
    for target in graph.target_nodes:
        raw_paths = holders.get(target, [])
        root = note = None
        if not raw_paths:
            raw_paths, note = _invisible_holders(graph, target, own_refs)
        elif any(n in graph.frozen_range for p in raw_paths for n in p):
            note = "A path runs through objects frozen by gc.freeze()."
        paths = [_holder_path(table, view, _fold_class_dicts(graph, p)) for p in raw_paths]
        if paths and raw_paths[0][0] in graph.root_kind:
            root = _root_words(graph, raw_paths[0][0])
            _relabel_root(table, graph, raw_paths)
        obj = graph.nodes[target]
        fact = facts.get(target)
        alive.append(
            AliveObject(
                node_id=table.add(target),
                description=fact.description if fact else name_node(obj).label,
                nbytes=fact.nbytes if fact else _sizeof(obj),
                device=fact.device if fact else "",
                paths=tuple(paths),
                root=root,
                note=note,
            )
        )
    return Report(
        run=run_info(where), nodes=tuple(table.nodes), alive=tuple(alive), notes=tuple(notes)
    )


def _sizeof(obj: object) -> int:
    try:
        return int(sys.getsizeof(obj))
    except Exception:
        return 0


def _search_from_roots(graph: HeapGraph, mask: bytes, max_paths: int) -> dict[int, list[list[int]]]:
    """BFS from every root that can reach a target; paths end at distinct last holders."""
    excluded = graph.excluded
    roots = sorted(
        (n for n in graph.root_kind if mask[n] and n not in excluded),
        key=lambda n: _ROOT_ORDER[graph.root_kind[n]],
    )
    wanted = set(graph.target_nodes)
    parent: dict[int, int] = dict.fromkeys(roots, -1)
    depth: dict[int, int] = dict.fromkeys(roots, 0)
    last_holders: dict[int, list[int]] = {t: [] for t in wanted}
    for target in wanted & parent.keys():
        last_holders[target].append(-1)  # the target is a root itself
    queue = deque(roots)
    offsets, targets = graph.offsets, graph.targets
    stop_depth: int | None = None
    unreached = set(wanted) - parent.keys()
    while queue:
        node = queue.popleft()
        level = depth[node]
        if stop_depth is not None and level > stop_depth:
            break
        for succ in targets[offsets[node] : offsets[node + 1]]:
            if not mask[succ] or succ in excluded:
                continue
            if succ in wanted:
                found = last_holders[succ]
                if len(found) < max_paths and node not in found and node != succ:
                    found.append(node)
            if succ not in parent:
                parent[succ] = node
                depth[succ] = level + 1
                queue.append(succ)
                unreached.discard(succ)
        if not unreached and stop_depth is None:
            stop_depth = level + _EXTRA_LEVELS
            if all(len(v) >= max_paths for v in last_holders.values()):
                break
    paths: dict[int, list[list[int]]] = {}
    for target, found in last_holders.items():
        paths[target] = [_chain(parent, h) + [target] if h >= 0 else [target] for h in found]
    return paths


def _chain(parent: dict[int, int], node: int) -> list[int]:
    chain = [node]
    while parent[chain[-1]] != -1:
        chain.append(parent[chain[-1]])
    return chain[::-1]


def _invisible_holders(graph: HeapGraph, target: int, own_refs: int) -> tuple[list[list[int]], str]:
    """No root reaches ``target``: find where the chain of visible holders starts.

    Each object that can reach the target is checked for references the graph
    does not explain (``sys.getrefcount`` minus the references found in the
    graph minus our own). The nearest such object is shown as the top of a path.
    """
    mask = graph.reaching([target])
    members = [n for n in compress(range(len(mask)), mask) if n not in graph.excluded]
    indegree = dict.fromkeys(members, 0)
    offsets, targets = graph.offsets, graph.targets
    for node in members:
        for succ in targets[offsets[node] : offsets[node + 1]]:
            if succ in indegree:
                indegree[succ] += 1
    unseen: dict[int, int] = {}
    for node in members:
        mine = 1 + (own_refs if node == target else 0)  # `graph.nodes` holds each once
        extra = sys.getrefcount(graph.nodes[node]) - 1 - mine - indegree[node]
        if 0 < extra < 1 << 30:  # immortal objects report huge counts
            unseen[node] = extra
    tops = _nearest(graph, members, unseen, target)
    if not tops:
        return [], (
            "No root reaches it and every reference to it is accounted for: it is "
            "unreachable (cyclic garbage waiting for a collection)."
        )
    top = tops[0]
    count = unseen[top]
    top_label = name_node(graph.nodes[top]).label
    refs = f"{count} reference{'s' if count != 1 else ''}"
    if top == target:
        where = "the object itself has"
    else:
        where = f"the top of the chain, {top_label}, has"
    owner = _autograd_owner(graph, tops)
    if owner is not None:
        head = f"held by a non-Python owner: {owner}"
    else:
        head = "held by a non-Python owner (a C/C++ object)"
        if INVISIBLE_LOCALS:
            head += " or by a local variable of a running function (not visible on Python 3.11-3.12)"
    note = (
        f"{head}. No Python referrer reaches it from a root; {where} {refs} from outside "
        "Python objects (sys.getrefcount)."
    )
    return [tops], note


def _nearest(graph: HeapGraph, members: list[int], unseen: dict[int, int], target: int) -> list[int]:
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


def _autograd_owner(graph: HeapGraph, path: list[int]) -> str | None:
    """``autograd node MulBackward0``: the likely C++ owner when a tensor on the path has one."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for node in reversed(path):
        obj = graph.nodes[node]
        if not isinstance(obj, torch._C.TensorBase):
            continue
        try:
            with torch._C.DisableTorchFunctionSubclass():
                grad_fn = torch._C.TensorBase.grad_fn.__get__(obj)
        except Exception:
            continue
        if grad_fn is not None:
            return (
                f"autograd node {type(grad_fn).__name__} (C++), whose hooks or saved "
                "tensors refer back to this chain"
            )
    return None


def _fold_class_dicts(graph: HeapGraph, path: list[int]) -> list[int]:
    """Drop a class's own ``__dict__`` from a path, so it reads ``class C --.attr--> x``."""
    out: list[int] = []
    for position, node in enumerate(path):
        if out and graph.root_kind.get(out[-1]) == CLASS and position + 1 < len(path):
            cls = graph.nodes[out[-1]]
            proxy = type.__dict__["__dict__"].__get__(cls)
            if any(ref is graph.nodes[node] for ref in gc.get_referents(proxy)):
                continue
        out.append(node)
    return out


def _holder_path(table: _NodeTable, view: ObjectGraph, path: list[int]) -> HolderPath:
    nodes, edges = named_path(view, path)
    edges = [_renamed_local(view, e) for e in edges]
    for node, variable in zip(nodes[1:], _variables_along(edges), strict=True):
        table.add(node, variable)
    return HolderPath(
        table.add(nodes[-1]), tuple(table.add(n) for n in nodes), tuple(table.edge(e) for e in edges)
    )


def _module_name(module: object) -> str:
    try:
        name = object.__getattribute__(module, "__dict__").get("__name__")
    except Exception:
        name = None
    return name if type(name) is str else "?"


def _root_words(graph: HeapGraph, node: int) -> str:
    kind = graph.root_kind[node]
    obj = graph.nodes[node]
    if kind == MODULE:
        return f"module `{_module_name(obj)}` (a global variable)"
    if kind == CLASS:
        return f"class `{_class_name(obj)}` (a class attribute)"
    named = name_node(obj)
    thread = graph.root_words.get(node, "a thread")
    return f"{named.label} ({named.location}), running in thread {thread}"


def _class_name(cls: object) -> str:
    try:
        module = type.__dict__["__module__"].__get__(cls)
        qualname = type.__dict__["__qualname__"].__get__(cls)
    except Exception:
        return "?"
    return f"{module}.{qualname}" if module != "builtins" else str(qualname)


def _relabel_root(table: _NodeTable, graph: HeapGraph, raw_paths: list[list[int]]) -> None:
    """Modules read as ``module pkg.mod`` (the generic node name says only "module object")."""
    for path in raw_paths:
        node = path[0]
        if graph.root_kind.get(node) == MODULE and node in table.ids:
            report_id = table.ids[node]
            label = f"module {_module_name(graph.nodes[node])}"
            table.nodes[report_id] = replace(table.nodes[report_id], label=label)


def _renamed_local(view: ObjectGraph, edge: NamedEdge) -> NamedEdge:
    """Name a suspended generator's local that :func:`name_edge` calls "evaluation stack".

    On 3.11+ a generator's referents list its code object twice (``gi_code``,
    then the frame's ``f_code``); the fast locals follow the *last* one.
    """
    source = view.nodes[edge.source]
    if type(source) not in _GENERATOR_TYPES or edge.name.kind not in (ek.INTERNAL, ek.UNKNOWN):
        return edge
    code = getattr(source, "gi_code", None) or getattr(source, "cr_code", None)
    if type(code) is not types.CodeType:
        return edge
    referents = gc.get_referents(source)
    starts = [i for i, ref in enumerate(referents) if ref is code]
    if not starts:
        return edge
    tail = referents[starts[-1] + 1 :]
    names = code.co_varnames + code.co_cellvars + code.co_freevars
    target = view.nodes[edge.target]
    position = next((i for i, ref in enumerate(tail) if ref is target), None)
    if position is None or position >= len(names):
        return edge
    unbound = len(names) - min(len(tail), len(names))
    candidates = names[position : position + unbound + 1]
    words = candidates[0] if len(candidates) == 1 else f"(one of {', '.join(candidates)})"
    return NamedEdge(edge.source, edge.target, EdgeName(ek.LOCAL, f"local {words}"))
