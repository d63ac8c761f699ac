"""A future that re-raises the exception it keeps, from a method whose frame holds the future.

Source: https://github.com/python/cpython/issues/80111 - ``concurrent.futures`` did
``raise self._exception`` in ``__get_result``: the exception's traceback holds that
frame, the frame holds ``self``, ``self`` holds the exception. The fix set ``self = None``
in a ``finally`` block.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "exception-traceback"


class Future:
    def __init__(self) -> None:
        self._exception: BaseException | None = None
        self._inputs = heavy()

    def set_exception(self, exception: BaseException) -> None:
        self._exception = exception

    def result(self) -> object:
        if self._exception:
            raise self._exception
        return None


def submit() -> Future:
    future = Future()
    future.set_exception(TimeoutError("slow"))
    return future


def run() -> object:
    try:
        submit().result()
    except TimeoutError as error:
        return repr(error)
    return None
