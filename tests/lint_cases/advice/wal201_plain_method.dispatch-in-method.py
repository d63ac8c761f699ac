"""WAL201: a plain class that defines `run` replaces it per instance with a faster method
when asked to."""

import torch

CODE = "WAL201"
HOLD = "gc"


class Runner:
    def __init__(self, table, fast):
        self.table = table
        self._use_run_fast = fast

    def run(self, index):
        if self._use_run_fast:
            return self.run_fast(index)
        return float(self.table[index].sum())

    def run_fast(self, index):
        return float(self.table[index].sum()) + 0.5


def scenario(keep):
    results = []
    for fast in (False, True):
        runner = Runner(torch.arange(12.0).reshape(3, 4), fast)
        keep(runner.table)
        results.append([runner.run(i) for i in range(3)])
    return results
