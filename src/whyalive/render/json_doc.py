"""JSON: the report's plain data, deterministic (sorted keys), schema in ``whyalive/schema``."""

from __future__ import annotations

from typing import ClassVar

from whyalive.report import Report


class JsonRenderer:
    """``Report.to_json()``; ``indent=None`` writes one line."""

    name: ClassVar[str] = "json"
    file_suffixes: ClassVar[tuple[str, ...]] = (".json",)
    binary: ClassVar[bool] = False

    def __init__(self, *, indent: int | None = 2) -> None:
        self.indent = indent

    def render(self, report: Report) -> str:
        """The JSON document, ending in a newline; ``Report.from_dict`` reads it back."""
        return report.to_json(indent=self.indent) + "\n"
