"""torch tensors, read through ``torch._C.TensorBase`` so subclasses run no user code."""

from __future__ import annotations

import sys
from typing import Any

from whyalive.guarded import type_short_name
from whyalive.kinds import HeavyFacts


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
        """Shape, dtype, device and storage, with ``__torch_function__`` disabled."""
        torch: Any = sys.modules["torch"]
        base = torch._C.TensorBase
        with torch._C.DisableTorchFunctionSubclass():
            device = str(base.device.__get__(obj))
            dtype = str(base.dtype.__get__(obj)).removeprefix("torch.")
            dims = ", ".join(str(int(d)) for d in base.shape.__get__(obj))
            fake_type = _fake_tensor_type()
            is_fake = fake_type is not None and issubclass(type(obj), fake_type)
            name = type_short_name(type(obj))
            description = f"{name}({dtype}[{dims}], {device})"
            if is_fake or device == "meta":
                return HeavyFacts("torch.Tensor", description, 0, device, ("torch", id(obj)))
            try:
                storage = base.untyped_storage(obj)
            except RuntimeError:
                # Sparse and other storage-less layouts: count the elements they span.
                nbytes = int(base.element_size(obj)) * int(base.numel(obj))
                return HeavyFacts("torch.Tensor", description, nbytes, device, ("torch", id(obj)))
            nbytes = int(storage.nbytes())
            key = ("torch", device, int(storage._cdata))
            sharers = 0
            use_count = getattr(torch._C, "_storage_Use_Count", None)
            if use_count is not None:
                # One count is the temporary storage object we hold right now.
                sharers = int(use_count(storage._cdata)) - 1
            del storage
        return HeavyFacts("torch.Tensor", description, nbytes, device, key, storage_users=sharers)
