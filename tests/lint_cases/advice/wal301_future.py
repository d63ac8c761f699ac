"""WAL301: an error handed to a future, which raises it from `result()`."""

from concurrent.futures import Future

import torch

CODE = "WAL301"
HOLD = "gc"


def run(job, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    fut = Future()
    try:
        fut.set_result(float(job(scratch)))
    except ValueError as err:
        fut.set_exception(err)
    return fut


def _bad(scratch):
    raise ValueError("failed")


def scenario(keep):
    try:
        run(_bad, keep).result()
    except ValueError as exc:
        return str(exc), exc.__traceback__ is not None
