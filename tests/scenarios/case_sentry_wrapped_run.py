"""An integration that wraps a thread's ``run`` and stores the wrapper on the thread.

Source: https://github.com/getsentry/sentry-python/pull/434 - the threading integration
did ``self.run = _wrap_run(self.run)`` when a thread started: the thread holds the
wrapper, the wrapper (via ``functools.wraps`` and its closure) holds the bound method,
the bound method holds the thread, so finished threads waited for the collector.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scenarios.payload import heavy

PATTERN = "wrapped-method-on-self"


def _wrap_run(old_run: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(old_run)
    def run(*args: Any, **kwargs: Any) -> Any:
        return old_run(*args, **kwargs)

    return run


class Worker:
    def __init__(self) -> None:
        self.results: list[int] = []
        self.scratch = heavy()

    def start(self) -> None:
        self.run = _wrap_run(self.run)  # type: ignore[method-assign]
        self.run()

    def run(self) -> None:
        self.results.append(int(self.scratch.shape[0]))


def run() -> object:
    worker = Worker()
    worker.start()
    return worker.results
