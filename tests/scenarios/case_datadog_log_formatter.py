"""A log formatter that keeps the check it formats for, on the check's own logger.

Source: https://github.com/DataDog/integrations-core/pull/6470 - the check's log
formatter held the check (to read its id) while the check held its logger, handler and
formatter; "once check_id is set, we don't need to keep the reference to check".
"""

from __future__ import annotations

import logging

from scenarios.payload import heavy

PATTERN = "parent-child"


class CheckFormatter(logging.Formatter):
    def __init__(self, check: AgentCheck) -> None:
        super().__init__("%(message)s")
        self.check = check

    def format(self, record: logging.LogRecord) -> str:
        return f"{self.check.check_id} | {super().format(record)}"


class AgentCheck:
    def __init__(self, check_id: str) -> None:
        self.check_id = check_id
        self.instances = heavy()
        self.handler = logging.Handler()
        self.handler.setFormatter(CheckFormatter(self))

    def describe(self, message: str) -> str:
        record = logging.LogRecord("check", logging.INFO, __file__, 1, message, None, None)
        return self.handler.format(record)


def run() -> object:
    return AgentCheck("disk:1").describe("collected")
