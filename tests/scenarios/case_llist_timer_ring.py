"""Timers kept in a doubly linked list, each timer holding its own list node.

Source: https://github.com/ajakubek/python-llist/issues/7 - ``Timer`` did ``self.node =
table.append(self)``: the node holds the timer and the timer holds the node, and the
list's nodes hold each other (``prev``/``next``); with a thousand timers the whole list
was one cycle that outlived ``remove()``.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"


class ListNode:
    def __init__(self, value: Any, prev: ListNode | None) -> None:
        self.value = value
        self.prev = prev
        self.next: ListNode | None = None


class LinkedList:
    def __init__(self) -> None:
        self.first: ListNode | None = None
        self.last: ListNode | None = None
        self.size = 0

    def append(self, value: Any) -> ListNode:
        node = ListNode(value, self.last)
        if self.last is None:
            self.first = node
        else:
            self.last.next = node
        self.last = node
        self.size += 1
        return node


class Timer:
    def __init__(self, table: LinkedList) -> None:
        self.state = heavy(64)
        self.node = table.append(self)


def run() -> object:
    table = LinkedList()
    timers = [Timer(table) for _ in range(1000)]
    return table.size, len(timers)
