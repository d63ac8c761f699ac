"""Every error whyalive raises on purpose, and the one table of exit codes.

Exit codes (CLI):

====  ==========================================================
0     clean: nothing found, or the command did what it was asked
1     leaks (or lint findings) found; the user's script failed
2     usage error: bad arguments, missing or unreadable input
3     a required external program (Graphviz ``dot``) is missing
130   interrupted (Ctrl-C, ``KeyboardInterrupt``): nothing written
====  ==========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from whyalive.report import Report

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_USAGE = 2
EXIT_MISSING_TOOL = 3
EXIT_INTERRUPTED = 130  # the shell's 128 + SIGINT, as Python itself exits on Ctrl-C


class WhyaliveError(Exception):
    """Base of the errors whyalive raises on purpose; carries the CLI exit code."""

    exit_code: ClassVar[int] = EXIT_USAGE


class UsageError(WhyaliveError):
    """Bad arguments or input: the message is one line meant for a person."""

    exit_code = EXIT_USAGE


class MissingToolError(WhyaliveError):
    """An external program (such as Graphviz ``dot``) is needed and not installed."""

    exit_code = EXIT_MISSING_TOOL


class ReportFormatError(UsageError):
    """A report file is not valid whyalive JSON (wrong schema version, missing fields)."""


class LeakError(AssertionError):
    """Raised by :func:`whyalive.check_leaks` when cyclic garbage holds heavy objects.

    An ``AssertionError`` so that test runners report a failure, not an error.
    The message is the text explanation; ``report`` is the plain-data report.
    """

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


class LeakWarning(UserWarning):
    """Emitted by :func:`whyalive.check_leaks` with ``on_leak="warn"``."""
