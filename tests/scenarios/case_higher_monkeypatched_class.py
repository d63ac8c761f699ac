"""A functional copy of a model made as a new class on every call, the class keeping the model.

Source: https://github.com/facebookresearch/higher/pull/15 - ``higher``'s monkeypatching made
a ``MonkeyPatched`` class per call that referred to the original model; new-style classes
are always in reference cycles of their own, so the model (and its GPU memory) stayed
until the cyclic collector ran.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "class-per-call"


class Model:
    def __init__(self) -> None:
        self.weight = heavy()

    def forward(self, x: float) -> float:
        return x * 2


def monkeypatch(model: Model) -> Model:
    class MonkeyPatched(Model):
        original = model

        def forward(self, x: float) -> float:
            return self.original.forward(x) + 1

    return MonkeyPatched.__new__(MonkeyPatched)


def run() -> object:
    return monkeypatch(Model()).forward(1.0)
