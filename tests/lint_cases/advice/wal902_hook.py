"""WAL902 (opt-in): a gradient hook that captures a tensor, kept as long as the hook is."""

import torch

CODE = "WAL902"
HOLD = "none"


def weighted_grad(keep):
    scale = torch.full((3,), 2.0)
    keep(scale)
    x = torch.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad * scale)
    (x * 3).sum().backward()
    return x.grad.tolist()


def scenario(keep):
    return weighted_grad(keep)
