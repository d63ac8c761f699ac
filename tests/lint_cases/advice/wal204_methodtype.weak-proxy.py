"""WAL204: a model's forward patched with a method bound to the model."""

import weakref
from types import MethodType

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


def _doubled_forward(self, x):
    return nn.functional.linear(x, self.weight, self.bias) * 2


def doubled(model, x):
    model.forward = MethodType(_doubled_forward, weakref.proxy(model))
    with torch.no_grad():
        return model(x).tolist()


def scenario(keep):
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    keep(model.weight)
    return doubled(model, torch.ones(1, 4))
