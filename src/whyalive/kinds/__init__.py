"""The registry of heavy-object kinds (docs/architecture.md, "Extending: a heavy kind").

A *kind* knows which types it covers (read from ``sys.modules`` only, so whyalive
never imports torch or NumPy itself) and how to describe one object: bytes,
storage identity, device, and a short description with shape and dtype.
New kinds plug in with :func:`register_kind`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter, itemgetter, lt
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class HeavyFacts:
    """What a kind says about one heavy object.

    ``storage`` identifies the memory the object holds: two views of one tensor
    storage, or an array and its base, share it and are counted once.
    ``owner`` is the object that owns that memory when it is not the object
    itself (a NumPy view's base). ``storage_users`` is how many objects use the
    storage in all, when the kind can tell (torch's storage use count), else 0;
    more users than the garbage holds means the memory is shared with live objects.
    """

    kind: str
    description: str
    nbytes: int
    device: str
    storage: Hashable
    owner: object | None = None
    storage_users: int = 0
    memory: tuple[int, int] | None = None
    """The address range ``[start, end)`` of that memory on ``device``, when known."""
    locate: Callable[[], tuple[int, int] | None] | None = None
    """Reads ``memory`` when it is left unread: an array that owns its memory shares it
    with no other array, so its range is read only when another kind reports one."""
    through_autograd: tuple[HeavyFacts, ...] = ()
    """Tensors that only the object's autograd graph (C++, invisible to the GC) holds."""
    alike: AlikeFacts | None = None
    """The alike arrays this node stands for, when it is a run's (its bytes are theirs)."""

    @classmethod
    def owning(
        cls,
        kind: str,
        description: str,
        nbytes: int,
        device: str,
        storage: Hashable,
        storage_users: int,
        memory: tuple[int, int] | None,
    ) -> HeavyFacts:
        """The facts of an object that owns its memory (no owner, ``locate`` or autograd
        part), equal to the constructor's. Made in one step: a frozen dataclass's
        ``__init__`` sets each field through ``object.__setattr__``, a third of what
        describing a tensor costs, and the monitor describes a step's tensors every time."""
        made = _new(cls)
        fields = OWNING_FIELDS.copy()
        fields["kind"] = kind
        fields["description"] = description
        fields["nbytes"] = nbytes
        fields["device"] = device
        fields["storage"] = storage
        fields["storage_users"] = storage_users
        fields["memory"] = memory
        _set(made, "__dict__", fields)
        return made

    @classmethod
    def owning_many(
        cls,
        kind: str,
        device: str,
        descriptions: Iterable[str],
        nbytes: Iterable[int],
        storages: Iterable[Hashable],
        locates: Iterable[Callable[[], tuple[int, int] | None] | None],
    ) -> list[HeavyFacts]:
        """``HeavyFacts(kind, description, size, device, storage, locate=locate)`` for each
        row of the columns, made as :meth:`owning` makes one: 1,700 records in 0.85 ms,
        where the constructor takes 4.0 (a NumPy batch's main cost)."""
        same = OWNING_FIELDS | {"kind": kind, "device": device}
        made = []
        for description, size, storage, locate in zip(
            descriptions, nbytes, storages, locates, strict=True
        ):
            fields = same.copy()
            fields["description"] = description
            fields["nbytes"] = size
            fields["storage"] = storage
            fields["locate"] = locate
            facts = _new(cls)
            _set(facts, "__dict__", fields)
            made.append(facts)
        return made

    @property
    def own(self) -> HeavyFacts:
        """The facts of the object itself: a run's node is one array of the run."""
        return self.alike.own if self.alike is not None else self

    @property
    def count(self) -> int:
        """How many heavy objects these facts are of: a run's node stands for all its arrays."""
        return self.alike.count if self.alike is not None else 1

    def held(self) -> tuple[HeavyFacts, ...]:
        """This object's facts, then those of what its autograd graph holds."""
        return (self, *self.through_autograd)


@dataclass(frozen=True)
class AlikeFacts:
    """The arrays a run's node stands for (``whyalive.graph.garbage.AlikeRun``): arrays that
    own their memory and that one list, tuple or dict alone holds, counted in C."""

    count: int
    """How many, the node's own array included."""
    positions: int
    """Where they sit in their container: bit ``i`` set for its item ``i``."""
    descriptions: frozenset[str]
    """Their descriptions, each once: one per dtype whose arrays share a shape, else
    ``kinds.numpy.SEVERAL_SHAPES``."""
    own: HeavyFacts
    """The node's own array, as the report's table of objects shows it."""


_ALIKE = attrgetter("alike")


def alike_runs(nodes: Iterable[int], facts: Mapping[int, HeavyFacts]) -> list[AlikeFacts]:
    """The runs of alike arrays among ``nodes``' facts (at C speed: most nodes have none)."""
    return list(filter(None, map(_ALIKE, map(facts.__getitem__, nodes))))


def objects_in(nodes: Collection[int], facts: Mapping[int, HeavyFacts]) -> int:
    """How many heavy objects ``nodes`` are: a run's node counts as all its arrays."""
    return len(nodes) + sum(run.count - 1 for run in alike_runs(nodes, facts))


_new = object.__new__
_THROUGH_AUTOGRAD = attrgetter("through_autograd")
_OWNER = attrgetter("owner")
_NONE_ID_ONLY = {id(None)}
_set = object.__setattr__
# Every field of HeavyFacts, in order, as an object that owns its memory has them: copied
# and filled in by HeavyFacts.owning (a copy keeps the order of a dataclass's __dict__).
OWNING_FIELDS: dict[str, object] = {
    "kind": "",
    "description": "",
    "nbytes": 0,
    "device": "",
    "storage": None,
    "owner": None,
    "storage_users": 0,
    "memory": None,
    "locate": None,
    "through_autograd": (),
    "alike": None,
}


@runtime_checkable
class HeavyKind(Protocol):
    """A family of heavy objects (tensors, arrays, buffers)."""

    name: str

    def types(self) -> tuple[type, ...]:
        """The types this kind covers right now; empty when their module is not loaded."""
        ...

    def describe(self, obj: object) -> HeavyFacts | None:
        """Facts about ``obj``, or None when it is not heavy after all (a small buffer)."""
        ...


_KINDS: list[HeavyKind] = []


def register_kind(kind: HeavyKind) -> None:
    """Add a heavy-object kind; later registrations are tried first."""
    _KINDS.insert(0, kind)


def registered_kinds() -> tuple[HeavyKind, ...]:
    """The kinds in the order they are tried."""
    return tuple(_KINDS)


class KindResolver(dict[type, "HeavyKind | None"]):
    """Maps a type to its kind, walking the MRO once per type.

    A ``dict`` so that ``map(resolver.__getitem__, map(type, objects))`` runs at C
    speed, with Python code only the first time a type is seen. Built once per
    analysis, because a module (torch) may have been imported since the last one.
    """

    def __init__(self, kinds: tuple[HeavyKind, ...] | None = None) -> None:
        super().__init__()
        self._by_type: dict[type, HeavyKind] = {}
        for kind in reversed(kinds if kinds is not None else registered_kinds()):
            for covered in kind.types():
                self._by_type[covered] = kind

    @property
    def covered_types(self) -> tuple[type, ...]:
        """Every type some kind covers (subclasses are covered too)."""
        return tuple(self._by_type)

    def __missing__(self, cls: type) -> HeavyKind | None:
        found: HeavyKind | None = None
        for base in type.__dict__["__mro__"].__get__(cls):
            found = self._by_type.get(base)
            if found is not None:
                break
        self[cls] = found
        return found

    def describe_many(self, objects: Sequence[object]) -> list[HeavyFacts | None]:
        """:meth:`describe` of each object; a kind with a ``describe_many`` of its own
        describes its objects at once (10^5 arrays of one list are one pass, not 10^5)."""
        found: list[HeavyFacts | None] = [None] * len(objects)
        kinds = list(map(self.__getitem__, map(type, objects)))
        by_kind: dict[int, tuple[HeavyKind, list[int]]] = {}
        if kinds and kinds[0] is not None and kinds.count(kinds[0]) == len(kinds):
            by_kind[id(kinds[0])] = (kinds[0], list(range(len(kinds))))  # one kind: most batches
        else:
            for position, kind in enumerate(kinds):
                if kind is not None:
                    by_kind.setdefault(id(kind), (kind, []))[1].append(position)
        for kind, positions in by_kind.values():
            many = getattr(kind, "describe_many", None)
            if many is None or len(positions) < 2:
                for position in positions:
                    found[position] = self.describe(objects[position])
                continue
            every = len(positions) == len(objects)
            try:
                described = list(many(list(objects) if every else [objects[p] for p in positions]))
            except Exception:  # a hostile object: each one alone, as describe() does
                described = [self._describe(objects[p]) for p in positions]
            if (
                every
                and len(described) == len(objects)
                and set(map(id, map(_OWNER, filter(None, described)))) <= _NONE_ID_ONLY
            ):  # one kind's answers for all, and no view among them: at C speed
                return described
            for position, facts in zip(positions, described, strict=True):
                # Views go through describe(): their owner's storage is what they hold.
                viewing = facts is not None and facts.owner is not None
                found[position] = self.describe(objects[position]) if viewing else facts
        return found

    def describe(self, obj: object) -> HeavyFacts | None:
        """Facts about ``obj`` if it is heavy; never raises.

        A view (a NumPy array over a tensor or a ``bytearray``, a ``memoryview``) keeps
        its owner's whole memory alive: when the owner is heavy of its own kind, the
        view holds the owner's storage (its bytes, range and key), counted once.
        """
        facts = self._describe(obj)
        owner = facts.owner if facts is not None else None
        for _ in range(_OWNER_DEPTH):
            if facts is None or owner is None or self[type(owner)] is None:
                break
            owned = self._describe(owner)
            if owned is None:
                break
            facts = replace(
                facts,
                nbytes=owned.nbytes,
                device=owned.device,
                storage=owned.storage,
                storage_users=owned.storage_users,
                memory=owned.memory,
                locate=owned.locate,
            )
            owner = owned.owner
        return facts

    def _describe(self, obj: object) -> HeavyFacts | None:
        kind = self[type(obj)]
        if kind is None:
            return None
        try:
            return kind.describe(obj)
        except Exception:  # a hostile or half-dead object is simply not described
            return None


# An array over a memoryview over a bytearray is two hops from the memory's owner.
_OWNER_DEPTH = 4


def merge_shared_memory(facts: dict[int, HeavyFacts]) -> dict[int, HeavyFacts]:
    """One storage per memory range, across kinds: bytes are counted once per range.

    A tensor and its ``.numpy()`` view, or an array over a ``bytearray``, are
    different kinds with different storage keys but the same memory. Overlapping
    address ranges on one device merge into one storage spanning their union.
    """
    every = list(facts.values())
    if any(map(_THROUGH_AUTOGRAD, every)):  # most facts hold nothing through autograd
        every = [held for fact in every for held in fact.held()]
    known = {
        (held.device, held.memory[0], held.memory[1], held.storage)
        for held in every
        if held.memory is not None and held.memory[1] > held.memory[0]
    }
    if known:  # memory left unread may be shared with these: read it now
        for held in every:
            memory = held.locate() if held.memory is None and held.locate is not None else None
            if memory is not None and memory[1] > memory[0]:
                known.add((held.device, memory[0], memory[1], held.storage))
    shared: dict[Hashable, tuple[str, int, int]] = {}
    devices = set(map(itemgetter(0), known))
    for device in devices:
        spans = list(known) if len(devices) == 1 else [s for s in known if s[0] == device]
        if not _overlapping(spans):  # most analyses share no memory
            continue
        # (start, end, storage keys merged) per merged range, in address order.
        merged: list[tuple[int, int, set[Hashable]]] = []
        for _, start, end, storage in sorted(spans, key=itemgetter(1)):
            if merged and start < merged[-1][1]:
                first, last_end, storages = merged[-1]
                merged[-1] = (first, max(last_end, end), storages | {storage})
            else:
                merged.append((start, end, {storage}))
        for start, end, storages in merged:
            if len(storages) > 1:
                shared.update(dict.fromkeys(storages, (device, start, end)))
    if not shared:
        return facts
    return {node: _merged(fact, shared) for node, fact in facts.items()}


def _overlapping(spans: list[tuple[str, int, int, Hashable]]) -> bool:
    """Whether two of these non-empty ranges ``[start, end)`` overlap, at C speed: with the
    starts and the ends each sorted, some start comes before the end in front of it (two
    ranges then hold the point of that start). Sorting 10^5 ranges as tuples took 150 ms;
    addresses are sorted as floats where that is exact (they are below 2**53 on today's
    machines): Python compares big ints digit by digit, floats natively (4x faster)."""
    starts: list[float] = list(map(itemgetter(1), spans))
    ends: list[float] = list(map(itemgetter(2), spans))
    if max(ends) < _EXACT_IN_A_FLOAT:
        starts, ends = list(map(float, starts)), list(map(float, ends))
    starts.sort()
    ends.sort()
    return any(map(lt, itertools.islice(starts, 1, None), ends))


_EXACT_IN_A_FLOAT = 2**53


def _merged(fact: HeavyFacts, shared: dict[Hashable, tuple[str, int, int]]) -> HeavyFacts:
    """``fact`` (and what its autograd graph holds) keyed by its merged memory range."""
    span = shared.get(fact.storage) if fact.memory or fact.locate else None
    through = tuple(_merged(held, shared) for held in fact.through_autograd)
    if span is None:
        return replace(fact, through_autograd=through) if through else fact
    device, start, end = span
    return replace(
        fact,
        storage=("memory", device, start),
        nbytes=end - start,
        memory=(start, end),
        through_autograd=through,
    )
