"""WAL101: a recursive closure that is returned keeps what it captured (`scale`) alive."""

import torch

CODE = "WAL101"
HOLD = "gc"


def make_sizer(scale):
    def _size(node, _size):
        return float(scale.sum()) + sum(_size(child, _size) for child in node)

    def size(node):
        return _size(node, _size)

    return size


def scenario(keep):
    scale = torch.ones(3)
    keep(scale)
    sizer = make_sizer(scale)
    return sizer([[], [[]]])
