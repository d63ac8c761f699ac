"""Plain strided tensors read fast: the monitor describes a step's tensors at every analysis.

:class:`DenseReader` looks torch's accessors up once per batch and writes the words of
each (class, device, dtype, shape) once, so a batch of a thousand alike tensors costs
a handful of C calls per tensor; every other tensor is left to
:meth:`whyalive.kinds.torch.TorchKind.describe_any`, which gives the same facts.
"""

from __future__ import annotations

import sys
from typing import Any

from whyalive.guarded import TypeMemo, type_short_name
from whyalive.kinds import HeavyFacts


def fake_tensor_type() -> type | None:
    """``FakeTensor`` when torch's fake tensors are loaded (they hold no real memory)."""
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    cls = getattr(fake, "FakeTensor", None)
    return cls if isinstance(cls, type) else None


# Words of the dtypes and devices seen (a handful per process; torch makes them once).
_DTYPE_WORDS: dict[object, str] = {}
_DEVICE_WORDS: dict[object, str] = {}
_UNSEEN: Any = object()


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

    def read(self, obj: object) -> HeavyFacts | None:
        """The facts of a plain strided tensor; None for another layout, a nested, fake or
        meta tensor (``describe_any`` reads those, and would give the same result)."""
        cls = type(obj)
        plain = self._plain_known.get(id(cls))
        if plain is None or plain[0] is not cls:
            if not self._is_plain(cls):
                return None
        elif not plain[1]:
            return None
        if self._layout(obj) is not self._strided or self._nested(obj):
            return None
        device_object = self._device(obj)
        dtype_object = self._dtype(obj)
        shape = self._shape(obj)
        key = (cls, device_object, dtype_object, shape)
        words = self._words.get(key, _UNSEEN)
        if words is _UNSEEN:
            words = self._words[key] = _words(cls, device_object, dtype_object, shape)
        if words is None:
            return None
        description, device = words
        storage = self._untyped_storage(obj)
        cdata = int(storage._cdata)
        nbytes = int(storage.nbytes())
        start = int(storage.data_ptr())
        use_count = self._use_count
        # One count is the temporary storage object we hold right now.
        sharers = int(use_count(cdata)) - 1 if use_count is not None else 0
        del storage
        return HeavyFacts.owning(
            "torch.Tensor",
            description,
            nbytes,
            device,
            ("torch", device, cdata),
            sharers,
            (start, start + nbytes) if start else None,
        )


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
