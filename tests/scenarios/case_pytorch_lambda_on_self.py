"""A lambda stored on ``self`` that uses ``self``.

Source: https://github.com/pytorch/pytorch/issues/51883 - ``self._leak_fcn = lambda:
self.obj2.fcn()`` in ``__init__`` kept every instance, and the CUDA tensor it was given,
alive until a collection: instance -> lambda -> closure cell ``self`` -> instance.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Helper:
    def fcn(self) -> int:
        return 7


class Solver:
    def __init__(self, x0: object) -> None:
        self.x0 = x0
        self.obj2 = Helper()
        self._leak_fcn = lambda: self.obj2.fcn()

    def value(self) -> int:
        return self._leak_fcn()


def run() -> object:
    return Solver(heavy()).value()
