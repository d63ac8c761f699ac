"""``check_leaks()``: fail (or warn) when a block leaves heavy objects in cyclic garbage."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from whyalive.analysis import AnalysisOptions
from whyalive.analysis.node_names import source_place
from whyalive.capture import FREEZE_NOTE, OVERLAP_NOTE, GarbageWatch, ThreadWatch
from whyalive.capture.interrupts import guard
from whyalive.errors import LeakError, LeakWarning, UsageError
from whyalive.guarded import read_attribute, type_qualname, type_short_name
from whyalive.report import Report
from whyalive.report.merge import merge_reports
from whyalive.report.pipeline import (
    InBlockAnalyses,
    analyze_block,
    prepare_in_collector,
    probe_block,
)
from whyalive.report.verdict import fails
from whyalive.words import size_from_words

if TYPE_CHECKING:
    from whyalive.analysis.allocations import AllocationRecorder
    from whyalive.census import HeavyCensus
    from whyalive.report.summary import Summary

P = ParamSpec("P")
R = TypeVar("R")
OnLeak = Literal["raise", "warn", "ignore"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CONTEXTLIB = os.path.dirname(os.path.abspath(functools.__file__))


def _user_location() -> tuple[str, int, str]:
    """The first frame outside whyalive and contextlib: the user's ``with`` or call line."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR) and os.path.basename(filename) != "contextlib.py":
            return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return "<unknown>", 0, "<unknown>"


_FROZEN_NOTE = (
    "Objects were already frozen (gc.freeze), so the baseline was collected instead of "
    "frozen; frozen objects are never examined."
)


def _callable_location(fn: Callable[..., object]) -> tuple[str, int, str]:
    code = read_attribute(fn, "__code__")
    name = read_attribute(fn, "__qualname__")
    if type(name) is not str:
        name = type_qualname(type(fn))
    if type(code) is not types.CodeType:
        return "<unknown>", 0, name
    return code.co_filename, code.co_firstlineno, name


class check_leaks:  # lower case: used like a function, `with check_leaks():`
    """Check that a block leaves no heavy objects that only reference cycles keep alive.

    A context manager and a decorator. Only cyclic garbage created inside the
    block is considered; garbage that existed before is never blamed on it.
    After the block, ``.report`` holds the :class:`~whyalive.Report`.

    Args:
        on_leak: ``"raise"`` a :class:`~whyalive.LeakError`, ``"warn"`` with a
            :class:`~whyalive.LeakWarning` located at the user's line, or ``"ignore"``.
        min_bytes: report only cycle signatures holding at least this many bytes: an int,
            or a size with a unit (``"1MB"``, ``"1.5 MiB"``; KB, MB, GB are 1024-based).
        allow: signatures or pattern names of known cycles not to report.
        all_cycles: also report cycles that hold no heavy object.
        report_to: write the report here (format from the suffix) when a leak is found.
        record_allocations: record where each heavy object was allocated (NumPy through
            ``tracemalloc``, torch CPU tensors through a dispatch mode, CUDA tensors through
            the caching allocator's history when CUDA is in use), inside the block only;
            off by default, and then it costs nothing.
        gather: in a ``torch.distributed`` job, after the check call
            :func:`whyalive.distributed.gather_summary` on every rank; the first
            rank gets the :class:`~whyalive.distributed.Summary` on ``.summary``.
            Every rank of the group must run the check, as with a collective.
        census: also report heavy objects created inside the block that are still
            alive (not garbage) after it, with what holds them (``Report.alive``,
            see :func:`whyalive.explain`); they fail the check like a leak.

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        *,
        on_leak: OnLeak = "raise",
        min_bytes: int | str = 0,
        allow: Iterable[str] = (),
        all_cycles: bool = False,
        report_to: str | os.PathLike[str] | None = None,
        gather: bool = False,
        record_allocations: bool = False,
        census: bool = False,
    ) -> None:
        if on_leak not in ("raise", "warn", "ignore"):
            raise UsageError(f"on_leak must be 'raise', 'warn' or 'ignore', not {on_leak!r}")
        if isinstance(allow, str):
            allow = (allow,)
        self.on_leak: OnLeak = on_leak
        self.min_bytes = size_from_words(min_bytes)
        self.allow = tuple(allow)
        self.all_cycles = all_cycles
        self.report_to = Path(report_to) if report_to is not None else None
        self.gather = gather
        self.record_allocations = record_allocations
        self.census = census
        self._census: HeavyCensus | None = None
        self._recorder: AllocationRecorder | None = None
        self.report: Report | None = None
        self.summary: Summary | None = None
        self._watch: GarbageWatch | None = None
        self._threads: ThreadWatch | None = None
        self._misused = False
        self._freeze_note_at = 0
        self._location: tuple[str, int, str] = ("<unknown>", 0, "<unknown>")
        self._where: str | None = None  # set by integrations that name the place themselves
        self._gc_was_enabled = True

    def _copy(self) -> check_leaks:
        return check_leaks(
            on_leak=self.on_leak,
            min_bytes=self.min_bytes,
            allow=self.allow,
            all_cycles=self.all_cycles,
            report_to=self.report_to,
            gather=self.gather,
            record_allocations=self.record_allocations,
            census=self.census,
        )

    def _enter(self) -> check_leaks:
        if self._watch is not None:
            self._misused = True  # the rescue must leave the active check alone
            raise UsageError("this check_leaks() is already active; create a new one to nest")
        self._location = _user_location()
        self._gc_was_enabled = gc.isenabled()
        self.report = None
        self._watch = watch = GarbageWatch()
        self._threads = ThreadWatch()
        if self.census:
            from whyalive.census import HeavyCensus

            self._census = HeavyCensus()
            self._census.begin()
        if self.record_allocations:
            from whyalive.analysis.allocations import AllocationRecorder

            # Before the baseline, so what starting it creates is never the block's.
            self._recorder = AllocationRecorder()
            self._recorder.start()
        prepare_in_collector()
        # Sites are looked up while the recording runs: a collection inside the block
        # reports its heavy objects' allocation sites as the closing one does.
        site_of = self._recorder.site_of if self._recorder is not None else None
        inside = InBlockAnalyses(lambda: self._options(site_of=site_of))
        watch.begin(analyze_now=inside)
        return self

    def _abandon(self, *_: object) -> None:
        """Undo whatever the check still holds (the rescue of ``__enter__``/``__exit__``).

        Idempotent: it runs at the end of every ``__exit__`` and again when an
        interrupt cut one short.
        """
        if self._misused:
            self._misused = False
            return
        if self._recorder is not None:
            self._recorder.close()
        if self._watch is not None:
            self._watch.abandon()
        self._recorder = None
        self._census = None
        self._watch = None

    __enter__ = guard(_enter, _abandon)

    def _options(self, **more: Any) -> AnalysisOptions:
        filename, line, function = self._location
        return AnalysisOptions(
            min_bytes=self.min_bytes,
            all_cycles=self.all_cycles,
            allow=self.allow,
            where=self._where or f"{source_place(filename, line)} in {function}",
            **more,
        )

    def _exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        watch, census = self._watch, self._census
        if watch is None:
            return
        try:
            if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
                return  # interrupted: put everything back, analyse nothing
            try:
                self._finish(watch)
            except Exception as error:
                if exc is None:
                    raise
                # The user's exception wins; whyalive's own failure rides along as a note.
                if sys.version_info >= (3, 11):
                    note = f"whyalive could not check this block ({type_short_name(type(error))})"
                    with contextlib.suppress(Exception):
                        BaseException.add_note(exc, note)
                return
        finally:
            self._abandon()
        self._after(watch, census)
        if exc_type is None and self.report is not None and fails(self.report):
            self._act(self.report)

    __exit__ = guard(_exit, _abandon)

    def _finish(self, watch: GarbageWatch) -> None:
        """Capture and analyse; the report ends up on ``self`` (released by ``_abandon``)."""
        recorder = self._recorder
        if recorder is not None:
            recorder.stop()
        captured = watch.end()
        if recorder is not None:
            recorder.resolve(captured.objects)
        notes = []
        if not self._gc_was_enabled:
            notes.append("Automatic garbage collection was disabled during the check.")
        if not watch.used_freeze:
            notes.append(_FROZEN_NOTE)
        self._freeze_note_at = len(notes)
        if captured.freeze_changed:
            notes.append(FREEZE_NOTE)
        if captured.overlapped:
            notes.append(OVERLAP_NOTE)
        options = self._options(
            notes=tuple(notes), site_of=recorder.site_of if recorder is not None else None
        )
        report = analyze_block(captured, options)
        if recorder is not None:
            report = _note_unrecorded(report)
        captured.release()
        # With the garbage freed and the baseline still frozen: what is left is alive.
        site_of = recorder.site_of if recorder is not None else None
        # The census lists (and fails) every survivor itself: no second listing of the same.
        listing = self._census is None
        probed, _ = probe_block(watch, self._options(site_of=site_of), listing=listing)
        if probed is not None:
            report = merge_reports([report, probed])
        self.report = self._threads.note(report) if self._threads is not None else report

    def _after(self, watch: GarbageWatch, census: HeavyCensus | None) -> None:
        """Once the garbage is freed: the freeze note, the census and the distributed summary."""
        report = self.report
        if watch.freeze_changed and report is not None and FREEZE_NOTE not in report.notes:
            # Only told by the probe when the freeze is given back (cheap only then).
            notes = list(report.notes)
            notes.insert(self._freeze_note_at, FREEZE_NOTE)
            self.report = dataclasses.replace(report, notes=tuple(notes))
        if census is not None and self.report is not None:
            # After the garbage is freed and the baseline unfrozen: what is left is alive.
            self.report = census.finish(self.report, min_bytes=self.min_bytes)
        if self.gather and self.report is not None:
            # Before raising: a rank that raised here would leave the first rank waiting.
            from whyalive.distributed import gather_summary

            self.summary = gather_summary(self.report)

    def _act(self, report: Report) -> None:
        if self.on_leak == "ignore":
            return
        from whyalive.render.text import leak_line

        message = f"{leak_line(report)}\n{report.render('text')}"
        if self.report_to is not None:
            from whyalive.render import write_report

            written = write_report(report, self.report_to)
            message += f"Report written to {written.resolve()}\n"
        if self.on_leak == "raise":
            raise LeakError(message, report)
        filename, line, _ = self._location
        warnings.warn_explicit(message, LeakWarning, filename, line)

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """Use as a decorator: every call of ``fn`` is checked by a fresh check."""

        @functools.wraps(fn)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            with self._copy():
                return fn(*args, **kwargs)

        return checked


def _note_unrecorded(report: Report) -> Report:
    """Say plainly which heavy objects have no recorded allocation site, and why."""
    missing = [h for h in report.heavy_objects if h.allocation_site is None]
    if not missing:
        return report
    note = (
        f"Allocation site not recorded for {len(missing)} of {len(report.heavy_objects)} "
        "heavy object(s): only NumPy arrays (through tracemalloc), torch CPU tensors and "
        "CUDA tensors (when CUDA was in use) created inside the block are recorded; "
        "buffers and objects allocated before the block are not."
    )
    return dataclasses.replace(report, notes=(*report.notes, note))


def find_leaks(fn: Callable[..., object], /, *args: object, **kwargs: object) -> Report:
    """Call ``fn(*args, **kwargs)`` and return the report of what it left in cyclic garbage."""
    check = check_leaks(on_leak="ignore")
    with check:
        check._location = _callable_location(fn)
        fn(*args, **kwargs)
    assert check.report is not None
    return check.report


def assert_no_leaks(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Call ``fn`` and raise :class:`~whyalive.LeakError` if it leaked; return its result."""
    with check_leaks(on_leak="raise"):
        return fn(*args, **kwargs)
