"""A scene graph: each world object keeps its parent, each parent its children.

Source: https://github.com/pygfx/pygfx/pull/252 - "In order for world objects to be properly
garbage collected when removed from the tree structure, they can't have a strong
reference to their parent": ``WorldObject.parent`` made every object removed from a scene
wait for the cyclic collector.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "parent-child"


class WorldObject:
    def __init__(self, name: str) -> None:
        self.name = name
        self.geometry = heavy()
        self._parent: WorldObject | None = None
        self.children: list[WorldObject] = []

    def add(self, obj: WorldObject) -> None:
        obj._parent = self
        self.children.append(obj)

    @property
    def path(self) -> str:
        return self.name if self._parent is None else f"{self._parent.path}/{self.name}"


def run() -> object:
    scene = WorldObject("scene")
    group = WorldObject("group")
    scene.add(group)
    mesh = WorldObject("mesh")
    group.add(mesh)
    return mesh.path
