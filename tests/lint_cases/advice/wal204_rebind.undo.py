"""WAL204: a patched `extra_repr` reset by binding the class's function to the module again
(torchao's quantizer)."""

import weakref
from types import MethodType

from torch import nn

CODE = "WAL204"
HOLD = "gc"


def _short_repr(self):
    return "short"


def reset_repr(module):
    if getattr(module.extra_repr, "__func__", None) is not nn.Linear.extra_repr:
        del module.extra_repr


def scenario(keep):
    module = nn.Linear(2, 2)
    keep(module.weight)
    module.extra_repr = MethodType(_short_repr, weakref.proxy(module))
    short = repr(module)
    reset_repr(module)
    return short, repr(module)
