"""WAL301: the last error kept to be raised again as the cause of the final one: its text
or a traceback-less copy would change what the final error shows."""

import torch

CODE = "WAL301"
HOLD = "gc"


def retry(job, attempts, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    last = None
    try:
        for _ in range(attempts):
            try:
                return float(job(scratch).sum())
            except ValueError as err:
                last = err
        raise RuntimeError("gave up") from last
    finally:
        del last


def _always_fails(scratch):
    raise ValueError("no luck")


def scenario(keep):
    try:
        retry(_always_fails, 2, keep)
    except RuntimeError as exc:
        # No local for the cause: its traceback holds `retry`'s frame, whose `f_back` is
        # this frame (a cycle of the test's own making).
        return str(exc), repr(exc.__cause__), exc.__cause__.__traceback__ is not None
