"""What one test is checked with: settings.py reads it, a watch (watch.py) runs under it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whyalive.report.verdict import ThirdParty


@dataclass(frozen=True)
class TestOptions:
    """The settings one test is checked with (command line, ini, then its marker)."""

    min_bytes: int = 0
    allow: tuple[str, ...] = ()
    on_leak: str = "fail"
    third_party: ThirdParty = "report"
    user_root: str | None = None
