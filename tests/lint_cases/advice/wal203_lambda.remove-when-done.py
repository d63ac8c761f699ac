"""WAL203: a lambda that captures `self` registered as a callback on an object `self` owns."""

import torch

CODE = "WAL203"
HOLD = "gc"


class Timer:
    def __init__(self):
        self._callbacks = {}

    def add_callback(self, callback):
        key = len(self._callbacks)
        self._callbacks[key] = callback
        return _Handle(self._callbacks, key)

    def fire(self):
        for callback in list(self._callbacks.values()):
            callback()


class _Handle:
    """Like torch's `RemovableHandle`: it knows the registry and a key, not the callback."""

    def __init__(self, callbacks, key):
        self._callbacks = callbacks
        self._key = key

    def remove(self):
        self._callbacks.pop(self._key, None)


class Meter:
    def __init__(self):
        self.total = torch.ones(4)
        self.ticks = 0
        self.timer = Timer()
        self._handle = self.timer.add_callback(lambda: self._tick())

    def _tick(self):
        self.ticks += 1

    def close(self):
        self._handle.remove()


def scenario(keep):
    meter = Meter()
    keep(meter.total)
    meter.timer.fire()
    meter.timer.fire()
    ticks = meter.ticks
    meter.close()
    return ticks
