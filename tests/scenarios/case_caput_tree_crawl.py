"""A recursive inner function that walks a container's tree and reads ``self``.

Source: https://github.com/radiocosmology/caput/pull/134 - ``BasicCont.redistribute``
defined a recursive ``_tree_crawl`` that used ``self.comm.rank``: the function lives in
its own closure cell, and the cell also captured ``self``, so the whole container waited
for the collector after every call.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "recursive-closure"


class Container:
    def __init__(self) -> None:
        self.rank = 0
        self.tree: dict[str, Any] = {"a": {"b": heavy(), "c": heavy()}, "d": heavy()}

    def redistribute(self, axis: int) -> list[str]:
        moved: list[str] = []

        def _tree_crawl(group: dict[str, Any], prefix: str) -> None:
            for name, item in group.items():
                if isinstance(item, dict):
                    _tree_crawl(item, prefix + name + "/")
                elif self.rank == 0:
                    moved.append(prefix + name)

        _tree_crawl(self.tree, "/")
        return sorted(moved)


def run() -> object:
    return Container().redistribute(axis=1)
