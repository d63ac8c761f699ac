"""What the lint stages hand each other: rules, findings, the names a cycle keeps, fixes."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whyalive.lint.scopes import Context

__all__ = [
    "HEAVY_CAPTURE_KINDS",
    "Advice",
    "Capture",
    "LintFinding",
    "Rule",
    "TextEdit",
    "advice_sentence",
    "snippet",
]


@dataclass(frozen=True)
class Capture:
    """A name a finding's closure keeps alive, and what kind of value it is bound to.

    ``kind`` is one of :data:`HEAVY_CAPTURE_KINDS` (may hold a heavy object: ``self``,
    ``parameter``, ``local``, ``default``, ``cache``) or ``function``, ``class``, ``module``,
    ``constant`` (alive anyway, or small).
    """

    name: str
    kind: str

    @property
    def heavy(self) -> bool:
        """Whether the captured value can be a heavy object (or hold one)."""
        return self.kind in HEAVY_CAPTURE_KINDS


HEAVY_CAPTURE_KINDS = frozenset({"self", "parameter", "local", "default", "cache"})


@dataclass(frozen=True)
class Advice:
    """One fix a finding's message offers: ``key`` names it (the same for every finding of a
    rule and shape; tests run each offered fix on a runnable case), ``text`` says it."""

    key: str
    text: str


def advice_sentence(advice: tuple[Advice, ...]) -> str:
    """The fixes as one sentence: ``A, B, or C.``"""
    parts = [a.text for a in advice]
    if not parts:
        return ""
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", or " + parts[-1]
    return joined[0].upper() + joined[1:] + "."


@dataclass(frozen=True, order=True)
class TextEdit:
    """Insert ``text`` before the character at ``line`` (1-based), ``col`` (0-based, in chars)."""

    line: int
    col: int
    text: str


@dataclass(frozen=True, order=True)
class LintFinding:
    """One problem found in one file: where it is, its rule code and the full message.

    ``captures`` lists, heavy first, every name the cycle keeps alive (closure rules);
    ``edits`` is the always-safe fix (empty when there is none), applied by ``--fix``;
    ``advice`` names the fixes the message offers (:class:`Advice` keys).
    """

    path: str
    line: int
    col: int
    code: str
    message: str
    captures: tuple[Capture, ...] = field(default=(), compare=False)
    edits: tuple[TextEdit, ...] = field(default=(), compare=False)
    advice: tuple[str, ...] = field(default=(), compare=False)

    @property
    def text(self) -> str:
        """The message without its leading code, for formats that carry the code apart."""
        return self.message.removeprefix(self.code).lstrip()


@dataclass(frozen=True)
class Rule:
    """A lint rule: its code, message template, the node types it inspects and its check."""

    code: str
    name: str
    message: str
    node_types: tuple[type[ast.AST], ...]
    check: Callable[[ast.AST, Context], Iterable[LintFinding]]
    default_enabled: bool = True
    explanation: str = ""


def snippet(node: ast.AST, limit: int = 60) -> str:
    """Source-like text for ``node``, shortened so messages stay one line."""
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError, AttributeError):  # pragma: no cover - pathological ASTs
        return "..."
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
