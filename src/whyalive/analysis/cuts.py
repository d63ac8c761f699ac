"""The cut: which reference(s) to remove, ranked by what the user can undo, and its proof.

Cut as docs/architecture.md, "Words", defines it. A cut is a claim: :func:`prove_cut`
removes exactly its references from the captured graph and checks that every heavy
object the cycle held is freed; :func:`choose_cut` reports the first candidate the
proof holds for, in rank order (:func:`cut_rank`). Both cost what one pass over the
cycle's references costs.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from whyalive.analysis.edges import EdgeName
from whyalive.analysis.paths import CUT_SCORE, MAX_VERIFIED_EDGES, CycleView, NamedEdge
from whyalive.words import edge_kinds as ek

# Attribute names (leading underscores aside) that point back toward an owner: cut these
# before the owner's own link.
BACK_NAMES = frozenset(
    (
        *("parent", "owner", "up", "root", "module", "model"),
        *("prev", "previous", "back", "manager", "master", "container"),
    )
)
# Attribute names that hold a container's payload (a list node's `.value`): the structure's
# own, often only, reference to what it holds. Cut them last among attributes: weakening
# one would free what only the structure keeps.
PAYLOAD_NAMES = frozenset(
    ("value", "val", "data", "item", "payload", "element", "elem", "obj", "object", "content")
)


def _attribute_name(name: EdgeName) -> str:
    attribute = name.name.lstrip(".")
    if attribute.startswith("_") and "__" in attribute[1:]:
        attribute = attribute[1:].partition("__")[2]  # a private (mangled) name
    return attribute.lstrip("_").lower()


def is_payload_reference(name: EdgeName) -> bool:
    """``.value``, ``._data``: an attribute whose name says it holds a container's payload."""
    return name.kind == ek.ATTRIBUTE and _attribute_name(name) in PAYLOAD_NAMES


# Words that say "back to the owner" as the first or last part of a longer name
# (`parent_run`, `root_node`, `run_parent`); not `module`/`model`, which start many names.
_BACK_PARTS = frozenset(("parent", "owner", "root", "prev", "previous", "manager", "master"))
_BACK_KEYS = frozenset(("parent", "owner", "prev", "previous", "manager", "master"))


def is_back_reference(name: EdgeName) -> bool:
    """``.parent``, ``._owner``, ``._Dict__parent``, ``.parent_run``: an attribute whose name
    says it points back to an owner; ``['parent']``, a string key that says so in a tree of
    dicts (not ``['model']`` or ``['root']``, which a config or a checkpoint holds forward)."""
    if name.kind == ek.KEY:
        key = name.name[2:-2].lower() if name.name[:2] in ("['", '["') else ""
        parts = key.split("_")
        return key in _BACK_KEYS or parts[0] in _BACK_KEYS or parts[-1] in _BACK_KEYS
    if name.kind != ek.ATTRIBUTE:
        return False
    attribute = _attribute_name(name)
    parts = attribute.split("_")
    return attribute in BACK_NAMES or parts[0] in _BACK_PARTS or parts[-1] in _BACK_PARTS


def is_registry_attribute(name: EdgeName) -> bool:
    """``._forward_hooks``: an attribute holding a registry of hooks, which one entry of
    (undone with its handle) should be cut instead of the whole registry."""
    return name.kind == ek.ATTRIBUTE and name.name.lower().endswith("hooks")


def cut_rank(edge: NamedEdge) -> int:
    """How good a cut ``edge`` makes: what the user wrote and can undo ranks high; a back
    reference before the owner's link; a container's payload (``.value``) after other
    attributes; a hook registry below one entry of it."""
    if is_registry_attribute(edge.name):
        return CUT_SCORE[ek.INDEX] - 5
    if is_back_reference(edge.name):
        return CUT_SCORE[ek.ATTRIBUTE] + 5
    if is_payload_reference(edge.name):
        return CUT_SCORE[ek.ATTRIBUTE] - 6  # below a local, above a dict entry
    return edge.score


def _left_alive(nodes: list[int], edges: list[NamedEdge], removed: set[NamedEdge]) -> set[int]:
    """Nodes still on a loop, or reachable from one, once ``removed`` is gone (Kahn peeling)."""
    indegree = dict.fromkeys(nodes, 0)
    out: dict[int, list[int]] = defaultdict(list)
    for edge in edges:
        if edge in removed or edge.source not in indegree or edge.target not in indegree:
            continue
        out[edge.source].append(edge.target)
        indegree[edge.target] += 1
    return _peeled(indegree, out)


def _peeled(indegree: dict[int, int], out: dict[int, list[int]]) -> set[int]:
    """What Kahn peeling leaves: the nodes on a loop or below one (``indegree`` is consumed)."""
    queue = deque(node for node, degree in indegree.items() if degree == 0)
    freed: set[int] = set()
    while queue:
        node = queue.popleft()
        freed.add(node)
        for succ in out.get(node, ()):
            indegree[succ] -= 1
            if indegree[succ] == 0:
                queue.append(succ)
    return set(indegree) - freed


def _is_acyclic(nodes: list[int], edges: list[NamedEdge], removed: set[NamedEdge]) -> bool:
    return not _left_alive(nodes, edges, removed)


def bytes_freed(view: CycleView, removed: set[NamedEdge]) -> int:
    """Bytes of heavy objects reference counting frees once ``removed`` is gone.

    A heavy object stays when its holder path starts at a node that is still on
    (or below) a loop; each heavy object is counted once. A quick estimate on the
    view, for ranking; :func:`prove_cut` settles a cut on the captured graph.
    """
    alive = _left_alive(view.shown, view.edges, removed)
    shown = set(view.shown)
    kept: dict[int, bool] = {}
    for nodes, _ in view.holder_paths:
        start = nodes[0]
        stays = start in alive or start not in shown
        kept[nodes[-1]] = kept.get(nodes[-1], False) or stays
    # A path to the first of many siblings stands for them all.
    freed = (node for heavy, stays in kept.items() if not stays for node in view.held_with(heavy))
    return sum(view.heavy_bytes.get(node, 0) for node in freed)


@dataclass(frozen=True)
class CutProof:
    """What removing exactly a cut's references from the captured graph does.

    ``stays`` are the heavy objects the cycle held that are still held afterwards
    (by a loop the cut leaves); the cut is *proven* when it was checked and none stays.
    """

    checked: bool = False
    frees_cycle: bool = False
    """Nothing of the cycle is left on a loop (else a loop of what the cut did not touch
    remains, such as a class and its own namespace)."""
    stays: tuple[int, ...] = ()

    @property
    def proven(self) -> bool:
        """Checked on the captured graph, and every heavy object the cycle held is freed."""
        return self.checked and not self.stays


def prove_cut(view: CycleView, cut: Sequence[NamedEdge]) -> CutProof:
    """Remove the cut's references from the captured graph and see what reference counting frees.

    Works on the raw references between the cycle's members (instance dicts and closure
    tuples are separate objects there): each cut reference is its raw reference from
    its holder or the holder's owned part. A holder that refers to the target more than
    once (two attributes naming one object) keeps the target: the proof then fails
    rather than claim it. Linear in the cycle's references, plus what a remaining loop
    reaches when one remains.
    """
    if not cut:
        return CutProof()
    graph = view.graph
    removed = _raw_references(view, cut)
    if removed is None:
        return CutProof(True, False, tuple(sorted(view.heavy_bytes)))
    if view.raw_out is None:
        inside = set(view.members)
        view.raw_out = {
            node: [succ for succ in graph.successors(node) if succ in inside]
            for node in view.members
        }
    indegree = dict.fromkeys(view.members, 0)
    out: dict[int, list[int]] = defaultdict(list)
    for node, successors in view.raw_out.items():
        for succ in successors:
            if (node, succ) not in removed:
                out[node].append(succ)
                indegree[succ] += 1
    alive = _peeled(indegree, out)
    if not alive:
        return CutProof(True, True, ())
    return CutProof(True, False, _heavy_reached(view, alive, removed))


def _raw_references(view: CycleView, cut: Sequence[NamedEdge]) -> set[tuple[int, int]] | None:
    """The (holder, target) pairs of the captured graph that the cut's references are, or
    None when a holder refers to a target more often than the cut names it."""
    graph = view.graph
    parts: dict[int, list[int]] = defaultdict(list)
    for part, owner in view.owner_of.items():
        parts[owner].append(part)
    named: dict[tuple[int, int], int] = defaultdict(int)
    for edge in cut:
        named[edge.source, edge.target] += 1
    removed: set[tuple[int, int]] = set()
    for (source, target), count in named.items():
        found = 0
        for holder in (source, *parts.get(source, ())):
            # The captured references, as traversed at capture time (duplicates kept).
            here = sum(1 for succ in graph.successors(holder) if succ == target)
            if here:
                found += here
                removed.add((holder, target))
        if found != count:
            return None
    return removed


def _heavy_reached(
    view: CycleView, alive: set[int], removed: set[tuple[int, int]]
) -> tuple[int, ...]:
    """The heavy objects of the cycle that the objects left alive still reach (one BFS)."""
    wanted = set(view.heavy_bytes)
    graph = view.graph
    seen = set(alive)
    queue = deque(alive)
    found: list[int] = []
    while queue and len(found) < len(wanted):
        node = queue.popleft()
        for succ in graph.successors(node):
            if succ in seen or (node, succ) in removed:
                continue
            seen.add(succ)
            queue.append(succ)
            if succ in wanted:
                found.append(succ)
    return tuple(sorted(found))


def _prune(view: CycleView, chosen: list[NamedEdge]) -> list[NamedEdge]:
    """Drop references the cut does not need, worst-ranked first, so the cut is minimal."""
    kept = list(chosen)
    for edge in reversed(chosen):
        trial = [e for e in kept if e is not edge]
        if trial and _is_acyclic(view.shown, view.edges, set(trial)):
            kept = trial
    return kept


def _frees_heavy(view: CycleView, cut: list[NamedEdge]) -> bool:
    """Whether ``cut`` frees every heavy object while a loop it did not touch remains."""
    total = bytes_freed(view, set(view.edges))
    return bool(total) and bytes_freed(view, set(cut)) == total


def choose_cut(
    view: CycleView, preferred: list[NamedEdge] | None = None
) -> tuple[list[NamedEdge], CutProof]:
    """The reference(s) to remove so reference counting frees the cycle, and their proof.

    Candidates come in rank order and the first one :func:`prove_cut` proves wins. A
    pattern's preferred references come first (all of them, when together they free
    the cycle: a tree's every ``.parent``; or when they free every heavy object and
    only a loop the user cannot remove is left, a class and its own namespace). Then
    single references ranked by :func:`cut_rank` (what the user wrote and can undo:
    closure variables, back references, attributes, locals, entries; interpreter
    internals last) and, among equals, the one freeing more bytes; then the best
    references removed greedily and pruned to a minimal set. When nothing is proven
    the best candidate is returned with the proof that says which heavy objects stay.
    """
    first = [edge for edge in preferred or [] if edge in view.edge_set]
    if not view.edges:
        return first, prove_cut(view, first)
    if len(view.edges) > MAX_VERIFIED_EDGES:
        first_edge = first[0] if first else max(view.edges, key=cut_rank)
        return [first_edge], CutProof()
    tried: list[tuple[list[NamedEdge], CutProof]] = []

    def proven(cut: list[NamedEdge]) -> bool:
        proof = prove_cut(view, cut)
        tried.append((cut, proof))
        return proof.proven

    if first and _is_acyclic(view.shown, view.edges, set(first)):
        pruned = _prune(view, first)
        if proven(pruned):
            return tried[-1]
    elif first and _frees_heavy(view, first) and proven(first):
        return tried[-1]
    chosen_first = set(first)
    others = [edge for edge in view.edges if edge not in chosen_first]
    freed = {edge: bytes_freed(view, {edge}) for edge in others}
    ranked = first + sorted(others, key=lambda edge: (-cut_rank(edge), -freed[edge]))
    for edge in ranked:
        if _is_acyclic(view.shown, view.edges, {edge}) and proven([edge]):
            return tried[-1]
    removed: set[NamedEdge] = set()
    chosen: list[NamedEdge] = []
    for edge in ranked:
        removed.add(edge)
        chosen.append(edge)
        if _is_acyclic(view.shown, view.edges, removed):
            break
    if proven(_prune(view, chosen)):
        return tried[-1]
    return min(tried, key=lambda item: len(item[1].stays))


def proven_alternatives(
    view: CycleView, taken: Sequence[NamedEdge], limit: int = 6
) -> list[tuple[list[NamedEdge], CutProof]]:
    """Other single references the user's code made that the proof frees the cycle without,
    best first: what the fix falls back to when the chosen cut has no mechanical edit."""
    if len(view.edges) > MAX_VERIFIED_EDGES:
        return []
    skip = set(taken)
    ranked = sorted(
        (e for e in view.edges if e not in skip and e.name.kind in ek.USER_KINDS),
        key=lambda edge: -cut_rank(edge),
    )
    found: list[tuple[list[NamedEdge], CutProof]] = []
    for edge in ranked:
        proof = prove_cut(view, [edge])
        if proof.proven:
            found.append(([edge], proof))
            if len(found) >= limit:
                break
    return found
