"""WAL501: a bounded cache (`maxsize=2`) on a method that reads the instance: the instances
of its last two calls stay alive."""

import torch

CODE = "WAL501"
HOLD = "cache"


class Embedder:
    def __init__(self, table):
        self.table = table
        self._rows = {}

    def row(self, i):
        if i not in self._rows:
            self._rows[i] = float(self.table[i].sum())
        return self._rows[i]


def scenario(keep):
    embedder = Embedder(torch.ones(4, 2))
    keep(embedder.table)
    return [embedder.row(1), embedder.row(1), embedder.row(2)]
