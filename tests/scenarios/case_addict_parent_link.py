"""A dict subclass whose automatically created children keep a link to their parent.

Source: https://github.com/mewwts/addict/issues/86 - ``a = Dict(); a.x.y = 1`` made
``a.x`` with a ``__parent`` link back to ``a``: parent -> item -> child -> parent, a
cycle for every nested key set by attribute access.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "parent-child"


class Dict(dict):  # type: ignore[type-arg]
    def __init__(self, parent: Dict | None = None, key: str | None = None) -> None:
        super().__init__()
        self.__parent = parent
        self.__key = key

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        if item not in self:
            self[item] = Dict(self, item)
        return self[item]

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self[name] = value


def run() -> object:
    config = Dict()
    config.model.weights = heavy()
    return sorted(config.model)
