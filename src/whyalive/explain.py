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
import weakref
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import compress

from whyalive import edges as ek
from whyalive.analysis import _NodeTable, _variables_along, run_info
from whyalive.edges import EdgeName, name_node
from whyalive.errors import UsageError
from whyalive.graph import ObjectGraph
from whyalive.kinds import HeavyFacts, KindResolver
from whyalive.paths import NamedEdge, named_path
from whyalive.report import AliveObject, HolderPath, Report
from whyalive.roots import CLASS, FRAME, MODULE, HeapGraph, heavy_census, snapshot_heap

# How many BFS levels past the first path we keep looking for other holders.
_EXTRA_LEVELS = 1
# Past this many edge-list scans the reverse search gives way to one forward search
# (a deep and wide ancestry); a scan is one bytes.find over the raw edge list.
_MAX_SCANS = 60
# Up to this frontier size, one bytes.find scan per node beats one byte-mask gather.
_SCAN_PER_NODE = 6
_ROOT_ORDER = {MODULE: 0, CLASS: 1, FRAME: 2}
_type_subclasscheck = type.__subclasscheck__
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
    given: object = max_paths  # callers' annotations cannot be trusted
    if not isinstance(given, int) or given < 1:
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
    holders: dict[int, list[list[int]]] = {}
    for target in graph.target_nodes:
        found = _reverse_search(graph, target, max_paths)
        if found is None:  # a long chain: one forward search over the marked part instead
            holders.update(_forward_search(graph, graph.reaching([target]), max_paths))
        else:
            holders[target] = found
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
        if paths and graph.root_kind[raw_paths[0][0]]:
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


def _forward_search(graph: HeapGraph, mask: bytes, max_paths: int) -> dict[int, list[list[int]]]:
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


def _reverse_search(graph: HeapGraph, target: int, max_paths: int) -> list[list[int]] | None:
    """Level-by-level search from ``target`` back to the nearest roots.

    Each level finds the holders of the whole frontier in one C-speed scan of the
    edge list (``bytes.find`` for a small frontier, a byte-mask gather for a big
    one). Roots are not expanded. Returns None past ``_MAX_SCANS`` scans.
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
        more = _reverse_search(graph, holder, 1)
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
    if len(frontier) <= _SCAN_PER_NODE:
        edges: list[int] = []
        for node in frontier:
            edges.extend(graph.edges_into(node))
        edges.sort()
    else:
        marked = bytearray(len(offsets))
        for node in frontier:
            marked[node] = 1
        edges = list(compress(range(len(targets)), map(marked.__getitem__, targets)))
    return [(bisect_right(offsets, e) - 1, targets[e]) for e in edges]


def _direct_holders(graph: HeapGraph, target: int, mask: bytes, limit: int) -> list[int]:
    """Up to ``limit`` + 1 nodes with a reference to ``target`` (C-speed scans of the edges)."""
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


def _invisible_holders(graph: HeapGraph, target: int, own_refs: int) -> tuple[list[list[int]], str]:
    """No root reaches ``target``: find where the chain of visible holders starts.

    Each object that can reach the target is checked for references the graph
    does not explain (``sys.getrefcount`` minus the references found in the
    graph minus our own). The nearest such object is shown as the top of a path.
    """
    mask = graph.reaching([target])
    members = [n for n in compress(range(len(mask)), mask) if not graph.is_excluded(n)]
    # `graph.nodes` holds the head objects (targets, frames) twice: count every copy.
    member_ids = {id(graph.nodes[n]) for n in members}
    copies = Counter(filter(member_ids.__contains__, map(id, graph.nodes)))
    indegree = dict.fromkeys(members, 0)
    offsets, targets = graph.offsets, graph.targets
    for node in members:
        for succ in targets[offsets[node] : offsets[node + 1]]:
            if succ in indegree:
                indegree[succ] += 1
    unseen: dict[int, int] = {}
    counted: set[int] = set()
    for node in members:
        key = id(graph.nodes[node])
        if key in counted:
            continue
        counted.add(key)
        mine = copies[key] + (own_refs if node == target else 0)
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
    where = "the object itself has" if top == target else f"the top of the chain, {top_label}, has"
    owner = _autograd_owner(graph, tops)
    if owner is not None:
        head = f"held by a non-Python owner: {owner}"
    else:
        head = "held by a non-Python owner (a C/C++ object)"
        if INVISIBLE_LOCALS:
            head += (
                " or by a local variable of a running function (not visible on Python 3.11-3.12)"
            )
    note = (
        f"{head}. No Python referrer reaches it from a root; {where} {refs} from outside "
        "Python objects (sys.getrefcount)."
    )
    return [tops], note


def _nearest(
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


def _autograd_owner(graph: HeapGraph, path: list[int]) -> str | None:
    """``autograd node MulBackward0``: the likely C++ owner when a tensor on the path has one.

    Read through ``TensorBase`` descriptors with subclass torch functions off, so no
    user ``__torch_function__`` or ``__getattr__`` runs.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    base = torch._C.TensorBase
    for node in reversed(path):
        obj = graph.nodes[node]
        if not _type_subclasscheck(base, type(obj)):
            continue
        try:
            with torch._C.DisableTorchFunctionSubclass():
                grad_fn = base.grad_fn.__get__(obj)
                leaf = bool(base.requires_grad.__get__(obj)) and bool(base.is_leaf.__get__(obj))
        except Exception:
            continue
        if grad_fn is not None:
            return (
                f"autograd node {type(grad_fn).__name__} (C++), whose hooks or saved "
                "tensors refer back to this chain"
            )
        if leaf:
            return (
                "autograd node AccumulateGrad (C++) of a graph that uses this leaf tensor, "
                "kept alive by the graph's output"
            )
    return None


def _fold_class_dicts(graph: HeapGraph, path: list[int]) -> list[int]:
    """Drop a class's own ``__dict__`` from a path, so it reads ``class C --.attr--> x``."""
    out: list[int] = []
    for position, node in enumerate(path):
        if out and graph.root_kind[out[-1]] == CLASS and position + 1 < len(path):
            try:
                proxy = type.__dict__["__dict__"].__get__(graph.nodes[out[-1]])
            except Exception:  # a half-built or hostile class: keep its dict on the path
                proxy = None
            if proxy is not None and any(
                ref is graph.nodes[node] for ref in gc.get_referents(proxy)
            ):
                continue
        out.append(node)
    return out


def _holder_path(table: _NodeTable, view: ObjectGraph, path: list[int]) -> HolderPath:
    nodes, edges = named_path(view, path)
    edges = [_renamed_local(view, e) for e in edges]
    for node, variable in zip(nodes[1:], _variables_along(edges), strict=True):
        table.add(node, variable)
    return HolderPath(
        table.add(nodes[-1]),
        tuple(table.add(n) for n in nodes),
        tuple(table.edge(e) for e in edges),
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
        if graph.root_kind[node] == MODULE and node in table.ids:
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


class HeavyCensus:
    """Heavy objects alive before a block, to tell which ones the block left alive.

    The baseline holds no strong reference: a weak reference where the type
    allows it, else the type and size (``bytes`` cannot be weakly referenced;
    an id reused by a same-sized new buffer is then taken for the old one,
    which can hide a finding but never invent one).
    """

    def __init__(self) -> None:
        self._before: dict[int, object] = {}

    def begin(self) -> None:
        """Record the heavy objects alive now (one graph pass over the heap)."""
        resolver = KindResolver()
        for obj in heavy_census(resolver):
            self._before[id(obj)] = _mark(obj)

    def _existed(self, obj: object) -> bool:
        mark = self._before.get(id(obj))
        if mark is None:
            return False
        if type(mark) is weakref.ref:
            return mark() is obj
        return mark == (type(obj), _sizeof(obj))

    def finish(self, report: Report, *, min_bytes: int = 0, max_paths: int = 3) -> Report:
        """``report`` with an :class:`AliveObject` for each heavy object the block left alive."""
        resolver = KindResolver()
        new = [
            obj
            for obj in heavy_census(resolver)
            if not self._existed(obj) and _nbytes(resolver, obj) >= min_bytes
        ]
        self._before.clear()
        if not new:
            return report
        found = explain_objects(new, max_paths=max_paths, own_refs=1)
        del new
        return merge_alive(report, found)


def _mark(obj: object) -> object:
    """A weak reference, or (type, size) for types that cannot be weakly referenced."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return (type(obj), _sizeof(obj))


def _nbytes(resolver: KindResolver, obj: object) -> int:
    facts = resolver.describe(obj)
    return facts.nbytes if facts is not None else 0


def merge_alive(report: Report, found: Report) -> Report:
    """``report`` plus the still-alive objects of ``found`` (node ids shifted after its own)."""
    shift = len(report.nodes)
    nodes = tuple(replace(n, node_id=n.node_id + shift) for n in found.nodes)

    def moved(path: HolderPath) -> HolderPath:
        return HolderPath(
            path.heavy_node + shift,
            tuple(n + shift for n in path.nodes),
            tuple(replace(e, source=e.source + shift, target=e.target + shift) for e in path.edges),
        )

    alive = tuple(
        replace(a, node_id=a.node_id + shift, paths=tuple(moved(p) for p in a.paths))
        for a in found.alive
    )
    notes = tuple(n for n in found.notes if n not in report.notes)
    return replace(
        report,
        nodes=report.nodes + nodes,
        alive=report.alive + alive,
        notes=report.notes + notes,
    )
