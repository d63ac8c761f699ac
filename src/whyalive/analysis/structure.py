"""Big cycles read as structures: what they are made of, and the reference name that frees them.

A tree with parent pointers, a doubly linked list or a ring of thousands of
objects is one strongly connected component. Listing its references, or
trying every single reference as a cut, would cost time quadratic in its size
and tell the user nothing; what the user can change is one *line of code*: the
attribute, key or closure variable that every link of the structure shares.

The work is linear: the C core sorts the component's references into classes
(source type, target type, position, degree); a few sample references of each
class are named in Python; a candidate name is checked by removing every
reference of that name and peeling the component in C. Only the loop that is
shown is named in full, and a long loop keeps just its two ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from whyalive.analysis.cuts import is_back_reference, is_payload_reference
from whyalive.analysis.edges import EdgeName, is_owned_part, name_edge, names_of
from whyalive.analysis.paths import CUT_SCORE, NamedEdge, instance_of_dict, named_path
from whyalive.graph import ObjectGraph
from whyalive.graph import core as graphcore
from whyalive.guarded import by_identity, type_module, type_qualname
from whyalive.words import edge_kinds as ek

STRUCTURE_MIN_MEMBERS = 200
"""Components with at least this many objects are explained as structures."""

_SAMPLES = 8  # references named per class
_NAMED_DEGREE = 256  # a holder with more references names a repeated target by its first
_MAX_TRIES = 8  # reference names tried as cuts, each one linear peeling
_LOOP_HEAD = 4  # raw hops of a long loop shown before the gap...
_LOOP_TAIL = 2  # ...and after it
_LOOP_FULL = 8  # a loop this short (in raw hops) is shown whole


@dataclass
class Link:
    """One reference name that many references of the structure share."""

    name: EdgeName
    count: int = 0
    classes: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    """Exact references of this name in classes whose samples disagreed."""
    unsure: int = 0
    """References of mixed, partly sampled classes that probably have this name."""
    sample: tuple[int, int] | None = None
    source_types: Counter[str] = field(default_factory=Counter)
    target_types: Counter[str] = field(default_factory=Counter)

    @property
    def removable(self) -> bool:
        """Whether every reference of this name is known (so a cut of it can be checked)."""
        return self.unsure == 0 and (bool(self.classes) or bool(self.edges))


@dataclass
class Structure:
    """A big cycle summarised: members by type, links by name, the verified cut."""

    member_count: int
    member_types: dict[str, int]
    links: list[Link]
    cut: list[Link]
    verified: bool
    loop: list[NamedEdge]
    loop_hidden: int = 0
    loop_hidden_after: int = 0
    owned_dicts: bool = False
    """Whether instance dicts are separate objects here (folded into their owners)."""
    instances: dict[int, int] = field(default_factory=dict)
    """Instance dicts met in the samples -> their instances (the rest are looked up);
    empty when no instance keeps a dict apart."""
    member_classes: tuple[type, ...] = ()
    """Each class once, told apart by identity (hashing one runs its metaclass's code)."""
    """Every type among the members."""

    def signature_parts(self) -> list[str]:
        """Shape tokens that do not depend on the structure's size."""
        parts = sorted(self.member_types)
        parts += sorted(
            f"{src} -{link.name.name}-> {dst}"
            for link in self.links
            for src in link.source_types
            for dst in link.target_types
        )
        return parts


def class_words(cls: type) -> str:
    """``Node object`` / ``list``: a kind of member, as counts read it."""
    qualname = type_qualname(cls)
    return qualname if type_module(cls) == "builtins" else f"{qualname} object"


def type_words(obj: object) -> str:
    """``Node object`` / ``list``: a member's kind, as counts read it."""
    return class_words(type(obj))


def _normalised(name: EdgeName, of_instance_dict: bool) -> EdgeName:
    if name.kind == ek.INDEX:
        return EdgeName(ek.INDEX, "[]")
    if of_instance_dict and name.kind == ek.KEY and name.name.startswith("['"):
        key = name.name[2:-2]
        if key.isidentifier():
            return EdgeName(ek.ATTRIBUTE, f".{key}")
    return name


def find_structure(graph: ObjectGraph, members: Sequence[int]) -> Structure:
    """Summarise one big component and find the reference name whose removal frees it.

    ``graph`` has its workspace open (:meth:`ObjectGraph.open_workspace`).
    """
    nodes = graph.nodes
    work = graph.work()
    keys, counts, samples = work.edge_classes(members, _SAMPLES)
    # Every member of a loop has a first reference inside it: counting the classes at
    # position 0 counts the members by type, without a pass over them (an instance's
    # attribute dict is its instance's part, not a member of its own).
    kinds: Counter[str] = Counter()
    for (source_type, _, position, degree), count in zip(keys, counts, strict=True):
        if position == 0 and not degree & graphcore.CLASS_OF_DICT:
            kinds[class_words(source_type)] += count
    named: list[list[EdgeName]] = []
    owned: list[bool] = []
    for picked in samples:
        named.append([_name_at(graph, u, v, e) for u, v, e in picked])
        owned.append(bool(picked) and all(is_owned_part(nodes[u], nodes[v]) for u, v, _ in picked))
    owned_dicts = any(owned)
    instances = {v: u for klass, picked in enumerate(samples) if owned[klass] for u, v, _ in picked}
    links: dict[EdgeName, Link] = {}
    unsampled: dict[EdgeName, tuple[int, int]] = {}
    for klass, (count, picked) in enumerate(zip(counts, samples, strict=True)):
        if owned[klass] or not picked:
            continue
        # Out of an instance's attribute dict (keyed by the instance's class; a plain
        # dict's entries stay entries): read as the instance's attribute, its class named
        # and its module searched.
        key = keys[klass]
        of_dict = bool(key[3] & graphcore.CLASS_OF_DICT)
        names = [_normalised(n, of_dict) for n in named[klass]]
        sample = _class_sample(graph, instances, picked, key, names[0])
        source_words = class_words(key[0]) if of_dict else type_words(nodes[sample[0]])
        target_words = type_words(nodes[sample[1]])
        if count <= len(picked) and len(set(names)) > 1:
            # Every reference of this class was named: each goes to its own link.
            for name, (u, v, e) in zip(names, picked, strict=True):
                link = _link_for(links, name, source_words, target_words, 1)
                link.edges.append(e)
                if link.sample is None and of_dict and u not in instances:
                    unsampled.setdefault(name, (u, v))  # a later class may know its instance
                elif link.sample is None:
                    link.sample = (instances[u], v) if of_dict else (u, v)
            continue
        if len(set(names)) == 1:
            link = _link_for(links, names[0], source_words, target_words, count)
            link.classes.append(klass)
            link.sample = link.sample or sample
        else:
            name = Counter(names).most_common(1)[0][0]
            _link_for(links, name, source_words, target_words, count).unsure += count
    for name, (attrs, target) in unsampled.items():
        if links[name].sample is None:
            links[name].sample = _held_by_instance(graph, instances, attrs, target)
    ordered = sorted(links.values(), key=lambda link: -link.count)
    cut = _find_cut(work, members, keys, counts, ordered)
    verified = bool(cut)
    through = cut[0] if cut else next((link for link in ordered if link.sample), None)
    structure = Structure(
        member_count=sum(kinds.values()),
        member_types=dict(kinds.most_common()),
        links=ordered,
        cut=cut or ([through] if through is not None else []),
        verified=verified,
        loop=[],
        owned_dicts=owned_dicts,
        instances=instances,
        member_classes=tuple(by_identity(key[0] for key in keys).values()),
    )
    if through is not None and through.sample is not None:
        _name_loop(graph, structure, through.sample)
    return structure


def _class_sample(
    graph: ObjectGraph,
    instances: dict[int, int],
    picked: list[tuple[int, int, int]],
    key: graphcore.ClassKey,
    name: EdgeName,
) -> tuple[int, int]:
    """The class's first sampled reference ``(holder, target)``. Out of an attribute dict,
    as its instance's: a sampled one whose instance the samples met, else the same
    reference of an instance they met (a list's links are sampled one apart from their
    dicts), else one looked up."""
    if not key[3] & graphcore.CLASS_OF_DICT:
        return picked[0][:2]
    for attrs, target, _ in picked:
        if attrs in instances:
            return instances[attrs], target
    nodes = graph.nodes
    for attrs, owner in instances.items():
        if type(nodes[owner]) is not key[0]:  # the key's class: the instance's
            continue
        held = graph.successors(attrs)
        if len(held) > _NAMED_DEGREE:
            continue
        for target in held:
            if _normalised(name_edge(nodes[attrs], nodes[target]), True) == name:
                return owner, target
    return _held_by_instance(graph, instances, *picked[0][:2])


def _held_by_instance(
    graph: ObjectGraph, instances: dict[int, int], attrs: int, target: int
) -> tuple[int, int]:
    """``(instance, target)`` for a reference the attribute dict ``attrs`` holds, or
    ``(attrs, target)`` where its instance is not found."""
    owner = instance_of_dict(graph, attrs, instances)
    return (attrs if owner is None else owner), target


def _name_at(graph: ObjectGraph, u: int, v: int, position: int) -> EdgeName:
    """The name of the reference at CSR ``position`` from ``u`` to ``v``: when ``u`` refers to
    ``v`` more than once (``._parent`` and ``._root`` both the root), the one at that place
    in ``u``'s traversal, not always the first."""
    start, end = graph.offsets[u], graph.offsets[u + 1]
    # A big container (a list of 10^5 items) is named by the first place: counting its items
    # per sample would cost a pass over it each time.
    if end - start > _NAMED_DEGREE or sum(1 for t in graph.targets[start:end] if t == v) < 2:
        return name_edge(graph.nodes[u], graph.nodes[v])
    before = sum(1 for t in graph.targets[graph.offsets[u] : position] if t == v)
    names = names_of(graph.nodes[u], graph.nodes[v])
    return names[before] if before < len(names) else names[0]


def _link_for(
    links: dict[EdgeName, Link], name: EdgeName, source: str, target: str, count: int
) -> Link:
    """The link of this name, with ``count`` more references from ``source`` to ``target``."""
    link = links.setdefault(name, Link(name))
    link.count += count
    link.source_types[source] += count
    link.target_types[target] += count
    return link


def _cut_rank(link: Link, links: list[Link]) -> tuple[int, int, int, int, int]:
    """Back references first, a container's payload (``.value``) after other attributes;
    among equals, a link to objects other links hold too (a timer's ``.node``, an XML
    helper's ``.node``) before one to objects only it holds (the node's ``.T``): cut, the
    first leaves its targets owned, the second would leave them to the cut alone."""
    back = 0 if is_back_reference(link.name) else 1
    payload = 1 if is_payload_reference(link.name) else 0
    shared = any(
        other is not link and set(other.target_types) & set(link.target_types) for other in links
    )
    return (back, payload, 0 if shared else 1, -CUT_SCORE.get(link.name.kind, 0), link.count)


def _find_cut(
    work: graphcore.Workspace,
    members: Sequence[int],
    keys: list[graphcore.ClassKey],
    counts: list[int],
    links: list[Link],
) -> list[Link]:
    """The fewest reference names whose removal leaves the component without a loop.

    Back references (``.parent``, ``.root``) are tried first, alone and then together: a
    tree whose nodes point back twice is freed by cutting both, and that cut is the one
    the user's code can weaken without losing the structure. Only when the back
    references cannot free it are the other names (a list's items, ``.children``) tried.
    """
    candidates = sorted(
        (link for link in links if link.removable and link.name.kind in ek.USER_KINDS),
        key=lambda link: _cut_rank(link, links),
    )[:_MAX_TRIES]

    def frees(chosen: list[Link]) -> bool:
        classes = [klass for link in chosen for klass in link.classes]
        extra = [edge for link in chosen for edge in link.edges]
        if sum(counts[klass] for klass in classes) + len(extra) == sum(counts):
            return True  # no reference inside is left: nothing to peel
        return work.acyclic_without(members, [keys[klass] for klass in classes], extra)

    back = [link for link in candidates if is_back_reference(link.name)]
    for tier in (back, candidates):
        chosen = _fewest(tier, frees)
        if chosen:
            return chosen
    return []


def _fewest(candidates: list[Link], frees: Callable[[list[Link]], bool]) -> list[Link]:
    """One candidate that frees the component, else the best ones together, pruned to a
    minimal set; empty when all of them together do not free it."""
    for link in candidates:
        if frees([link]):
            return [link]
    chosen: list[Link] = []
    for link in candidates:
        chosen.append(link)
        if frees(chosen):
            break
    else:
        return []
    for link in list(reversed(chosen)):
        trial = [other for other in chosen if other is not link]
        if trial and frees(trial):
            chosen = trial
    return chosen


def _name_loop(graph: ObjectGraph, structure: Structure, through: tuple[int, int]) -> None:
    """One shortest closed loop through the reference ``through``; long loops keep their ends.

    Only the ends of a long loop are ever listed (the C core walks the rest).
    Where instance dicts are separate objects, the references left out are
    counted at the rate the shown head folds them (exact for uniform loops).
    """
    nodes = graph.nodes
    source, target = through
    if target not in graph.successors(source):
        # The sample names the instance (_held_by_instance): walk from its dict.
        source = next(
            part
            for part in graph.successors(source)
            if is_owned_part(nodes[source], nodes[part]) and target in graph.successors(part)
        )
    # With instance dicts as objects an attribute is two raw hops: show as many hops.
    scale = 2 if structure.owned_dicts else 1
    ends = graph.work().path_ends(target, source, _LOOP_FULL * scale)
    if ends is None:
        return
    length, head, tail = ends
    hops = length + 1
    first = [source, *head]
    last = tail or first
    if len(last) > 2 and is_owned_part(nodes[last[-2]], nodes[source]):
        # Start at the object whose instance dict holds the reference, not at the dict.
        owner = last[-2]
        first = [owner, *first[:-1]] if not tail else [owner, *first]
        last = first if not tail else last[:-1]
    if not tail and hops <= _LOOP_FULL * scale:
        structure.loop = named_path(graph, first)[1]
        return
    head_end = _LOOP_HEAD * scale
    # Never split an object from its instance dict: the pair reads as one hop.
    if is_owned_part(nodes[first[head_end - 1]], nodes[first[head_end]]):
        head_end += 1
    tail_start = len(last) - 1 - _LOOP_TAIL * scale
    if is_owned_part(nodes[last[tail_start - 1]], nodes[last[tail_start]]):
        tail_start -= 1
    shown_head = named_path(graph, first[: head_end + 1])[1]
    shown_tail = named_path(graph, last[tail_start:])[1]
    hidden = hops - head_end - (len(last) - 1 - tail_start)
    if structure.owned_dicts:
        hidden = max(1, round(hidden * len(shown_head) / head_end))
    structure.loop = [*shown_head, *shown_tail]
    structure.loop_hidden = hidden
    structure.loop_hidden_after = len(shown_head)
