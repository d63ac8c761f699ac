"""WAL301: the last error kept in a local, only for its text."""

import torch

CODE = "WAL301"
HOLD = "gc"


def run_jobs(jobs, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    last = None
    done = 0
    try:
        for job in jobs:
            try:
                scratch += job()
                done += 1
            except ValueError as err:
                last = err
        return done, float(scratch.sum()), str(last)
    finally:
        del last


def _bad():
    raise ValueError("bad job")


def scenario(keep):
    return run_jobs([lambda: torch.ones(4), _bad], keep)
