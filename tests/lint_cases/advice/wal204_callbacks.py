"""WAL204: a callback that passes the model on, appended to a list the model owns."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.callbacks = []

    def forward(self, x):
        out = self.linear(x)
        for callback in self.callbacks:
            callback(out)
        return out


def _norm_of(model):
    return round(float(model.linear.weight.norm()), 4)


def watch(model, seen):
    def record(out):
        seen.append((_norm_of(model), round(float(out.sum()), 4)))

    model.callbacks.append(record)


def scenario(keep):
    torch.manual_seed(0)
    model = Net()
    keep(model.linear.weight)
    seen = []
    watch(model, seen)
    with torch.no_grad():
        model(torch.ones(1, 4))
    return seen
