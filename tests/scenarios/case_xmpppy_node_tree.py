"""An XML stanza tree: every node holds its parent, and a helper that holds the node.

Source: https://github.com/xmpppy/xmpppy/pull/17 - ``simplexml.Node`` keeps ``parent`` and
``kids``, and ``node.T`` makes a ``T`` helper that keeps the node; a client parsing
stanzas held 27,181 nodes that only the cyclic collector could free. The PR holds the
parent weakly; here the tree has two back-pointer labels (``.parent`` of every node and
``.node`` of every helper) and more than a thousand nodes.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"


class T:
    """Quick access to a node's children by name (``node.T.body``)."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def __getattr__(self, name: str) -> Any:
        return self.node.get_tag(name)


class Node:
    def __init__(self, tag: str, parent: Node | None = None) -> None:
        self.name = tag
        self.parent = parent
        self.kids: list[Node] = []
        self.data = heavy(64)

    def add_child(self, name: str) -> Node:
        child = Node(name, parent=self)
        self.kids.append(child)
        return child

    def get_tag(self, name: str) -> Node | None:
        return next((kid for kid in self.kids if kid.name == name), None)

    def __getattr__(self, attr: str) -> Any:
        if attr == "T":
            self.T = T(self)
            return self.T
        raise AttributeError(attr)


def run() -> object:
    stream = Node("stream")
    for i in range(40):
        stanza = stream.add_child(f"message{i}")
        for j in range(30):
            stanza.add_child(f"field{j}")
    found = sum(1 for stanza in stream.kids if stanza.T.field3 is not None)
    return found, len(stream.kids)
