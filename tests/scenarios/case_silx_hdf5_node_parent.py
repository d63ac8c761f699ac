"""A tree model of an HDF5 file: each node keeps its parent in a private attribute.

Source: https://github.com/silx-kit/silx/pull/1077 - "Use weakref for parent. It allows to
destroy everything without use of the gc": the ``Hdf5Node`` tree kept ``self.__parent``
(a name-mangled attribute), so closing a file's view left the whole tree to the collector.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "parent-child"


class Hdf5Node:
    def __init__(self, name: str, parent: Hdf5Node | None = None) -> None:
        self.__parent = parent
        self.name = name
        self.dataset = heavy(1024)
        self.__children: list[Hdf5Node] = []

    def append_child(self, name: str) -> Hdf5Node:
        child = Hdf5Node(name, self)
        self.__children.append(child)
        return child

    @property
    def parent(self) -> Hdf5Node | None:
        return self.__parent

    def child_count(self) -> int:
        return len(self.__children)


def run() -> object:
    root = Hdf5Node("file.h5")
    group = root.append_child("entry")
    data = group.append_child("data")
    return data.parent.name if data.parent else None, root.child_count()
