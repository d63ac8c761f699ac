"""WAL401: a forward hook on a module that reads the module through its closure."""

import torch
from torch import nn

CODE = "WAL401"
HOLD = "gc"


def traced(x, keep):
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    keep(model.weight)
    seen = []
    model.register_forward_hook(lambda mod, args, out: seen.append(float(mod.weight.sum())))
    with torch.no_grad():
        model(x)
    return seen


def scenario(keep):
    return traced(torch.ones(1, 4), keep)
