"""WAL201: an nn.Module without a `forward` of its own sets one per instance: the module
calls `self.forward`, which now holds the module."""

import torch
from torch import nn

CODE = "WAL201"
HOLD = "gc"


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.forward = self.project

    def project(self, x):
        return self.linear(x).relu()


def scenario(keep):
    torch.manual_seed(0)
    head = Head()
    keep(head.linear.weight)
    with torch.no_grad():
        return head(torch.arange(4.0).reshape(1, 4)).tolist()
