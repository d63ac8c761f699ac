"""A module that registers its own bound method as a ``load_state_dict`` pre-hook.

Source: https://github.com/cornellius-gp/gpytorch/pull/2777 - ``gpytorch.Module``
registered a bound-method ``load_state_dict`` pre-hook in ``__init__``: module ->
``_load_state_dict_pre_hooks`` -> bound method -> module, keeping an ExactGP's training
inputs alive after the model went out of scope.
"""

from __future__ import annotations

import torch

from scenarios.payload import tensor

PATTERN = "hook-registry"


class ExactGP(torch.nn.Module):
    def __init__(self, train_inputs: torch.Tensor) -> None:
        super().__init__()
        self.train_inputs = train_inputs
        self.loaded = 0
        self._register_load_state_dict_pre_hook(self._load_hook)

    def _load_hook(self, state_dict: dict[str, object], prefix: str, *args: object) -> None:
        self.loaded += 1


def run() -> object:
    model = ExactGP(tensor(128, 128))
    model.load_state_dict(model.state_dict())
    return model.loaded
