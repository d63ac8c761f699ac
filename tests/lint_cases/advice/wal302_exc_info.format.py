"""WAL302: `sys.exc_info()` kept in a local to describe the error."""

import traceback

import torch

CODE = "WAL302"
HOLD = "gc"


def attempt(job, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    try:
        return float(job(scratch)), ""
    except ValueError:
        return None, traceback.format_exc().strip().splitlines()[-1]


def _bad(scratch):
    raise ValueError("bad input")


def scenario(keep):
    return attempt(_bad, keep)
