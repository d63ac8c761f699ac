"""The flake8 adapter: the only module that knows flake8 exists.

flake8 applies ``--select``/``--ignore`` and ``# noqa: WAL101`` itself, so every rule runs
here; the off-by-default 9xx rules are added to flake8's default ignore list instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import Any

from whyalive.lint.engine import lint_tree
from whyalive.lint.rules import RULES

try:
    _VERSION = metadata.version("whyalive")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = "0+unknown"


class Flake8Checker:
    """flake8 AST plugin running every whyalive lint rule over one file."""

    name = "whyalive"
    version = _VERSION

    def __init__(self, tree: ast.Module, filename: str, lines: Sequence[str]) -> None:
        self._tree, self._filename, self._source = tree, filename, "".join(lines)

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        """Keep the opinionated rules off unless selected, like flake8-bugbear's B9."""
        option_manager.extend_default_ignore(
            sorted({r.code[:4] for r in RULES if not r.default_enabled})
        )

    def run(self) -> Iterator[tuple[int, int, str, type[Flake8Checker]]]:
        """Yield ``(line, col, message, type)`` for each finding, as flake8 expects."""
        for finding in lint_tree(self._tree, self._source, self._filename, RULES):
            yield finding.line, finding.col, finding.message, type(self)
