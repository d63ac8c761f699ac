"""WAL301: a job hands its error to a future it keeps on itself."""

from concurrent.futures import Future

import torch

CODE = "WAL301"
HOLD = "gc"


class Job:
    def __init__(self):
        self.future = Future()

    def run(self, payload, keep):
        scratch = payload * 2
        keep(scratch)
        try:
            raise RuntimeError(f"failed on {int(scratch.sum())}")
        except RuntimeError as err:
            self.future.set_exception(err)


def scenario(keep):
    job = Job()
    job.run(torch.ones(3), keep)
    outcome = str(job.future.exception())
    return outcome
