"""WAL303: the current frame kept in a local to read the caller's name."""

import inspect

import torch

CODE = "WAL303"
HOLD = "gc"


def caller_name(keep):
    scratch = torch.zeros(2)
    keep(scratch)
    frame = inspect.currentframe()
    try:
        return frame.f_back.f_code.co_name
    finally:
        del frame


def scenario(keep):
    return caller_name(keep)
