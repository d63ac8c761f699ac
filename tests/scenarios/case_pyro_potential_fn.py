"""An algorithm that hands its own bound method to a kernel it keeps.

Source: https://github.com/pyro-ppl/pyro/pull/1938 - ``self.nuts =
NUTS(potential_fn=self.potential_fn)``: the object holds the kernel, the kernel holds
the bound method, the bound method holds the object. Pyro added a ``@weakmethod``
decorator to break it; the kernel must still call ``potential_fn(params)``.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class NUTS:
    def __init__(self, potential_fn: object, step_size: float = 0.1) -> None:
        self.potential_fn = potential_fn
        self.step_size = step_size

    def sample(self, params: float) -> float:
        assert callable(self.potential_fn)
        return float(self.potential_fn(params)) - self.step_size


class BigInference:
    def __init__(self) -> None:
        self.data = heavy()
        self.nuts = NUTS(potential_fn=self.potential_fn)

    def potential_fn(self, params: float) -> float:
        return params * 2 + float(self.data[0])


def run() -> object:
    algorithm = BigInference()
    return algorithm.nuts.sample(3.0)
