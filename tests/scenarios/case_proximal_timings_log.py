"""A graph that puts itself in the list of nodes its timing logs keep.

Source: https://github.com/comp-imaging/ProxImaL/issues/40 - ``CompGraph`` did
``self.forward_log = TimingsLog(self.nodes + [self])``: the graph holds the log, the log
holds a list that holds the graph, so graphs were never freed by reference counting
during a hyperparameter search.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"


class TimingsLog:
    def __init__(self, keys: list[Any]) -> None:
        self.keys = keys
        self.totals = [0.0 for _ in keys]

    def record(self, index: int, seconds: float) -> None:
        self.totals[index] += seconds


class Node:
    def __init__(self, name: str) -> None:
        self.name = name


class CompGraph:
    def __init__(self, names: list[str]) -> None:
        self.nodes = [Node(name) for name in names]
        self.buffer = heavy()
        self.forward_log = TimingsLog(self.nodes + [self])  # noqa: RUF005 - as reported

    def forward(self) -> float:
        for index in range(len(self.nodes)):
            self.forward_log.record(index, 0.5)
        return sum(self.forward_log.totals)


def run() -> object:
    return CompGraph(["a", "b"]).forward()
