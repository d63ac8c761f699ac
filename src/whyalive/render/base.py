"""The renderer interface: read a Report, return a document.

docs/architecture.md, "Extending: a renderer", says how to add one.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from whyalive.report import Report


class Renderer(Protocol):
    """Turns a report into text. Options are keyword-only ``__init__`` arguments."""

    name: ClassVar[str]
    file_suffixes: ClassVar[tuple[str, ...]]
    binary: ClassVar[bool]

    def render(self, report: Report) -> str:
        """The whole document."""
        ...


class BinaryRenderer(Renderer, Protocol):
    """A renderer whose document is bytes (``binary = True``), such as PNG."""

    def render_bytes(self, report: Report) -> bytes:
        """The whole document as bytes."""
        ...
