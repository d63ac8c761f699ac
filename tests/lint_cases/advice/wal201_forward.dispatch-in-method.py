"""WAL201: an nn.Module picks its forward at init by storing a bound method on itself."""

import torch
from torch import nn

CODE = "WAL201"
HOLD = "gc"


class Block(nn.Module):
    def __init__(self, split):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self._use_forward_split = split

    def forward(self, x):
        if self._use_forward_split:
            return self.forward_split(x)
        return self.linear(x)

    def forward_split(self, x):
        a, b = x.chunk(2, dim=-1)
        return self.linear(torch.cat([b, a], dim=-1)) * 2


def scenario(keep):
    torch.manual_seed(0)
    results = []
    for split in (False, True):
        block = Block(split)
        keep(block.linear.weight)
        with torch.no_grad():
            results.append(block(torch.arange(4.0).reshape(1, 4)).tolist())
    return results
