"""WAL402: a closure over a tensor attached to the tensor's own autograd node."""

import weakref

import torch

CODE = "WAL402"
HOLD = "c++"


def tagged(keep):
    x = torch.ones(3, requires_grad=True)
    out = x * 2
    keep(out)
    ref = weakref.ref(out)
    out.grad_fn.metadata["total"] = lambda: float(ref().detach().sum())
    return out.grad_fn.metadata["total"]()


def scenario(keep):
    return tagged(keep)
