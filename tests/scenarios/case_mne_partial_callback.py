"""A viewer gives its own widgets callbacks made with ``functools.partial`` of its methods.

Source: https://github.com/mne-tools/mne-python/pull/11932 - the ``Brain`` viewer set widget
callbacks to ``partial``s of its own bound methods: brain -> widget -> partial -> bound
method -> brain, so closed viewers (and their data) waited for the cyclic collector; the
PR makes such references weak.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class Slider:
    def __init__(self) -> None:
        self.callback: Callable[[float], Any] | None = None

    def move(self, value: float) -> Any:
        return self.callback(value) if self.callback else None


class Brain:
    def __init__(self) -> None:
        self.data = heavy()
        self.widgets = {"time": Slider()}
        self.widgets["time"].callback = functools.partial(self._on_change, "time")

    def _on_change(self, name: str, value: float) -> str:
        return f"{name}={value}"


def run() -> object:
    brain = Brain()
    return brain.widgets["time"].move(0.5)
