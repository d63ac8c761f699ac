"""torch tensors, read through ``torch._C.TensorBase`` so subclasses run no user code."""

from __future__ import annotations

import gc
import sys
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from whyalive.guarded import type_short_name
from whyalive.kinds import HeavyFacts
from whyalive.words import size_to_words


def _fake_tensor_type() -> type | None:
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    cls = getattr(fake, "FakeTensor", None)
    return cls if isinstance(cls, type) else None


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
        one its buffer.
        """
        torch: Any = sys.modules["torch"]
        base = torch._C.TensorBase
        with torch._C.DisableTorchFunctionSubclass():
            device = str(base.device.__get__(obj))
            dtype = str(base.dtype.__get__(obj)).removeprefix("torch.")
            layout = str(base.layout.__get__(obj)).removeprefix("torch.")
            fake_type = _fake_tensor_type()
            is_fake = fake_type is not None and issubclass(type(obj), fake_type)
            description = f"{type_short_name(type(obj))}({dtype}[{_dims(base, obj)}], {device}"
            description += ")" if layout in ("strided", "jagged") else f", {layout})"
            if is_fake or device == "meta":
                return HeavyFacts("torch.Tensor", description, 0, device, ("torch", id(obj)))
            parts = _SPARSE_PARTS.get(layout)
            storages = (
                [_storage(base, obj)]
                if parts is None
                else [_storage(base, getattr(base, part)(obj)) for part in parts]
            )
            storages = list({int(storage._cdata): storage for storage in storages}.values())
            nbytes = sum(int(storage.nbytes()) for storage in storages)
            start = int(storages[0].data_ptr()) if len(storages) == 1 else 0
            cdata = tuple(int(storage._cdata) for storage in storages)
            key = ("torch", device, cdata[0] if len(cdata) == 1 else cdata)
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


# The tensors a sparse layout keeps (what it holds in memory), read through TensorBase.
_SPARSE_PARTS = {
    "sparse_coo": ("_indices", "_values"),
    "sparse_csr": ("crow_indices", "col_indices", "values"),
    "sparse_bsr": ("crow_indices", "col_indices", "values"),
    "sparse_csc": ("ccol_indices", "row_indices", "values"),
    "sparse_bsc": ("ccol_indices", "row_indices", "values"),
}


def _dims(base: Any, tensor: object) -> str:
    """``16, 256``; a nested tensor has no sizes, only a count of components."""
    if base.is_nested.__get__(tensor) and str(base.layout.__get__(tensor)) == "torch.strided":
        return f"nested {int(base.size(tensor, 0))}"
    return ", ".join(
        str(int(d)) if isinstance(d, int) else str(d) for d in base.shape.__get__(tensor)
    )


def _storage(base: Any, tensor: object) -> Any:
    # Its own function: a try inside the caller's `with` would not be covered by the
    # `with` when a tracer raises on its line (docs/architecture.md, GC rules 10).
    return base.untyped_storage(tensor)


# Autograd graphs of a training step have thousands of nodes; past this the rest
# of a graph is not searched (its tensors are then simply not counted).
MAX_AUTOGRAD_NODES = 100_000


class AutogradWalk:
    """Tensors that only the garbage's autograd graphs hold.

    A leaf (``AccumulateGrad.variable``), its gradient and the tensors saved for
    backward are C++ references, so the GC never sees them, yet a tensor in a
    cycle keeps its whole graph, and so those tensors, alive. They count when no
    Python reference beyond the garbage's holds them (a model's parameters are held
    by the model, and so are their gradients) and no such live tensor of the graph
    shares their storage (``weight.t()`` saved by a linear layer). Not seen: a live
    view, outside the graph, of a saved tensor; its bytes are counted.

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

    def visit(self, node: int, tensor: object) -> None:
        """Walk ``tensor``'s autograd graph (``node`` is its index in the object graph)."""
        try:
            found = self._walk(tensor)
        except Exception:  # a hostile subclass or a half-dead graph: nothing found
            return
        if found:
            self._by_root[node] = found

    def _walk(self, tensor: object) -> list[int]:
        torch: Any = sys.modules["torch"]
        base = torch._C.TensorBase
        found: list[int] = []
        with torch._C.DisableTorchFunctionSubclass():
            # Its gradient (a C++ reference) goes with the tensor, wherever it sits. Only
            # a leaf (or one that retains its grad) has one; reading others warns.
            keeps_grad = base.is_leaf.__get__(tensor) or base.retains_grad.__get__(tensor)
            grad = base.grad.__get__(tensor) if keeps_grad else None
            if grad is not None and id(grad) not in self._found:
                self._found[id(grad)] = grad
                found.append(id(grad))
                self._grad_of[id(grad)] = id(tensor)
            root = base.grad_fn.__get__(tensor)
            for node in autograd_nodes(root, self._visited, MAX_AUTOGRAD_NODES):
                for held, leaf in _tensors_of(node, base):
                    if id(held) not in self._found:
                        self._found[id(held)] = held
                        found.append(id(held))
                        if leaf is not None:
                            self._grad_of[id(held)] = id(leaf)
        return found

    def finish(
        self, facts: dict[int, HeavyFacts], garbage: Sequence[object]
    ) -> dict[int, HeavyFacts]:
        """``facts`` with ``through_autograd`` filled; drops every reference the walk held."""
        try:
            return self._held_facts(facts, garbage) if self._by_root else facts
        finally:
            self._visited.clear()
            self._found.clear()
            self._by_root.clear()
            self._grad_of.clear()

    def _held_facts(
        self, facts: dict[int, HeavyFacts], garbage: Sequence[object]
    ) -> dict[int, HeavyFacts]:
        referrers = self._garbage_references(garbage)
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
                fact = self._kind.describe(tensor)
            except Exception:
                continue
            if fact is None:
                continue
            if key in live or self._grad_of.get(key) in live:  # a live leaf keeps its grad
                live_storages.add(fact.storage)
            else:
                described[key] = fact
        result = dict(facts)
        for node, keys in self._by_root.items():
            own = facts[node]
            storages = {own.storage}
            held: list[HeavyFacts] = []
            for key in keys:
                fact = described.get(key)
                if fact is None or fact.storage in storages or fact.storage in live_storages:
                    continue
                storages.add(fact.storage)
                held.append(fact)
            if held:
                extra = size_to_words(sum(f.nbytes for f in held))
                description = f"{own.description} + autograd graph: {len(held)} tensor(s), {extra}"
                result[node] = replace(own, description=description, through_autograd=tuple(held))
        return result

    def _garbage_references(self, garbage: Sequence[object]) -> dict[int, int]:
        """How many references each found tensor gets from the captured garbage."""
        found = self._found
        counts: dict[int, int] = {}
        for obj in garbage:
            for ref in gc.get_referents(obj):
                key = id(ref)
                if key in found and found[key] is ref:
                    counts[key] = counts.get(key, 0) + 1
        return counts


def _reference_count(mapping: dict[int, object], key: int) -> int:
    """The reference count of ``mapping[key]``, read the same way for every object."""
    return sys.getrefcount(mapping[key])


def autograd_nodes(root: Any, visited: dict[int, object], limit: int) -> Iterator[Any]:
    """The autograd nodes reachable from ``root`` (a ``grad_fn``) not yet in ``visited``.

    Depth first along ``next_functions``; each node is added to ``visited`` (id ->
    node, which keeps it alive, so ids stay unique) as it is yielded, and the walk
    stops once ``visited`` holds ``limit`` nodes: its cost is bounded whatever the
    graph. Reads no saved tensor, so a graph that ``backward()`` consumed costs what
    any other does.
    """
    stack = [root]
    while stack and len(visited) < limit:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited[id(node)] = node
        yield node
        stack.extend(next_node for next_node, _ in node.next_functions)


# Autograd node classes (AddmmBackward0, ...) are few: read their attribute names once,
# each saved tensor's ``_saved_x`` with its ``_raw_saved_x`` twin.
_SAVED_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}


def _saved_names(node: Any) -> tuple[tuple[str, str], ...]:
    cls = type(node)
    names = _SAVED_NAMES.get(cls)
    if names is None:
        # Only a saved tensor (or list of them) has a raw twin; the other ``_saved_*``
        # are sizes and numbers, never tensors.
        attributes = set(dir(node))
        names = tuple(
            (name, raw)
            for name in sorted(attributes)
            if name.startswith("_saved_")
            for raw in ("_raw" + name,)
            if raw in attributes
        )
        names = _SAVED_NAMES.setdefault(cls, names)
    return names


def saved_tensors(node: Any) -> list[object]:
    """What ``node`` saved for backward and still holds (values of its ``_saved_*``).

    A saved tensor that ``backward()`` freed is skipped by asking its
    ``_raw_saved_*`` twin, whose ``data`` is then None: reading the tensor itself
    would make torch raise (and build a C++ traceback) for every such node of a
    consumed graph. Only a freed *list* of saved tensors still raises, once.
    """
    values: list[object] = []
    for name, raw in _saved_names(node):
        try:
            twin = getattr(node, raw)
            if type(twin) not in (tuple, list) and twin.data is None:
                continue  # freed by backward(), or never defined
            value = getattr(node, name)
        except RuntimeError:  # freed by backward(): nothing held any more
            continue
        values.extend(value if type(value) in (tuple, list) else (value,))
    return values


def _tensors_of(node: Any, base: Any) -> list[tuple[object, object | None]]:
    """The tensors an autograd node holds (saved tensors, its leaf), each with the leaf
    whose gradient it is, if it is one."""
    values: list[object] = []
    grads: list[tuple[object, object | None]] = []
    variable = getattr(node, "variable", None)  # AccumulateGrad: the leaf it feeds
    if issubclass(type(variable), base):
        values.append(variable)
        grads.append((base.grad.__get__(variable), variable))
    values.extend(saved_tensors(node))
    # 0-dim tensors are skipped: autograd saves Python numbers (``x * 2``) as scalar
    # tensors that cannot be told from the user's, and each holds at most 16 bytes.
    pairs = [(value, None) for value in values] + grads
    return [(v, leaf) for v, leaf in pairs if issubclass(type(v), base) and base.dim(v) > 0]
