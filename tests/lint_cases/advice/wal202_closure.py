"""WAL202: a lambda over `self` stored on `self`."""

import torch

CODE = "WAL202"
HOLD = "gc"


class Counter:
    def __init__(self, values):
        self.values = values
        self.total = lambda: float(self.values.sum())


def scenario(keep):
    counter = Counter(torch.ones(3))
    keep(counter.values)
    return counter.total()
