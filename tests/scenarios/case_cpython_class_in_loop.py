"""A class created on every call, with data on its class attributes.

Source: https://github.com/python/cpython/issues/84472 - defining a class inside a loop
"leaked" memory: every class refers to itself (its ``__mro__``, the descriptors in its
namespace), so each one, and everything its attributes hold, waits for the collector.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "class-per-call"


def make_record(values: list[float]) -> object:
    class Record:
        table = heavy()
        fields = tuple(values)

    return Record()


def run() -> object:
    record = make_record([1.0, 2.0])
    return type(record).fields
