"""A per-instance logger adapter that keeps the instance it logs for.

Source: https://github.com/ansys/pymapdl/pull/809 - the instance logger stored the MAPDL
object (``self.extra = ...``) while the MAPDL object stored its logger, so closed
sessions were never freed by reference counting.
"""

from __future__ import annotations

import logging

from scenarios.payload import heavy

PATTERN = "parent-child"


class InstanceLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    def __init__(self, logger: logging.Logger, instance: Session) -> None:
        super().__init__(logger, {})
        self.instance = instance

    def process(self, msg: object, kwargs: object) -> tuple[object, object]:
        return f"[{self.instance.name}] {msg}", kwargs


class Session:
    def __init__(self, name: str) -> None:
        self.name = name
        self.results = heavy()
        self._log = InstanceLogger(logging.getLogger("scenario.session"), self)

    def solve(self) -> str:
        message, _ = self._log.process("solved", {})
        return str(message)


def run() -> object:
    return Session("mapdl-0").solve()
