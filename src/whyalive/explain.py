"""``explain(obj)``: why is this object still alive? Shortest holder paths from roots.

One pass builds a graph of the live heap (:func:`whyalive.graph.heap.snapshot_heap`,
in C). A search from the object back to the nearest roots (modules, classes,
every thread's frames) then finds the holders of a whole level at once, with one
C-speed scan of the edge list (:func:`whyalive.analysis.roots.reverse_search`); a deep and
wide ancestry switches to one forward search from the roots over the part of the
heap that can reach the object. No heap scan per visited node, as a
``gc.get_referrers`` search (objgraph) does.

When no root reaches a target, the references Python cannot see are counted
(``sys.getrefcount`` against the references found in the graph) and stated:
a C/C++ owner such as an autograd node, or a local of a running frame.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import compress
from typing import Any

from whyalive.analysis import roots
from whyalive.analysis.edge_namer import EdgeNamer
from whyalive.analysis.node_names import name_node
from whyalive.analysis.paths import named_path
from whyalive.errors import UsageError
from whyalive.graph import ObjectGraph
from whyalive.graph.core import announce_implementation
from whyalive.graph.heap import CLASS, MODULE, HeapGraph, snapshot_heap, user_freeze_count
from whyalive.guarded import sizeof
from whyalive.kinds import HeavyFacts, KindResolver
from whyalive.report import AliveObject, Report
from whyalive.report.builder import NodeTable, holder_path_record
from whyalive.report.displays import display
from whyalive.report.pipeline import with_uncollectable_loops
from whyalive.report.run_info import run_info
from whyalive.words import path_words

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

    def __repr__(self) -> str:
        return f"<whyalive.Explanation: {display('explanation_line', self.report)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return display("report_html", self.report)


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
    announce_implementation()
    resolver = KindResolver()
    all_notes = [*notes, *_state_notes()]
    graph = snapshot_heap(targets, resolver, own=(targets,))
    unrooted: dict[int, object] = {}
    try:
        report = _report(graph, resolver, max_paths, own_refs, where, all_notes, unrooted)
    finally:
        graph.release()
    if not unrooted:
        return report
    return with_uncollectable_loops(report, targets, unrooted, own_refs, where)


def _state_notes() -> list[str]:
    notes = []
    if not gc.isenabled():
        notes.append(
            "Automatic garbage collection is disabled: unreachable cycles stay alive "
            "until gc.collect() runs."
        )
    frozen = user_freeze_count()
    if frozen:
        notes.append(
            f"{frozen} objects are frozen (gc.freeze()); those reachable from the heap were "
            "followed and are marked on paths, the others are not visible."
        )
    others = _user_threads()
    if others > 0:
        notes.append(
            f"{others} other thread(s) of your program were running while whyalive read "
            "the heap; if they changed these objects, a path shown may be out of date."
        )
    return notes


# Threads of a kernel or console that never touch the user's objects (Jupyter's
# heartbeat, I/O and control threads, IPython's history saver, a debugger's).
_MACHINERY = tuple(
    f"{os.sep}{name}{os.sep}"
    for name in ("ipykernel", "IPython", "jupyter_client", "zmq", "tornado", "debugpy", "whyalive")
)


def _user_threads() -> int:
    """Other threads that run the program's own code (not an interpreter's or kernel's).

    A thread is judged by the code its ``run`` started in: the outermost frame outside
    ``threading``.
    """
    frames = sys._current_frames()
    # This thread's frame refers to this function's locals: holding it here would keep
    # the caller's frames (and the object being explained) alive in a cycle.
    del frames[threading.get_ident()]
    count = 0
    try:
        for top in frames.values():
            start = None
            walk: types.FrameType | None = top
            while walk is not None:
                if not walk.f_code.co_filename.endswith(f"{os.sep}threading.py"):
                    start = walk.f_code.co_filename
                walk = walk.f_back
            if start is None or not any(part in start for part in _MACHINERY):
                count += 1
    finally:
        frames.clear()
    return count


def _report(
    graph: HeapGraph,
    resolver: KindResolver,
    max_paths: int,
    own_refs: int,
    where: str | None,
    notes: list[str],
    unrooted: dict[int, object],
) -> Report:
    """The explanation; what can reach a target no root reaches goes into ``unrooted``."""
    holders: dict[int, list[list[int]]] = {}
    shared = {
        n: w for n in graph.target_nodes if (w := roots.shared_by_interpreter(graph.nodes[n]))
    }
    for target in (t for t in graph.target_nodes if t not in shared):
        found = roots.reverse_search(graph, target, max_paths)
        if found is None:  # a long chain: one forward search over the marked part instead
            holders.update(roots.forward_search(graph, graph.reaching([target]), max_paths))
        else:
            holders[target] = found
    view = ObjectGraph(graph.nodes, graph.offsets, graph.targets, len(graph.nodes))
    facts: dict[int, HeavyFacts] = {}
    for node in graph.target_nodes:
        described = resolver.describe(graph.nodes[node])
        if described is not None:
            facts[node] = described
    table = NodeTable(view, facts)
    namer = EdgeNamer()  # the census explains many objects held by one container
    alive: list[AliveObject] = []
    hidden = False
    for target in graph.target_nodes:
        raw_paths = holders.get(target, [])
        root, note = None, shared.get(target)
        if note is None and not raw_paths:
            raw_paths, note = _invisible_holders(graph, target, own_refs)
            hidden = True
        elif note is None and any(n in graph.frozen_range for p in raw_paths for n in p):
            note = "A path runs through objects frozen by gc.freeze()."
        paths = [
            holder_path_record(table, *named_path(view, _fold_class_dicts(graph, p), namer))
            for p in raw_paths
        ]
        if paths and graph.root_kind[raw_paths[0][0]]:
            root = _root_words(graph, raw_paths[0][0])
            _relabel_root(table, graph, raw_paths)
        obj = graph.nodes[target]
        fact = facts.get(target)
        alive.append(
            AliveObject(
                node_id=table.add(target),
                description=fact.description if fact else name_node(obj).label,
                nbytes=fact.nbytes if fact else sizeof(obj),
                device=fact.device if fact else "",
                paths=tuple(paths),
                root=root,
                note=note,
            )
        )
    if hidden:  # after every reference count above was read: the dict holds references
        unrooted.update(graph.unrooted())
    return Report(
        run=run_info(where), nodes=tuple(table.nodes), alive=tuple(alive), notes=tuple(notes)
    )


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
    targets_here = set(graph.target_nodes)
    for node in members:
        key = id(graph.nodes[node])
        if key in counted:
            continue
        counted.add(key)
        # A target is also held by our own: the caller's (own_refs) and the snapshot's head list.
        mine = copies[key] + (own_refs + 1 if node in targets_here else 0)
        extra = sys.getrefcount(graph.nodes[node]) - 1 - mine - indegree[node]
        if 0 < extra < 1 << 30:  # immortal objects report huge counts
            unseen[node] = extra
    tops = roots.nearest_path(graph, members, unseen, target)
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


def _relabel_root(table: NodeTable, graph: HeapGraph, raw_paths: list[list[int]]) -> None:
    """Modules read as ``module pkg.mod`` (the generic node name says only "module object")."""
    for path in raw_paths:
        node = path[0]
        if graph.root_kind[node] == MODULE and node in table.ids:
            report_id = table.ids[node]
            label = f"module {_module_name(graph.nodes[node])}"
            table.nodes[report_id] = replace(table.nodes[report_id], label=label)
