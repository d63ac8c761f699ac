"""A forward hook defined in ``__init__`` that uses ``self``, registered on the module itself.

Source: https://github.com/pytorch/pytorch/issues/46386 - instantiating a module whose
``__init__`` registers a forward hook closing over ``self`` kept every instance (and
its GPU parameters) alive until a collection: module -> ``_forward_hooks`` -> hook ->
closure cell ``self`` -> module.
"""

from __future__ import annotations

import torch

from scenarios.payload import track

PATTERN = "hook-registry"


class LeakyModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = track(torch.nn.Parameter(torch.zeros(256, 64)))
        self.calls = 0

        def fw_hook(module: torch.nn.Module, inputs: object, output: torch.Tensor) -> None:
            self.calls += 1

        self.register_forward_hook(fw_hook)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.scale


def run() -> object:
    model = LeakyModule()
    with torch.no_grad():
        out = model(torch.ones(2, 256))
    return model.calls, tuple(out.shape)
