"""One runnable leak per pattern of docs/patterns.md that no re-created bug report covers.

Each function leaves one cycle holding tracked payload (``payload.heavy``) and returns
something plain. The catalog lists them by hand with the pattern each must be named;
the fix-proof tests apply each report's ``fix_edit``, where it has one, and run it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import types
from collections import deque
from collections.abc import Iterator
from typing import Any

from scenarios.payload import heavy, tensor, track


class Group:
    """``self.members = [self]``: the object is the first member of its own list."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data = heavy(2048)
        self.members = [self]

    def names(self) -> list[str]:
        return [member.name for member in self.members]


def self_in_own_container() -> object:
    return Group("admins").names()


def _queue_job(queue: deque[dict[str, Any]], name: str) -> None:
    import numpy

    # Allocated here, not in a payload helper: the allocation site is this function.
    job = {"name": name, "data": track(numpy.zeros(1024, dtype=numpy.float32))}
    job["queue"] = queue  # each job points back to the queue that holds it
    queue.append(job)


def container_loop() -> object:
    queue: deque[dict[str, Any]] = deque()
    for name in ("a", "b", "c"):
        _queue_job(queue, name)
    return sum(len(job["queue"]) for job in queue)


def closure_loop() -> object:
    # A plugin made as a module at run time; its handler reads the module it lives in.
    plugin = types.ModuleType("plugin")
    plugin.table = heavy(1024)

    def handler() -> str:
        return f"{plugin.__name__}: {plugin.table.size}"

    plugin.handler = handler
    return plugin.handler()


class ParseError(Exception):
    pass


def frame_loop() -> object:
    first = ParseError("bad header", heavy(1024))
    second = ParseError("bad body")
    # Chaining by hand both ways: each exception is the other's context.
    first.__context__ = second
    second.__context__ = first
    return str(first)


def _replay(*args: Any) -> int:
    return len(args)


def reference_loop() -> object:
    step = functools.partial(_replay, heavy(1024))
    # Restored as unpickling restores state: the partial's function is the partial.
    step.__setstate__((step, (heavy(1024),), None, None))
    return len(step.args)


class Link:
    def __init__(self, data: Any) -> None:
        self.data = data
        self.next: Link | None = None


def linked_structure() -> object:
    first = last = Link(heavy(64))
    for _ in range(499):
        link = Link(heavy(64))
        last.next = link
        last = link
    last.next = first  # a ring: every link holds the next
    return first.data.size


def _stream(holder: dict[str, Any], buffer: Any) -> Iterator[int]:
    while True:
        try:
            yield buffer.size + len(holder)
        except GeneratorExit:  # ignores close(): the collector cannot clear its frame
            continue


def generator_frame() -> object:
    import numpy

    holder: dict[str, Any] = {}
    # Allocated here: the allocation site leads to the line that stores the generator.
    stream = _stream(holder, track(numpy.zeros(2048, dtype=numpy.float32)))
    holder["stream"] = stream
    return next(stream)


class Fetcher:
    """A client keeps the task it awaits; the task's coroutine raised."""

    def __init__(self) -> None:
        self.buffer = heavy(8192)
        self.task: asyncio.Task[None] | None = None

    async def fetch(self) -> None:
        await asyncio.sleep(0)
        raise ConnectionError("peer went away")

    async def start(self) -> str:
        self.task = asyncio.ensure_future(self.fetch())
        try:
            await self.task
        except ConnectionError:
            return "failed"
        return "ok"


def task_exception() -> object:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(Fetcher().start())
    finally:
        loop.close()


class Request:
    """A request hands the future it owns the exception it caught; the caller re-raises it
    synchronously (``run_until_complete``), in a frame that holds the future too."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.body = heavy(8192)
        self.done: asyncio.Future[None] = loop.create_future()

    def parse(self) -> None:
        try:
            int("not a number")
        except ValueError as err:
            self.done.set_exception(err)


def future_reraised() -> object:
    loop = asyncio.new_event_loop()
    try:
        request = Request(loop)
        request.parse()
        try:
            loop.run_until_complete(request.done)
        except ValueError as error:
            return type(error).__name__
        return "parsed"
    finally:
        loop.close()


class Service:
    """A service logs through an adapter whose extra context is the service itself."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cache = heavy(4096)
        self.log = logging.LoggerAdapter(logging.getLogger("svc"), {"service": self})

    def describe(self) -> str:
        return str(self.log.extra["service"].name).upper()


def logger_adapter() -> object:
    return Service("alpha").describe()


def autograd_node() -> object:
    import torch

    class Stash(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, owner: Any) -> Any:
            ctx.owner = owner  # the node keeps the object that keeps its output
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2, None

    class Layer:
        def __init__(self) -> None:
            self.cache: dict[str, Any] = {}

        def run(self, x: Any) -> Any:
            out = Stash.apply(x, self)
            self.cache["out"] = out
            return out

    x = tensor().requires_grad_()
    return tuple(Layer().run(x).shape)
