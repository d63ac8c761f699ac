"""Eval cases for issue 17: 2xx cycles through an instance that holds nothing heavy are WAL904."""
import logging
import functools

import torch
from torch import nn


# Light: an activation without parameters (nn.Module's own dicts start empty).
class GeluTanh(nn.Module):
    def __init__(self, use_python: bool = False):
        super().__init__()
        if use_python:
            self.act = self._python  # WAL904: 14, 12
        else:
            self.act = functools.partial(nn.functional.gelu, approximate="tanh")

    def _python(self, x):
        return x * 0.5

    def forward(self, x):
        return self.act(x)


# Light: only strings, numbers, flags, loggers and bound methods of its own.
class Router:
    def __init__(self, name: str, retries: int = 3):
        self.name = name
        self.retries = retries
        self.seen = set()
        self.log = logging.getLogger(name)
        self.table = {"a": self.on_a, "b": self.on_b}  # WAL904: 32, 8
        self.register_callback(self.on_a)  # WAL904: 33, 8
        self.fmt = lambda: f"{self.name}:{self.retries}"  # WAL904: 34, 8

    def on_a(self):
        self.seen.add(self.name.lower())

    def on_b(self):
        pass


# Heavy: a parameter, a buffer, a submodule, an unannotated argument, setattr of anything.
class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1))
        self.act = self._python  # WAL201: 48, 8

    def _python(self, x):
        return x * self.alpha


class Buffered(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.act = self._python  # WAL201: 58, 8

    def _python(self, x):
        return x - self.mean


class Keeps:
    def __init__(self, losses):
        self.losses = losses
        self.loss_map = {"iou": self.iou}  # WAL201: 67, 8

    def iou(self):
        pass


class Dynamic:
    def __init__(self, **kwargs: int):
        for key, value in kwargs.items():
            setattr(self, key, value)
        self.cb = self.step  # WAL201: 77, 8

    def configure(self, key: str, value):
        setattr(self, key, value)

    def step(self):
        pass


# Heavy: an imported base may hold anything; a same-file subclass stores a tensor.
class Imported(PreTrainedModel):
    def __init__(self):
        self.cb = self.step  # WAL201: 89, 8

    def step(self):
        pass


class LightBase:
    def __init__(self):
        self.cb = self.step  # WAL201: 97, 8

    def step(self):
        pass


class HeavySub(LightBase):
    def load(self, path: str):
        self.state = torch.load(path)


# Light: every attribute lands in a dict the class holds (the Borg idiom), alive anyway.
class SharedState:
    _shared_state = {}

    def __init__(self, backend=None):
        """One state per process."""
        self.__dict__ = self._shared_state
        self.backend = backend
        self.on_exit = self.close  # WAL904: 116, 8

    def close(self):
        pass


class NotShared:
    def __init__(self, backend=None):
        self.backend = backend
        self.__dict__ = self._shared_state
        self.on_exit = self.close  # WAL201: 126, 8

    def close(self):
        pass


# Attributes declared with a light type are light whatever they are given later.
class Environment:
    def __init__(self):
        self._rank: Optional[int] = None
        self.hosts: list[str] = []

    def setup(self, comm):
        self._rank = comm.Get_rank()
        self.hosts = comm.allgather(self.name())

    def name(self):
        return "host"

    def install(self):
        self.report = self.name  # WAL904: 146, 8
