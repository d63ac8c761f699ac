"""WAL203: a module registers its own bound method as a hook on itself."""

import torch
from torch import nn

CODE = "WAL203"
HOLD = "gc"


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.calls = 0
        self.register_forward_pre_hook(self._count)

    def _count(self, module, args):
        self.calls += 1

    def forward(self, x):
        return self.linear(x)

    def close(self):
        pass


def scenario(keep):
    torch.manual_seed(0)
    model = Counted()
    keep(model.linear.weight)
    with torch.no_grad():
        out = model(torch.ones(1, 4)).tolist()
        model(torch.ones(1, 4))
    calls = model.calls
    model.close()
    return out, calls
