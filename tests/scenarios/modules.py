"""A throwaway module in ``sys.modules``: the user's module whose globals hold objects."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator


@contextlib.contextmanager
def throwaway_module(name: str) -> Iterator[types.ModuleType]:
    """Register an empty module as ``name`` for the block; unregister and empty it after."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        yield module
    finally:
        del sys.modules[name]
        module.__dict__.clear()
