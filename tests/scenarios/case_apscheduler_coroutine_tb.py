"""A scheduler's coroutine job runner keeps the failing job's traceback in a local.

Source: https://github.com/agronholm/apscheduler/issues/406 - ``run_coroutine_job`` did
``exc, tb = sys.exc_info()[1:]`` when a job raised: "the first reference cycle comes from
the traceback in the local-frame" (the frame holds ``tb``, ``tb`` holds the frame), and the
failing job's locals stayed with it.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import Any

from scenarios.payload import heavy

PATTERN = "exception-traceback"


async def error_fn() -> None:
    batch = [heavy()]  # the job's local: kept by the traceback's frames
    assert not batch, "job failed"


async def run_coroutine_job(func: Callable[[], Coroutine[Any, Any, None]]) -> list[str]:
    events = []
    try:
        await func()
    except BaseException:
        exc, tb = sys.exc_info()[1:]
        formatted_tb = "".join(traceback.format_tb(tb))
        events.append(f"{type(exc).__name__}: {formatted_tb.count('File')} frames")
    return events


def run() -> object:
    return asyncio.run(run_coroutine_job(error_fn))
