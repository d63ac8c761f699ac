"""Answers about one parsed file's syntax tree, worked out once and kept with the file.

A parsed file outlives an analysis (``whyalive.analysis.sourcelines`` keeps the recent
ones), so the next sighting of a leak made by the same code (a new monitor, another
``check_leaks``) searches its tree no more: which statement stores a reference, whether a
variable escapes its function, where it is last used.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar, cast

_Answer = TypeVar("_Answer")
_UNANSWERED = object()
MAX_ANSWERS = 1024
"""Answers one file keeps; more start over."""


class TreeAnswers:
    """What pure questions about one tree answered (see :meth:`answer`)."""

    def __init__(self) -> None:
        self.known: dict[Hashable, object] = {}
        self.searches = 0
        """How many answers were worked out (not found in ``known``)."""

    def answer(self, question: Hashable, work_out: Callable[[], _Answer]) -> _Answer:
        """``work_out()``, once per ``question``.

        A question names the tree's nodes by ``id`` (the tree keeps them alive, so an id is
        never reused while the answer is kept) and plain values; the answer is made of the
        tree's nodes and plain values, never of a live object of the program. Bounded: past
        ``MAX_ANSWERS`` the answers start over.
        """
        try:
            known = self.known.get(question, _UNANSWERED)
        except TypeError:  # an unhashable part: worked out, not kept
            return work_out()
        if known is _UNANSWERED:
            self.searches += 1
            if len(self.known) >= MAX_ANSWERS:
                self.known.clear()
            known = self.known[question] = work_out()
        return cast("_Answer", known)
