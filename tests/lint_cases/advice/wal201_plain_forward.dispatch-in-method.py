"""WAL201: a plain class (not an nn.Module, no `forward` of its own) exposes `forward` by
storing another method's bound method under that name."""

import torch

CODE = "WAL201"
HOLD = "gc"


class Scorer:
    def __init__(self, weight):
        self.weight = weight

    def forward(self, *args, **kwargs):
        return self.score(*args, **kwargs)

    def score(self, x):
        return float((self.weight * x).sum())


def scenario(keep):
    scorer = Scorer(torch.full((3,), 2.0))
    keep(scorer.weight)
    return scorer.forward(torch.ones(3)), scorer.forward(torch.arange(3.0))
