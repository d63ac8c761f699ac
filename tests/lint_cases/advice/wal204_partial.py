"""WAL204: a model's forward patched with a `partial` that holds the model."""

import functools

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


def _scaled_forward(module, x):
    return module.linear(x) * module.scale


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.scale = 3.0


def scaled(model, x):
    model.forward = functools.partial(_scaled_forward, model)
    with torch.no_grad():
        return model(x).tolist()


def scenario(keep):
    torch.manual_seed(0)
    model = Scaled()
    keep(model.linear.weight)
    return scaled(model, torch.ones(1, 4))
