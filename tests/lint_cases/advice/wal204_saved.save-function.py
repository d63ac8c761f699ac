"""WAL204: a module's bound forward saved on the module."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


def remember(model):
    model._original_forward = type(model).forward


def scenario(keep):
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    keep(model.weight)
    remember(model)
    with torch.no_grad():
        return model._original_forward(model, torch.ones(1, 4)).tolist()
