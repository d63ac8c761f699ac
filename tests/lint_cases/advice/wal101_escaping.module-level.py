"""WAL101: a recursive closure that is returned keeps what it captured (`scale`) alive."""

import functools

import torch

CODE = "WAL101"
HOLD = "gc"


def _size(node, scale):
    return float(scale.sum()) + sum(_size(child, scale) for child in node)


def make_sizer(scale):
    return functools.partial(_size, scale=scale)


def scenario(keep):
    scale = torch.ones(3)
    keep(scale)
    sizer = make_sizer(scale)
    return sizer([[], [[]]])
