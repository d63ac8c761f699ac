"""WAL201: a plain class (not an nn.Module, no `forward` of its own) exposes `forward` by
storing another method's bound method under that name."""

import weakref

import torch

CODE = "WAL201"
HOLD = "gc"


class Scorer:
    def __init__(self, weight):
        self.weight = weight
        method = weakref.WeakMethod(self.score)
        self.forward = lambda *args, **kwargs: method()(*args, **kwargs)

    def score(self, x):
        return float((self.weight * x).sum())


def scenario(keep):
    scorer = Scorer(torch.full((3,), 2.0))
    keep(scorer.weight)
    return scorer.forward(torch.ones(3)), scorer.forward(torch.arange(3.0))
