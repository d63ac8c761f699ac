"""A jit stores on its compile data a nested function that captures that compile data.

Source: https://github.com/Lightning-AI/lightning-thunder/pull/2449 - in ``thunder.jit``,
inner functions such as ``populate_cache_info`` capture ``cd`` (the ``CompileData``) and
are then stored on it (``cd.populate_cache_info = populate_cache_info``): the compile data
and the model it holds stayed alive after the jitted function was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Model:
    def __init__(self) -> None:
        self.weight = heavy()

    def __call__(self, x: float) -> float:
        return x + float(self.weight.size)


class CompileData:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.cache: dict[int, str] = {}


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    cd = CompileData(fn)

    def populate_cache_info(key: int) -> int:
        cd.cache[key] = type(cd.fn).__name__
        return len(cd.cache)

    cd.populate_cache_info = populate_cache_info  # type: ignore[attr-defined]

    def wrapped(*args: Any) -> Any:
        cd.populate_cache_info(len(args))  # type: ignore[attr-defined]
        return cd.fn(*args)

    return wrapped


def run() -> object:
    return jit(Model())(1.0)
