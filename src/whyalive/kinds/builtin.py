"""The kinds whyalive knows without being told: big buffers, NumPy arrays, torch tensors.

Registered by ``import whyalive`` (whyalive/__init__.py runs before any of its submodules),
so the registry in ``whyalive.kinds`` imports none of the kinds that import it.
"""

from __future__ import annotations

from whyalive.kinds import register_kind
from whyalive.kinds.buffers import BufferKind
from whyalive.kinds.numpy import NumpyKind
from whyalive.kinds.torch import TorchKind


def register_builtin_kinds() -> None:
    """Register the built-in kinds; kinds a user registers later are tried first."""
    for kind in (BufferKind(), NumpyKind(), TorchKind()):
        register_kind(kind)
