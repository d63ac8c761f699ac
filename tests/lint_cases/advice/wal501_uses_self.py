"""WAL501: a method cache that reads the instance: every instance called stays alive."""

import functools

import torch

CODE = "WAL501"
HOLD = "cache"


class Embedder:
    def __init__(self, table):
        self.table = table

    @functools.lru_cache(maxsize=None)
    def row(self, i):
        return float(self.table[i].sum())


def scenario(keep):
    embedder = Embedder(torch.ones(4, 2))
    keep(embedder.table)
    return [embedder.row(1), embedder.row(1), embedder.row(2)]
