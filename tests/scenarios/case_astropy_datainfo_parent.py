"""A column's ``info`` object keeps the column it describes.

Source: https://github.com/astropy/astropy/pull/6277 - ``DataInfo._parent`` held the
column strongly while the column held its ``info``, so a column (and its 800 MB array)
put in a table was freed only by the cyclic collector; ``_parent`` became a weakref.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"


class DataInfo:
    def __init__(self, parent: Any) -> None:
        self._parent = parent
        self.unit = "m"

    @property
    def length(self) -> int:
        return len(self._parent.data)


class Column:
    def __init__(self, data: Any, name: str) -> None:
        self.data = data
        self.name = name
        self.info = DataInfo(self)


def run() -> object:
    column = Column(heavy(), "a")
    return column.info.length, column.info.unit
