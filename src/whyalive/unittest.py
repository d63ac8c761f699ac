"""``LeakCheckMixin``: the pytest plugin's check for ``unittest.TestCase``.

Each test (``setUp``, the test method, ``tearDown`` and cleanups) is one checked
block: the baseline heap is frozen when the test starts, so garbage from an
earlier test is never blamed on it, and a test that leaves heavy objects in
cyclic garbage fails with the text explanation::

    class TrainerTest(LeakCheckMixin, unittest.TestCase):
        whyalive_min_bytes = 1024

        def test_step(self): ...

.. versionadded:: 0.1
"""

from __future__ import annotations

import unittest
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from whyalive.errors import LeakWarning, UsageError

if TYPE_CHECKING:
    from whyalive.analysis import AnalysisOptions
    from whyalive.capture import GarbageWatch

F = TypeVar("F", bound=Callable[..., Any])

_SKIP = "__whyalive_skip__"


def whyalive_skip(test: F) -> F:
    """Decorate a test method (or a class) that ``LeakCheckMixin`` must not check."""
    setattr(test, _SKIP, True)
    return test


class LeakCheckMixin:
    """Mix into a ``unittest.TestCase`` (before it) to fail tests that leak heavy objects.

    Attributes:
        whyalive_min_bytes: report only cycles holding at least this many bytes (an int, or
            a size with a unit: ``"1MB"``, ``"1.5 MiB"``).
        whyalive_allow: signatures or pattern names of known cycles not to report.
        whyalive_on_leak: ``"fail"`` the test (default) or ``"warn"`` with a LeakWarning.
    """

    whyalive_min_bytes: ClassVar[int | str] = 0
    whyalive_allow: ClassVar[tuple[str, ...]] = ()
    whyalive_on_leak: ClassVar[str] = "fail"

    def run(self, result: unittest.TestResult | None = None) -> unittest.TestResult | None:
        """Run the test inside a leak check; the verdict comes as the last cleanup."""
        assert isinstance(self, unittest.TestCase), "LeakCheckMixin needs a unittest.TestCase"
        method = getattr(self, self._testMethodName, None)
        if getattr(type(self), _SKIP, False) or getattr(method, _SKIP, False):
            return super().run(result)  # type: ignore[misc, no-any-return]
        on_leak = self.whyalive_on_leak
        if on_leak not in ("fail", "warn"):
            raise UsageError(f"whyalive_on_leak must be 'fail' or 'warn', not {on_leak!r}")
        from whyalive.analysis import AnalysisOptions
        from whyalive.capture import GarbageWatch
        from whyalive.report.pipeline import InBlockAnalyses, prepare_in_collector
        from whyalive.words import size_from_words

        min_bytes = size_from_words(self.whyalive_min_bytes, "whyalive_min_bytes")
        options = AnalysisOptions(
            min_bytes=min_bytes, allow=tuple(self.whyalive_allow), where=self.id()
        )

        watch = GarbageWatch()
        # Cleanups run last-in first-out: added first, this verdict runs after all others.
        self.addCleanup(self._whyalive_verdict, watch, options)
        # The test's own collections free what they would free without whyalive (a test
        # may check memory or reference counts after gc.collect()): analysed where they run.
        prepare_in_collector()
        watch.begin(analyze_now=InBlockAnalyses(lambda: options))
        try:
            return super().run(result)  # type: ignore[misc, no-any-return]
        finally:
            watch.abandon()  # what a skipped or interrupted test left held

    def _whyalive_verdict(self, watch: GarbageWatch, options: AnalysisOptions) -> None:
        from whyalive.report.merge import merge_reports
        from whyalive.report.pipeline import analyze_block, probe_block

        assert isinstance(self, unittest.TestCase)
        captured = watch.end()
        try:
            report = analyze_block(captured, options)
        finally:
            captured.release()
            probed, _ = probe_block(watch, options)  # what the test left that loops in C++ hold
        if probed is not None:
            report = merge_reports([report, probed])
        if not report.found:
            return
        from whyalive.render.text import leak_line

        message = f"{leak_line(report)}\nLeak found in {self.id()}:\n{report.render('text')}"
        if self.whyalive_on_leak == "warn":
            warnings.warn(LeakWarning(message), stacklevel=2)
        else:
            self.fail(message)
