"""WAL302: `sys.exc_info()` kept in a local to describe the error."""

import sys

import torch

CODE = "WAL302"
HOLD = "gc"


def attempt(job, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    try:
        return float(job(scratch)), ""
    except ValueError:
        info = sys.exc_info()
        return None, f"{info[0].__name__}: {info[1]}"


def _bad(scratch):
    raise ValueError("bad input")


def scenario(keep):
    return attempt(_bad, keep)
