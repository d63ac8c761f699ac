"""WAL501: a cache on a method that takes only the instance."""

import functools

import torch

CODE = "WAL501"
HOLD = "cache"


class Weights:
    def __init__(self, table):
        self.table = table

    @functools.cache
    def norm(self):
        return round(float(self.table.norm()), 4)


def scenario(keep):
    weights = Weights(torch.ones(4, 2))
    keep(weights.table)
    return [weights.norm(), weights.norm()]
