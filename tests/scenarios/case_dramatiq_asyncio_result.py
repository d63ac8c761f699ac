"""An actor's coroutine raises a big exception; the worker's event loop thread re-raises it.

Source: https://github.com/Bogdanp/dramatiq/pull/806 - the loop found was "BigException ->
traceback -> frames -> EventLoopThread.run_coroutine locals -> Future -> BigException":
the future keeps the exception, the re-raise gave the exception a traceback through the
frame that waited for the future, and that frame's locals hold the future. The payload
the exception carries waits for the cyclic collector.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from scenarios.payload import heavy

PATTERN = "exception-in-future"


class BigError(Exception):
    def __init__(self, payload: Any) -> None:
        super().__init__("result too big")
        self.payload = payload


async def actor() -> None:
    await asyncio.sleep(0)
    raise BigError(heavy())


class EventLoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run_coroutine(self, coro: Coroutine[Any, Any, None]) -> None:
        future = self.loop.create_task(coro)
        return self.loop.run_until_complete(future)

    def close(self) -> None:
        self.loop.close()


def process_message(thread: EventLoopThread) -> str:
    try:
        thread.run_coroutine(actor())
    except BigError as error:
        return type(error).__name__
    return "ok"


def run() -> object:
    thread = EventLoopThread()
    try:
        return process_message(thread)
    finally:
        thread.close()
