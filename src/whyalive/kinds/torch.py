"""torch tensors, read through ``torch._C.TensorBase`` so subclasses run no user code."""

from __future__ import annotations

import gc
import itertools
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from whyalive.guarded import type_short_name
from whyalive.kinds import HeavyFacts
from whyalive.kinds.autograd_graph import SPARSE_PARTS, AutogradReader
from whyalive.kinds.autograd_nodes import garbage_nodes, node_facts
from whyalive.kinds.torch_dense import DenseReader, fake_tensor_type
from whyalive.words import AUTOGRAD_PART, plural, size_to_words


class TorchKind:
    """``torch.Tensor`` and subclasses (``Parameter``, ``FakeTensor``, ...).

    Bytes are the storage's ``nbytes`` and are counted once per storage; meta and
    fake tensors hold no real memory and count 0 bytes.
    """

    name = "torch.Tensor"

    def types(self) -> tuple[type, ...]:
        """``torch.Tensor`` when the user has imported torch."""
        torch = sys.modules.get("torch")
        tensor = getattr(torch, "Tensor", None)
        return (tensor,) if isinstance(tensor, type) else ()

    def describe(self, obj: object) -> HeavyFacts | None:
        """Shape, dtype, device and storage, with ``__torch_function__`` disabled.

        A sparse tensor holds its indices and values (never its dense size); a nested
        one its buffer; a jagged one (``layout=torch.jagged``) its packed values, offsets
        and lengths.
        """
        torch: Any = sys.modules["torch"]
        with torch._C.DisableTorchFunctionSubclass():
            dense = DenseReader(torch).read_many((obj,))[0]
        return dense if dense is not None else self.describe_any(obj)

    def describe_any(self, obj: object) -> HeavyFacts | None:
        """:meth:`describe` for any layout, fake and meta tensors included."""
        torch: Any = sys.modules["torch"]
        base = torch._C.TensorBase
        with torch._C.DisableTorchFunctionSubclass():
            device = str(base.device.__get__(obj))
            dtype = _name(base.dtype.__get__(obj))
            layout = _name(base.layout.__get__(obj))
            fake_type = fake_tensor_type()
            is_fake = fake_type is not None and issubclass(type(obj), fake_type)
            dims = _dims(base, obj, layout)
            description = f"{type_short_name(type(obj))}({dtype}[{dims}], {device}"
            description += ")" if layout in ("strided", "jagged") else f", {layout})"
            if is_fake or device == "meta":
                return HeavyFacts("torch.Tensor", description, 0, device, ("torch", id(obj)))
            storages = [_storage(base, part) for part in _parts(base, obj, layout)]
            if len(storages) > 1:
                storages = list({int(storage._cdata): storage for storage in storages}.values())
            nbytes = sum(int(storage.nbytes()) for storage in storages)
            start = int(storages[0].data_ptr()) if len(storages) == 1 else 0
            cdata = tuple(int(storage._cdata) for storage in storages)
            key = ("torch", device, cdata[0] if len(cdata) == 1 else cdata or id(obj))
            sharers = 0
            use_count = getattr(torch._C, "_storage_Use_Count", None)
            if use_count is not None and len(storages) == 1:
                # One count is the temporary storage object we hold right now.
                sharers = int(use_count(storages[0]._cdata)) - 1
            del storages
        memory = (start, start + nbytes) if start else None
        return HeavyFacts(
            "torch.Tensor", description, nbytes, device, key, storage_users=sharers, memory=memory
        )

    def describe_many(self, objects: Sequence[object]) -> list[HeavyFacts | None]:
        """:meth:`describe` of many tensors, with ``__torch_function__`` disabled once for
        all (10^5 small tensors of one list); other layouts, fake and meta tensors go one by
        one."""
        torch: Any = sys.modules["torch"]
        with torch._C.DisableTorchFunctionSubclass():
            found = DenseReader(torch).read_many(objects)
        for position, dense in enumerate(found):
            if dense is None:
                found[position] = self.describe_any(objects[position])
        return found


# dtypes and layouts are singletons, few: each is named once ("float32", "strided").
_NAMES: dict[object, str] = {}


def _name(value: object) -> str:
    found = _NAMES.get(value)
    if found is None:
        found = _NAMES[value] = str(value).removeprefix("torch.")
    return found


# What a jagged nested tensor (a Python subclass whose own storage is never allocated)
# keeps in its instance dict: its packed components and their offsets and lengths.
_JAGGED_PARTS = ("_values", "_offsets", "_lengths")


def _parts(base: Any, tensor: object, layout: str) -> list[object]:
    """The tensors whose storages ``tensor`` holds: itself, or what its layout keeps."""
    if layout == "jagged":
        held = object.__getattribute__(tensor, "__dict__")
        return [
            part
            for part in (held.get(name) for name in _JAGGED_PARTS)
            if issubclass(type(part), base)
        ]
    sparse = SPARSE_PARTS.get(layout)
    if sparse is None:
        return [tensor]
    return [getattr(base, part)(tensor) for part in sparse]


def _dims(base: Any, tensor: object, layout: str) -> str:
    """``16, 256``; a nested tensor has no sizes, only a count of components."""
    if layout == "strided" and base.is_nested.__get__(tensor):
        return f"nested {int(base.size(tensor, 0))}"
    # An int or a symbolic size: either reads as its str().
    return ", ".join(map(str, base.shape.__get__(tensor)))


def _storage(base: Any, tensor: object) -> Any:
    # Its own function: a try inside the caller's `with` would not be covered by the
    # `with` when a tracer raises on its line (docs/architecture.md, GC rules 10).
    return base.untyped_storage(tensor)


class AutogradWalk:
    """Tensors that only the garbage's autograd graphs hold.

    A leaf (``AccumulateGrad.variable``), its gradient and the tensors saved for
    backward are C++ references, so the GC never sees them, yet a tensor in a
    cycle keeps its whole graph, and so those tensors, alive. They count when no
    Python reference beyond the garbage's holds them (a model's parameters are held
    by the model, and so are their gradients) and no such live tensor of the graph
    shares their storage (``weight.t()`` saved by a linear layer). Not seen: a live
    view, outside the graph, of a saved tensor; its bytes are counted.

    An autograd node of the garbage is a root too (:meth:`visit_nodes`), heavy for what it
    holds (:mod:`whyalive.kinds.autograd_nodes`).

    One walk per analysis: each autograd node is visited once, and a tensor found
    from several roots is credited to the first. Holds the visited nodes and the
    found tensors until :meth:`finish`.
    """

    def __init__(self) -> None:
        self._visited: dict[int, object] = {}
        self._found: dict[int, object] = {}
        self._by_root: dict[int, list[int]] = {}
        self._grad_of: dict[int, int] = {}  # a leaf's gradient -> the leaf (both found)
        self._kind = TorchKind()
        self._reader = AutogradReader(sys.modules["torch"])

    def visit(self, node: int, tensor: object) -> None:
        """Walk ``tensor``'s autograd graph (``node`` is its index in the object graph)."""
        try:
            found = self._walk(tensor)
        except Exception:  # a hostile subclass or a half-dead graph: nothing found
            return
        if found:
            self._by_root[node] = found

    def visit_nodes(
        self,
        objects: Sequence[object],
        count: int,
        tensors: Sequence[int] = (),
        successors: Callable[[int], Sequence[int]] | None = None,
        types: Sequence[type] | None = None,
    ) -> None:
        """Walk the autograd graph from each autograd node of the garbage (the first ``count``
        of ``objects``) that :func:`~whyalive.kinds.autograd_nodes.garbage_nodes` gives."""
        disabled = self._reader.torch._C.DisableTorchFunctionSubclass
        nodes = garbage_nodes(self._reader, objects, count, tensors, successors, types)
        for index in nodes:
            try:
                with disabled():
                    found = self._from_nodes(objects[index], [])
            except Exception:  # a half-dead graph: nothing found
                continue
            if found:
                self._by_root[index] = found

    def _walk(self, tensor: object) -> list[int]:
        reader = self._reader
        found: list[int] = []
        with reader.torch._C.DisableTorchFunctionSubclass():
            # Its gradient (a C++ reference) goes with the tensor, wherever it sits. Only
            # a leaf (or one that retains its grad) has one; reading others warns.
            base = reader.base
            keeps_grad = base.is_leaf.__get__(tensor) or base.retains_grad.__get__(tensor)
            grad = base.grad.__get__(tensor) if keeps_grad else None
            if grad is not None and id(grad) not in self._found:
                self._found[id(grad)] = grad
                found.append(id(grad))
                self._grad_of[id(grad)] = id(tensor)
            return self._from_nodes(reader.grad_fn(tensor), found)

    def _from_nodes(self, root: object | None, found: list[int]) -> list[int]:
        """``found`` with the tensors of the nodes reachable from ``root`` not yet visited."""
        reader = self._reader
        for node in reader.walk([root], self._visited):
            for held, leaf in _tensors_of(reader, node):
                if id(held) not in self._found:
                    self._found[id(held)] = held
                    found.append(id(held))
                    if leaf is not None:
                        self._grad_of[id(held)] = id(leaf)
        return found

    def finish(
        self, facts: dict[int, HeavyFacts], nodes: Sequence[object], garbage_count: int
    ) -> dict[int, HeavyFacts]:
        """``facts`` (keyed by index in ``nodes``, the analysed graph's objects, the first
        ``garbage_count`` of them garbage) with ``through_autograd`` filled; drops every
        reference the walk held."""
        try:
            return self._held_facts(facts, nodes, garbage_count) if self._by_root else facts
        finally:
            self._visited.clear()
            self._found.clear()
            self._by_root.clear()
            self._grad_of.clear()

    def _held_facts(
        self, facts: dict[int, HeavyFacts], nodes: Sequence[object], garbage_count: int
    ) -> dict[int, HeavyFacts]:
        referrers = self._garbage_references(nodes, garbage_count)
        # A found tensor that is itself one of the graph's heavy objects (a leaf the
        # garbage also holds) has one more reference: the graph's list of nodes.
        found = self._found
        known: dict[int, HeavyFacts] = {}  # described already, as one of the graph's
        for index in facts:
            key = id(nodes[index])
            if key in found and found[key] is nodes[index]:
                referrers[key] = referrers.get(key, 0) + 1
                known[key] = facts[index]
        described: dict[int, HeavyFacts] = {}
        # What a reference count reads for an object only the walk holds, measured
        # rather than assumed: interpreters differ in the temporary references they keep.
        alone = _reference_count({0: object()}, 0)
        live: set[int] = set()
        for key in list(self._found):
            # Beyond the walk's and the garbage's, torch's C++ side keeps one reference
            # on a tensor whose implementation autograd shares; any more is live.
            if _reference_count(self._found, key) > alone + 1 + referrers.get(key, 0):
                live.add(key)
        live_storages: set[Hashable] = set()
        for key, tensor in self._found.items():
            try:
                fact = known.get(key) or self._kind.describe(tensor)
            except Exception:
                continue
            if fact is None:
                continue
            if key in live or self._grad_of.get(key) in live:  # a live leaf keeps its grad
                live_storages.add(fact.storage)
            else:
                described[key] = fact
        # The graph's own tensors over one storage (a saved output shares the output's)
        # are users of it that the garbage holds, not live ones.
        graph_users = Counter(fact.storage for fact in described.values())
        result = dict(facts)
        for node, keys in self._by_root.items():
            own = facts.get(node)  # None: an autograd node, which holds no bytes of its own
            storages = {own.storage} if own is not None else set()
            held: list[HeavyFacts] = []
            for key in keys:
                fact = described.get(key)
                if fact is None or fact.storage in storages or fact.storage in live_storages:
                    continue
                if key in known:  # one of the graph's heavy objects: counted as itself
                    continue
                storages.add(fact.storage)
                held.append(_fewer_users(fact, graph_users[fact.storage] - 1))
            if own is None:
                if held:
                    result[node] = node_facts(nodes[node], held)
                continue
            own = _fewer_users(own, graph_users[own.storage])
            if held:
                extra = size_to_words(sum(f.nbytes for f in held))
                tensors = plural(len(held), "tensor")
                description = f"{own.description}{AUTOGRAD_PART}{tensors}, {extra}"
                own = replace(own, description=description, through_autograd=tuple(held))
            result[node] = own
        return result

    def _garbage_references(self, nodes: Sequence[object], garbage_count: int) -> dict[int, int]:
        """How many references each found tensor gets from the captured garbage (the first
        ``garbage_count`` of ``nodes``)."""
        # At C speed, a slice at a time: its referents listed at once, the references the
        # call and the list add gone before any count is read. The walk holds what it
        # found and the list what it lists: one id is one object.
        known = self._found.__contains__
        counts: Counter[int] = Counter()
        garbage = iter(nodes)
        for start in range(0, garbage_count, _REFERENTS_SLICE):
            size = min(_REFERENTS_SLICE, garbage_count - start)
            referents = gc.get_referents(*itertools.islice(garbage, size))
            counts.update(filter(known, map(id, referents)))
            del referents  # before any reference count is read
        return dict(counts)


_REFERENTS_SLICE = 4096
"""Garbage objects whose referents are listed at once (a bounded list, however big the heap)."""


def _fewer_users(fact: HeavyFacts, others: int) -> HeavyFacts:
    if others <= 0 or fact.storage_users <= 1:
        return fact
    return replace(fact, storage_users=max(fact.storage_users - others, 1))


def _reference_count(mapping: dict[int, object], key: int) -> int:
    """The reference count of ``mapping[key]``, read the same way for every object."""
    return sys.getrefcount(mapping[key])


def _tensors_of(reader: AutogradReader, node: object) -> list[tuple[object, object | None]]:
    """The tensors an autograd node holds (saved tensors, its leaf), each with the leaf
    whose gradient it is, if it is one."""
    values: list[object] = []
    grads: list[tuple[object, object | None]] = []
    variable = reader.variable(node)  # AccumulateGrad: the leaf it feeds
    if variable is not None:
        values.append(variable)
        grads.append((reader.tensor_field(variable, "grad"), variable))
    values.extend(tensor for _, tensor in reader.saved(node))
    # 0-dim tensors are skipped: autograd saves Python numbers (``x * 2``) as scalar
    # tensors that cannot be told from the user's, and each holds at most 16 bytes.
    pairs = [(value, None) for value in values] + grads
    base = reader.base
    return [(v, leaf) for v, leaf in pairs if issubclass(type(v), base) and base.dim(v) > 0]
