"""WAL402: a closure over a tensor attached to the tensor's own autograd node."""

import torch

CODE = "WAL402"
HOLD = "c++"


def tagged(keep):
    x = torch.ones(3, requires_grad=True)
    out = x * 2
    keep(out)
    notes = {"total": lambda: float(out.detach().sum())}
    return notes["total"]()


def scenario(keep):
    return tagged(keep)
