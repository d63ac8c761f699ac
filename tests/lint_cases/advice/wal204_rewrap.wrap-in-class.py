"""WAL204: a public method wrapped per instance at init (`self.m = wrap(self.m)`, lightning's
`rank_zero_only(self.compute_and_log)`): callers call `monitor.compute()`."""

import functools

import torch

CODE = "WAL204"
HOLD = "gc"
RANK = 0


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return fn(*args, **kwargs) if RANK == 0 else None

    return wrapped


class Monitor:
    def __init__(self, history):
        self.history = history

    @rank_zero_only
    def compute(self):
        return float(self.history.sum())


def scenario(keep):
    monitor = Monitor(torch.ones(3))
    keep(monitor.history)
    return monitor.compute(), Monitor.compute.__name__
