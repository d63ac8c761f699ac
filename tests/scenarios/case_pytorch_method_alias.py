"""A module that keeps a bound method of itself in an attribute to pick a behaviour.

Source: https://github.com/pytorch/pytorch/issues/128211 - ``self.which_foo = self.foo``
in ``__init__`` was "simply creating a ref cycle": every instance, and the buffer it
registered, stayed in memory until ``gc.collect()``.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Model:
    def __init__(self, fast: bool) -> None:
        self.buffer = heavy()
        self.which_foo = self.foo if fast else self.bar

    def foo(self, x: float) -> float:
        return x + 1

    def bar(self, x: float) -> float:
        return x + 2

    def forward(self, x: float) -> float:
        return self.which_foo(x)


def run() -> object:
    return Model(fast=True).forward(1.0)
