"""WAL201: a writer slot that holds either a sink's method or the object's own."""

import weakref

import torch

CODE = "WAL201"
HOLD = "gc"


class Reporter:
    def __init__(self, stats):
        self.stats = stats
        self.lines = []
        self._write = None

    def prepare(self, sink=None):
        if sink is not None:
            self._write = sink.append
        else:
            method = weakref.WeakMethod(self._log)
            self._write = lambda *args, **kwargs: method()(*args, **kwargs)

    def _log(self, text):
        self.lines.append(f"log: {text}")

    def report(self, sink=None):
        self.prepare(sink)
        self._write(f"mean {float(self.stats.mean()):.1f}")
        return self.lines


def scenario(keep):
    sink = []
    reporter = Reporter(torch.ones(3))
    keep(reporter.stats)
    lines = list(reporter.report())
    Reporter(torch.ones(2)).report(sink)
    return lines, sink
