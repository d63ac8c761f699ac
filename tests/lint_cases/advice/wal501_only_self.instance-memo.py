"""WAL501: a cache on a method that takes only the instance."""

import torch

CODE = "WAL501"
HOLD = "cache"


class Weights:
    def __init__(self, table):
        self.table = table
        self._norm = None

    def norm(self):
        if self._norm is None:
            self._norm = round(float(self.table.norm()), 4)
        return self._norm


def scenario(keep):
    weights = Weights(torch.ones(4, 2))
    keep(weights.table)
    return [weights.norm(), weights.norm()]
