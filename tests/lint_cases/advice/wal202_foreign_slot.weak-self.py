"""WAL202: a callback over `self` put in a slot of an object `self` owns (a profiler's
`on_trace_ready`), called by that object, never by this class."""

import weakref

import torch

CODE = "WAL202"
HOLD = "gc"


class Engine:
    steps = 3
    on_ready = None

    def finish(self):
        self.on_ready(self)


class Profiler:
    def __init__(self, trace):
        self.trace = trace
        self.engine = Engine()
        self.exported = []

    def start(self, name):
        ref = weakref.ref(self)

        def on_ready(engine):
            ref().exported.append(f"{name}:{engine.steps}:{float(ref().trace.sum())}")

        self.engine.on_ready = on_ready


def scenario(keep):
    profiler = Profiler(torch.ones(2))
    keep(profiler.trace)
    profiler.start("train")
    profiler.engine.finish()
    return profiler.exported
