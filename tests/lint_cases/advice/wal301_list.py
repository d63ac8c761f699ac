"""WAL301: errors collected in a list, reported by their text."""

import torch

CODE = "WAL301"
HOLD = "gc"


def collect_errors(jobs, keep):
    scratch = torch.zeros(4)
    keep(scratch)
    errors = []
    for job in jobs:
        try:
            scratch += job()
        except ValueError as err:
            errors.append(err)
    return [str(e) for e in errors], float(scratch.sum())


def _bad():
    raise ValueError("bad job")


def scenario(keep):
    return collect_errors([_bad, lambda: torch.ones(4), _bad], keep)
