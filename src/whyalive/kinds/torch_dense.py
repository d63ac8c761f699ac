"""Plain strided tensors read fast: the monitor describes a step's tensors at every analysis.

:class:`DenseReader` looks torch's accessors up once per batch and writes the words of
each (class, device, dtype, shape) once, so a batch of a thousand alike tensors costs
a handful of C calls per tensor; every other tensor is left to
:meth:`whyalive.kinds.torch.TorchKind.describe_any`, which gives the same facts. The
reader's loop runs in C (``whyalive.kinds._dense``) when that is built, else in Python.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from whyalive.guarded import TypeMemo, type_short_name
from whyalive.kinds import OWNING_FIELDS, HeavyFacts

try:
    from whyalive.kinds._dense import read_dense as _read_dense  # type: ignore[import-not-found]
except ImportError:  # not built: the same loop in Python
    _read_dense = None


def fake_tensor_type() -> type | None:
    """``FakeTensor`` when torch's fake tensors are loaded (they hold no real memory)."""
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    cls = getattr(fake, "FakeTensor", None)
    return cls if isinstance(cls, type) else None


# Words of the dtypes and devices seen (a handful per process; torch makes them once).
_DTYPE_WORDS: dict[object, str] = {}
_DEVICE_WORDS: dict[object, str] = {}
_UNSEEN: Any = object()
_owning = HeavyFacts.owning


class DenseReader:
    """Reads plain strided tensors for one batch; use with ``__torch_function__`` disabled.

    Holds the classes it has seen until dropped: make one per batch, never keep it.
    """

    def __init__(self, torch: Any) -> None:
        C = torch._C
        base = C.TensorBase
        self._layout = base.layout.__get__
        self._nested = base.is_nested.__get__
        self._device = base.device.__get__
        self._dtype = base.dtype.__get__
        self._shape = base.shape.__get__
        self._untyped_storage = base.untyped_storage
        self._strided = torch.strided
        self._use_count = getattr(C, "_storage_Use_Count", None)
        fake = fake_tensor_type()
        self._is_plain = TypeMemo(lambda cls: fake is None or not issubclass(cls, fake))
        # The memo's own table, read inline: a call per tensor costs as much as a C accessor.
        self._plain_known = self._is_plain.known
        # (class, device, dtype, shape) -> (description, device words); None for meta.
        self._words: dict[tuple[object, ...], tuple[str, str] | None] = {}

    def read_many(self, objects: Iterable[object]) -> list[HeavyFacts | None]:
        """The facts of each plain strided tensor; None for another layout, a nested, fake
        or meta tensor, or one that raises (``describe_any`` reads those, and would give the
        same result). One loop for the batch: a call per tensor costs as much as two of
        torch's accessors, and the monitor reads a step's tensors at every analysis."""
        if _read_dense is None:
            return self.read_many_in_python(objects)
        spec = (
            self._plain_known,
            self._is_plain,
            self._layout,
            self._nested,
            self._strided,
            self._device,
            self._dtype,
            self._shape,
            self._untyped_storage,
            self._use_count,
            self._words,
            _words,
            HeavyFacts,
            OWNING_FIELDS,
            "torch.Tensor",
        )
        found: list[HeavyFacts | None] = _read_dense(objects, spec)
        return found

    def read_many_in_python(self, objects: Iterable[object]) -> list[HeavyFacts | None]:
        """:meth:`read_many`'s loop in Python (what ``whyalive.kinds._dense`` runs in C)."""
        found: list[HeavyFacts | None] = []
        append = found.append
        plain_known, is_plain = self._plain_known, self._is_plain
        layout_of, nested, strided = self._layout, self._nested, self._strided
        device_of, dtype_of, shape_of = self._device, self._dtype, self._shape
        storage_of, use_count, known_words = self._untyped_storage, self._use_count, self._words
        last_class: type | None = None  # a batch's tensors are mostly of one class
        for obj in objects:
            cls = type(obj)
            try:
                if cls is not last_class:
                    plain = plain_known.get(id(cls))
                    if not (plain[1] if plain is not None and plain[0] is cls else is_plain(cls)):
                        append(None)
                        continue
                    last_class = cls
                if layout_of(obj) is not strided or nested(obj):
                    append(None)
                    continue
                device_object = device_of(obj)
                dtype_object = dtype_of(obj)
                shape = shape_of(obj)
                key = (cls, device_object, dtype_object, shape)
                words = known_words.get(key, _UNSEEN)
                if words is _UNSEEN:
                    words = known_words[key] = _words(cls, device_object, dtype_object, shape)
                if words is None:
                    append(None)
                    continue
                storage = storage_of(obj)
                cdata = int(storage._cdata)
                nbytes = int(storage.nbytes())
                start = int(storage.data_ptr())
                # One count is the temporary storage object we hold right now.
                sharers = int(use_count(cdata)) - 1 if use_count is not None else 0
                del storage
            except Exception:  # a hostile or half-dead tensor: as describe() reads it
                append(None)
                continue
            append(
                _owning(
                    "torch.Tensor",
                    words[0],
                    nbytes,
                    words[1],
                    ("torch", words[1], cdata),
                    sharers,
                    (start, start + nbytes) if start else None,
                )
            )
        return found


def _words(
    cls: type, device_object: object, dtype_object: object, shape: tuple[object, ...]
) -> tuple[str, str] | None:
    """A tensor's description and device in words (None on the meta device)."""
    device = _DEVICE_WORDS.get(device_object)
    if device is None:
        device = _DEVICE_WORDS.setdefault(device_object, str(device_object))
    if device == "meta":
        return None
    dtype = _DTYPE_WORDS.get(dtype_object)
    if dtype is None:
        dtype = _DTYPE_WORDS.setdefault(dtype_object, str(dtype_object).removeprefix("torch."))
    dims = ", ".join(map(str, shape))
    return f"{type_short_name(cls)}({dtype}[{dims}], {device})", device
