"""The autograd graph as Python can read it: one bounded walker shared by every reader.

The graph lives in C++: a tensor owns its node (``grad_fn``), a node owns the nodes
it feeds (``next_functions``), the tensors it saved for backward, the leaf it
accumulates into (``AccumulateGrad.variable``), its hook dicts and its
``metadata``; a custom Function's node owns its ``ctx``. The cyclic GC sees few of
these references (only while a tensor and its node have no other owner), so a
loop through them is never freed (docs/architecture.md, "Blind spots").

Every read here is cheap and silent: saved tensors are read through
``_raw_saved_*`` (its ``data`` is None once ``backward()`` freed them, where
``_saved_*`` raises a C++ error per read), a node's hook dicts through torch's own
registration path with the registration refused (:meth:`AutogradReader.hook_dicts`),
and tensor fields through ``TensorBase`` descriptors with subclass torch
functions off (no ``.grad`` of a non-leaf, nothing deprecated: no warning).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from whyalive.guarded import TypeMemo, is_in_mro, type_short_name

# Autograd graphs of a training step have thousands of nodes; past this many nodes one
# analysis stops walking (what lies further is then not seen).
MAX_NODES = 100_000

# Autograd node classes (AddmmBackward0, ...) are few: their saved fields are listed once.
_SAVED_NAMES: dict[type, tuple[str, ...]] = {}

# The sequence number of nodes made outside the forward pass (AccumulateGrad).
_NO_SEQUENCE = 1 << 63

SPARSE_PARTS = {
    "sparse_coo": ("_indices", "_values"),
    "sparse_csr": ("crow_indices", "col_indices", "values"),
    "sparse_bsr": ("crow_indices", "col_indices", "values"),
    "sparse_csc": ("ccol_indices", "row_indices", "values"),
    "sparse_bsc": ("ccol_indices", "row_indices", "values"),
}
"""The tensors a sparse layout keeps (what it holds in memory), read through TensorBase."""

PREHOOKS = "prehooks"
NODE_PREHOOKS = "register_prehook() hooks"
NODE_HOOKS = "register_hook() hooks"
TENSOR_HOOKS = "hooks of the tensor"
HOOKS = "hooks"


def loaded_torch() -> Any | None:
    """torch when the user imported it (never imported here)."""
    return sys.modules.get("torch")


def sequence_mark() -> int | None:
    """This thread's next autograd sequence number: nodes made later number at least this.

    None when torch is not loaded (then no node exists yet, and every node is newer).
    """
    torch = loaded_torch()
    if torch is None:
        return None
    try:
        return int(torch._C._autograd._get_sequence_nr())
    except Exception:
        return None


class _Refused(Exception):
    """Raised by the registration spy so that torch adds no hook."""


def _reads_as_node(
    node_type: type | None, function_base: object, functions: object, cls: type
) -> bool:
    """Node's subclass hook, read from ``type``'s descriptors: a node type, a custom
    Function's ctx type, or a C++ node's class in ``torch._C._functions``."""
    if node_type is None:
        return False
    if is_in_mro(cls, node_type) or is_in_mro(cls, function_base):
        return True
    return getattr(functions, type_short_name(cls), None) is cls


class AutogradReader:
    """Reads tensors and autograd nodes for one analysis, never raising per node."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.base = torch._C.TensorBase
        graph = sys.modules.get("torch.autograd.graph")
        node_type = getattr(graph, "Node", None)
        self.node_type: type | None = node_type if isinstance(node_type, type) else None
        # Nothing here refers back to the reader, which would make it cyclic garbage.
        base = self.base
        self._is_tensor_type = TypeMemo(lambda cls: issubclass(cls, base))
        self._is_accumulator = TypeMemo(lambda cls: type_short_name(cls) == "AccumulateGrad")
        function = sys.modules.get("torch.autograd.function")
        # A custom Function's ctx type derives from it (what Node's subclass hook checks).
        function_base = getattr(function, "BackwardCFunction", None)
        functions = getattr(torch._C, "_functions", None)
        self._is_node_type = TypeMemo(
            functools.partial(_reads_as_node, self.node_type, function_base, functions)
        )
        parameter = getattr(getattr(torch, "nn", None), "Parameter", None)
        # Types whose fields run no user code (Parameter's torch function is disabled).
        self._plain = {torch.Tensor} | ({parameter} if isinstance(parameter, type) else set())
        self.visited = 0
        self.limit = MAX_NODES
        """Nodes the walks of this reader visit at most."""

    def is_tensor(self, obj: object) -> bool:
        """A ``torch.Tensor`` (or subclass), by type only."""
        return self._is_tensor_type(type(obj))

    def is_node(self, obj: object) -> bool:
        """An autograd node (a C++ node's Python face, or a custom Function's ``ctx``)."""
        return self.is_node_type(type(obj))

    def is_node_type(self, cls: type) -> bool:
        """Whether instances of ``cls`` are autograd nodes.

        Decided as ``Node``'s own subclass hook decides, but from ``type``'s descriptors:
        ``issubclass`` would run that hook, which reads ``cls.__name__`` through a user's
        metaclass.
        """
        return self._is_node_type(cls)

    def tensor_field(self, tensor: object, name: str) -> Any:
        """``TensorBase.<name>`` of a tensor, subclass code off; None when unreadable."""
        try:
            if type(tensor) in self._plain:  # no subclass code to turn off: read at once
                return getattr(self.base, name).__get__(tensor)
            with self.torch._C.DisableTorchFunctionSubclass():
                return getattr(self.base, name).__get__(tensor)
        except Exception:
            return None

    def grad_fn(self, tensor: object) -> object | None:
        """The tensor's autograd node (None for leaves and tensors without a graph)."""
        found: object | None = self.tensor_field(tensor, "grad_fn")
        return found

    def is_leaf(self, tensor: object) -> bool:
        """Whether the tensor has no ``grad_fn`` (``.grad`` is only read on leaves)."""
        return bool(self.tensor_field(tensor, "is_leaf"))

    def grad(self, tensor: object) -> object | None:
        """The tensor's ``.grad`` (C++ holds it), read only where torch keeps one: a leaf, or
        a tensor that retains its gradient (reading others warns)."""
        if not (self.is_leaf(tensor) or self.tensor_field(tensor, "retains_grad")):
            return None
        found: object | None = self.tensor_field(tensor, "grad")
        return found if self.is_tensor(found) else None

    def parts(self, tensor: object) -> list[object]:
        """The tensors whose C++ side ``tensor``'s holds: its ``_base`` (a view's), a sparse
        tensor's indices and values."""
        found = [self.tensor_field(tensor, "_base")]
        layout = str(self.tensor_field(tensor, "layout"))
        found.extend(
            self._part(tensor, part) for part in SPARSE_PARTS.get(layout.removeprefix("torch."), ())
        )
        return [t for t in found if self.is_tensor(t)]

    def _part(self, tensor: object, name: str) -> object | None:
        try:
            with self.torch._C.DisableTorchFunctionSubclass():
                found: object = getattr(self.base, name)(tensor)
        except Exception:
            return None
        return found

    def use_count(self, tensor: object) -> int:
        """Owners of the tensor's C++ implementation (its Python object is one of them)."""
        try:
            return int(self.base._use_count(tensor))
        except Exception:
            return 0

    def made_before(self, node: object, mark: int | None) -> bool | None:
        """Whether ``node`` existed before :func:`sequence_mark` returned ``mark``.

        None when its number says nothing (``AccumulateGrad`` nodes all carry the
        largest one); True when it cannot be read (assume the node is old).
        """
        try:
            number = int(node._sequence_nr())  # type: ignore[attr-defined]
        except Exception:
            return True
        if number >= _NO_SEQUENCE:
            return None
        return mark is not None and number < mark

    def hooks_dict(self, tensor: object) -> object | None:
        """The tensor's own hook dict (``register_hook``), or None."""
        found = self.tensor_field(tensor, "_backward_hooks")
        return found if isinstance(found, dict) else None

    def next_nodes(self, node: object) -> list[object]:
        """The nodes ``node`` feeds gradients into (``next_functions``), Nones dropped."""
        try:
            pairs = node.next_functions  # type: ignore[attr-defined]
        except Exception:
            return []
        return [pair[0] for pair in pairs if pair[0] is not None]

    def variable(self, node: object) -> object | None:
        """The leaf an ``AccumulateGrad`` node accumulates into, else None."""
        if not self._is_accumulator(type(node)):
            return None
        try:
            found = node.variable  # type: ignore[attr-defined]
        except Exception:
            return None
        return found if self.is_tensor(found) else None

    def saved(self, node: object, *, inputs_only: bool = False) -> list[tuple[str, object]]:
        """(``_saved_self``, tensor) for each tensor the node still holds for backward.

        Read through ``_raw_saved_*``: once ``backward()`` freed a saved tensor its
        ``data`` is None, where ``_saved_*`` would raise (and format) a C++ error.
        Reading a saved output (``_saved_result``) makes a new Python tensor over
        storage the output shares; ``inputs_only`` leaves those out.
        """
        cls = type(node)
        names = _SAVED_NAMES.get(cls)
        if names is None:
            try:
                listed = dir(node)
            except Exception:
                listed = []
            names = _SAVED_NAMES.setdefault(
                cls, tuple(n for n in listed if n.startswith("_raw_saved_"))
            )
        found: list[tuple[str, object]] = []
        for name in names:
            if inputs_only and name.startswith("_raw_saved_result"):
                continue
            try:
                raw = getattr(node, name)
            except Exception:
                continue
            shown = "._saved_" + name.removeprefix("_raw_saved_")
            items = raw if type(raw) in (tuple, list) else (raw,)
            for position, item in enumerate(items):
                data = getattr(item, "data", None)
                if self.is_tensor(data):
                    label = f"{shown}[{position}]" if len(items) > 1 else shown
                    found.append((label, data))
        return found

    def metadata(self, node: object) -> dict[Any, Any] | None:
        """The node's ``metadata`` dict; torch makes an empty one when it had none."""
        try:
            found = node.metadata  # type: ignore[attr-defined]
        except Exception:
            return None
        return found if isinstance(found, dict) else None

    def hook_dicts(self, nodes: Iterable[object]) -> dict[int, dict[str, dict[Any, Any]]]:
        """id(node) -> {"prehooks": dict, "hooks": dict}: the hook dicts each node holds.

        torch keeps them only in C++. ``node.register_prehook(f)`` hands the node's
        existing dict (or None) to ``Function._register_hook``; for the length of
        this call that method is a spy that records the dict and refuses, so no
        hook is added and the graph is left as it was. Other threads calling it
        meanwhile get the real method.
        """
        function_module = sys.modules.get("torch.autograd.function")
        function = getattr(function_module, "Function", None)
        real = getattr(function, "_register_hook", None)
        if function is None or real is None:
            return {}
        me = threading.get_ident()
        seen: list[object] = []

        def spy(hooks: object, hook: object) -> object:
            if threading.get_ident() != me:
                return real(hooks, hook)
            seen.append(hooks)
            raise _Refused

        own = function.__dict__.get("_register_hook")
        function._register_hook = staticmethod(spy)
        found: dict[int, dict[str, dict[Any, Any]]] = {}
        try:
            for node in nodes:
                held: dict[str, dict[Any, Any]] = {}
                for kind, method in ((PREHOOKS, "register_prehook"), (HOOKS, "register_hook")):
                    seen.clear()
                    try:
                        getattr(node, method)(_no_hook)
                    except _Refused:
                        pass
                    except Exception:
                        continue
                    if seen and isinstance(seen[0], dict):
                        held[kind] = seen[0]
                if held:
                    found[id(node)] = held
        finally:
            if own is None:
                del function._register_hook
            else:
                function._register_hook = own
            seen.clear()
        return found

    def walk(
        self,
        roots: Iterable[object],
        seen: dict[int, object],
        stop: Callable[[object], bool] | None = None,
    ) -> Iterator[object]:
        """Each node reachable from ``roots`` (nodes) not yet in ``seen``, once; bounded.

        ``seen`` (id -> node) is shared by the walks of one analysis and holds the
        nodes until the caller drops it. A node for which ``stop`` is true is given
        but not walked past.
        """
        stack = [node for node in roots if node is not None]
        while stack and self.visited < self.limit:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            self.visited += 1
            yield node
            if stop is None or not stop(node):
                stack.extend(self.next_nodes(node))


def _no_hook(*args: object) -> None:
    """Never registered: the spy refuses it."""


def name_node_edge(reader: AutogradReader, node: object, target: object) -> str | None:
    """How a reference an autograd node holds reads (``.next_functions[0][0]``, its hook
    dicts, ``.metadata``, ``.variable``), or None. For nodes in captured garbage; the
    metadata dict is only compared when the node has one already among the referents."""
    for position, following in enumerate(reader.next_nodes(node)):
        if following is target:
            return f".next_functions[{position}][0]"
    if reader.variable(node) is target:
        return ".variable"
    if not isinstance(target, dict):
        return None
    held = reader.hook_dicts([node]).get(id(node), {})
    if held.get(PREHOOKS) is target:
        return NODE_PREHOOKS
    if held.get(HOOKS) is target:
        return NODE_HOOKS
    if reader.metadata(node) is target:
        return ".metadata"
    return None
