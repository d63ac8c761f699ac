"""A wrapper that replaces a module's ``forward`` with a ``partial`` of its own bound method.

Source: https://github.com/facebookresearch/fairscale/pull/424 - ``checkpoint_wrapper``
did ``module.forward = functools.partial(_checkpointed_forward, module.forward, ...)``:
module -> ``forward`` (partial) -> bound method -> module, so wrapped modules (and
their GPU memory) were freed only by the cyclic collector.
"""

from __future__ import annotations

import functools

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


def _checkpointed_forward(original_forward: object, offload: bool, x: float) -> float:
    assert callable(original_forward)
    result = float(original_forward(x))
    return -result if offload else result


class Block:
    def __init__(self) -> None:
        self.weight = heavy()

    def forward(self, x: float) -> float:
        return x + float(self.weight.shape[0])


def checkpoint_wrapper(module: Block, offload_to_cpu: bool = False) -> Block:
    module.forward = functools.partial(_checkpointed_forward, module.forward, offload_to_cpu)  # type: ignore[method-assign]
    return module


def run() -> object:
    block = checkpoint_wrapper(Block())
    return block.forward(1.0)
