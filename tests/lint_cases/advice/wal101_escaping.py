"""WAL101: a recursive closure that is returned keeps what it captured (`scale`) alive."""

import torch

CODE = "WAL101"
HOLD = "gc"


def make_sizer(scale):
    def size(node):
        return float(scale.sum()) + sum(size(child) for child in node)

    return size


def scenario(keep):
    scale = torch.ones(3)
    keep(scale)
    sizer = make_sizer(scale)
    return sizer([[], [[]]])
