"""A protocol object hands the exception it caught to a future.

Source: https://github.com/python/cpython/issues/109534 - asyncio's SSL transport leaked
memory: the future kept the exception, its traceback kept the frame of the method that
caught it, the frame kept ``self`` (the protocol and its buffers) and ``self`` kept the
future. Nothing in the user's code names the future's slot that holds the exception.
"""

from __future__ import annotations

import asyncio

from scenarios.payload import heavy

PATTERN = "exception-in-future"


class Protocol:
    def __init__(self, future: asyncio.Future[None]) -> None:
        self.buffer = heavy()
        self.future = future

    def connection_lost(self) -> None:
        try:
            raise ConnectionResetError("peer went away")
        except ConnectionResetError as exc:
            self.future.set_exception(exc)


async def main() -> str:
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()
    Protocol(waiter).connection_lost()
    try:
        await waiter
    except ConnectionResetError as error:
        return str(error)
    return "no error"


def run() -> object:
    return asyncio.run(main())
