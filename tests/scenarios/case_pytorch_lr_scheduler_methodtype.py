"""An LR scheduler counts optimizer steps by binding a counting step to the optimizer.

Source: https://github.com/pytorch/pytorch/pull/25776 - the scheduler patched
``optimizer.step`` with a wrapper that held the optimizer (issue #25605), and the
discussion asks whether binding the wrapper with ``types.MethodType`` instead avoids the
cycle. It does not: ``optimizer.step = types.MethodType(counted_step, optimizer)`` stores
on the optimizer a bound method whose ``__self__`` is the optimizer.
"""

from __future__ import annotations

import types

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Optimizer:
    def __init__(self, params: list[float]) -> None:
        self.params = params
        self.state = heavy()
        self._step_count = 0

    def step(self) -> float:
        return sum(self.params)


def counted_step(self: Optimizer) -> float:
    self._step_count += 1
    return Optimizer.step(self)


class StepLR:
    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        optimizer.step = types.MethodType(counted_step, optimizer)  # type: ignore[method-assign]


def run() -> object:
    optimizer = Optimizer([1.0, 2.0])
    StepLR(optimizer)
    return optimizer.step(), optimizer._step_count
