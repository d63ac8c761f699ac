"""The flake8 adapter: the only module that knows flake8 exists.

flake8 applies ``--select``/``--ignore`` and ``# noqa: WAL101`` itself, so every rule runs
here; the off-by-default 9xx rules are dropped unless a ``--select``/``--extend-select``
code names them (``WAL9``, ``WAL901``), as flake8-bugbear does for B9.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import Any

from whyalive.lint import rules_for
from whyalive.lint.engine import lint_tree
from whyalive.lint.rules import RULES

try:
    _VERSION = metadata.version("whyalive")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = "0+unknown"


# Like flake8-bugbear's B9: `--select WAL` alone does not turn these on.
_OFF_BY_DEFAULT = frozenset(rule.code[:4] for rule in RULES if not rule.default_enabled)


class Flake8Checker:
    """flake8 AST plugin running every whyalive lint rule over one file."""

    name = "whyalive"
    version = _VERSION

    def __init__(self, tree: ast.Module, filename: str, lines: Sequence[str]) -> None:
        self._tree, self._filename, self._source = tree, filename, "".join(lines)

    _explicit: tuple[str, ...] = ()

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """Remember explicit selections: 9xx rules run only when named (``--select WAL9``)."""
        chosen = [*(options.select or ()), *(getattr(options, "extend_select", None) or ())]
        cls._explicit = tuple(c for c in chosen if len(c) >= 4)

    def _wanted(self, code: str) -> bool:
        return code[:4] not in _OFF_BY_DEFAULT or any(code.startswith(c) for c in self._explicit)

    def run(self) -> Iterator[tuple[int, int, str, type[Flake8Checker]]]:
        """Yield ``(line, col, message, type)`` for each finding, as flake8 expects (flake8
        parsed the file; only the rules whose tests on its text pass walk the tree)."""
        rules = rules_for(self._source, RULES) or ()
        for finding in lint_tree(self._tree, self._source, self._filename, rules):
            if self._wanted(finding.code):
                yield finding.line, finding.col, finding.message, type(self)
