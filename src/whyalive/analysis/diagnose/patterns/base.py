"""What a pattern is: :class:`Pattern` recognises a shape, :class:`PatternMatch` says it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from whyalive.analysis.paths import CycleView, NamedEdge


@dataclass(frozen=True)
class PatternMatch:
    """A pattern's verdict on one cycle."""

    pattern: str
    title: str
    summary: str
    explanation: str
    fix: str
    cut: list[NamedEdge] = field(default_factory=list)
    lint_rule: str | None = None
    cut_words: str | None = None
    """How the cut reads, when the pattern names it better than its references can."""
    remedy: str | None = None
    """What kind of edit undoes the cut (``whyalive.analysis.fix_edits``: ``"weaken"``,
    ``"delete"``, ``"drop-traceback"``); None: read from the cut's kind."""
    also: str = ""
    """Other ways to fix it, said after the edit when one is built (``fix`` is the words
    used when no edit can be). Code in backticks names the holder ``self``; the report
    spells it as the statement that made the cut does."""


class Pattern(Protocol):
    """Recognises one shape of cycle."""

    name: str
    title: str

    def match(self, view: CycleView) -> PatternMatch | None:
        """A verdict when the cycle has this shape, else None."""
        ...
