"""Parent links set on a parsed tree by a function outside the tree's class.

Source: https://github.com/lark-parser/lark/issues/1217 - the docs' recipe for keeping
track of parents set ``subtree.parent = tree`` on every child, which makes every
parent/child pair a reference cycle. The store is in a helper, not in the class of the
objects in the cycle: whyalive finds it through the payload's allocation site.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"
RECORD_ALLOCATIONS = True


class Tree:
    def __init__(self, data: str, children: list[Any]) -> None:
        self.data = data
        self.children = children


def parse_with_parents(text: str) -> Tree:
    tree = Tree("start", [Tree(word, [heavy()]) for word in text.split()])
    for child in tree.children:
        child.parent = tree
    return tree


def run() -> object:
    tree = parse_with_parents("a b c")
    return [child.parent.data for child in tree.children]
