"""A logger looks up its caller through its own frame and keeps that frame in a local.

Source: https://github.com/antonioterpin/goggles/pull/220 - ``_caller_id`` kept
``inspect.currentframe()`` in a local: the frame holds its locals and the local holds the
frame, on every log call; with the collector off the process grew by megabytes a second.
The fix was ``del frame`` in a ``finally`` block.
"""

from __future__ import annotations

import inspect

from scenarios.payload import heavy

PATTERN = "frame-kept"


def caller_id(record: object) -> str:
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    return f"{caller.f_code.co_name}:{record}" if caller is not None else str(record)


def log_step(step: int) -> str:
    batch = heavy()
    return caller_id((step, batch.shape[0]))


def run() -> object:
    return log_step(3)
