"""WAL301: a loader keeps the last error on itself, and only its text is read later."""

import torch

CODE = "WAL301"
HOLD = "gc"


class Loader:
    def __init__(self):
        self.error = None

    def load(self, payload, fail, keep):
        scratch = payload * 2
        keep(scratch)
        try:
            if fail:
                raise ValueError("corrupt shard")
            return float(scratch.sum())
        except ValueError as err:
            self.error = str(err)
        return None


def scenario(keep):
    loader = Loader()
    loaded = loader.load(torch.ones(3), True, keep)
    message = str(loader.error)
    return loaded, message
