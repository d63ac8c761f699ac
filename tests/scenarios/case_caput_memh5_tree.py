"""A tree of groups whose every node points to its parent and to the root.

Source: https://github.com/radiocosmology/caput/pull/13 - the memh5 tree kept
``parent`` and ``_root`` references on every group and dataset; the tree stayed
alive until the cyclic collector ran and jobs ran out of memory. Both references
had to become weak to free it (one label alone leaves the other loop).
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "parent-child"


class MemGroup:
    """A group of a memory-resident HDF5-like tree."""

    def __init__(self, name: str, parent: MemGroup | None = None) -> None:
        self.name = name
        self.children: dict[str, MemGroup] = {}
        self._parent = parent
        self._root = self if parent is None else parent._root
        self.data = heavy(64)
        if parent is not None:
            parent.children[name] = self

    def path(self) -> str:
        if self._parent is None:
            return "/" + self.name
        return self._parent.path() + "/" + self.name


def run() -> object:
    root = MemGroup("root")
    for index in range(32):
        group = MemGroup(f"g{index}", root)
        for item in range(32):
            MemGroup(f"d{item}", group)
    leaf = root.children["g3"].children["d7"]
    return leaf.path(), leaf._root.name, len(root.children)
