"""WAL301: an error from a worker kept on the object and raised later from another method
(lightning's `AsyncCheckpointIO`)."""

import torch

CODE = "WAL301"
HOLD = "gc"


class Saver:
    def __init__(self):
        self._error = None
        self.saved = None

    def save(self, payload, fail):
        def _do():
            try:
                if fail:
                    raise OSError("disk full")
                self.saved = float(payload.sum())
            except OSError as ex:
                self._error = ex

        _do()
        if self._error:
            raise self._error


def scenario(keep):
    saver = Saver()
    payload = torch.ones(3)
    keep(payload)
    try:
        saver.save(payload, fail=True)
    except OSError as exc:
        return str(exc), exc.__traceback__ is not None, saver.saved
