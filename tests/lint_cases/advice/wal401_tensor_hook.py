"""WAL401: a gradient hook on an intermediate tensor that reads the tensor: the hook lives on
its autograd node, in C++, so not even the collector frees the pair."""

import torch

CODE = "WAL401"
HOLD = "c++"


def scaled_grad(keep):
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    keep(y)
    y.register_hook(lambda grad: grad * float(y.detach().sum()))
    y.sum().backward()
    return x.grad.tolist()


def scenario(keep):
    return scaled_grad(keep)
