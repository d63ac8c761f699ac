"""Timers whose only owner is the linked list they sit in, each holding its own list node.

Source: https://github.com/ajakubek/python-llist/issues/7 - as in ``case_llist_timer_ring``,
``Timer`` did ``self.node = table.append(self)``; here nothing else keeps the timers (a
timer wheel: the list is their only owner), so a fix that made the list's reference to
the timer weak would free every timer at once. The back reference to cut is the timer's
``.node`` (and the node's ``.prev``), never the node's ``.value``.
"""

from __future__ import annotations

from collections.abc import Iterator
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

    def append(self, value: Any) -> ListNode:
        node = ListNode(value, self.last)
        if self.last is None:
            self.first = node
        else:
            self.last.next = node
        self.last = node
        return node

    def values(self) -> Iterator[Any]:
        node = self.first
        while node is not None:
            yield node.value
            node = node.next


class Timer:
    def __init__(self, table: LinkedList, due: int) -> None:
        self.due = due
        self.state = heavy(64)
        self.node = table.append(self)


def run() -> object:
    table = LinkedList()
    for due in range(1000):
        Timer(table, due)
    return sum(timer.due for timer in table.values())
