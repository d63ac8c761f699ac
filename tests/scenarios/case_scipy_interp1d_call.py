"""An interpolator picks its method once and keeps it as a bound method on itself.

Source: https://github.com/scipy/scipy/pull/2502 - ``interp1d`` kept references to itself
"via a reference to one of its methods" (``self._call = self._call_linear``), so an
interpolator and its data were not freed without the cyclic collector.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Interp1d:
    def __init__(self, kind: str) -> None:
        self.y = heavy()
        if kind == "linear":
            self._call = self._call_linear
        else:
            self._call = self._call_nearest

    def _call_linear(self, x: float) -> float:
        return x * 2

    def _call_nearest(self, x: float) -> float:
        return float(round(x))

    def __call__(self, x: float) -> Any:
        return self._call(x)


def run() -> object:
    return Interp1d("linear")(1.25)
