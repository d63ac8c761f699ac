"""Watch a long run: a tiny gc callback saves chosen collections, safe points analyse them.

The callback (:mod:`whyalive.monitor.sampling`) only flips ``DEBUG_SAVEALL`` on
for the collections the sampling policy picks and moves what they saved out of
``gc.garbage``; it never collects, imports, logs or analyses. The analysis runs at
a safe point: :meth:`GcMonitor.step`, :meth:`GcMonitor.poll`, the end of the
``with`` block, or a helper thread (``poll_interval=``). Nothing here uses
``sys.setprofile`` or ``sys.settrace`` (docs/architecture.md, "Invariants").

Saved objects move to the next generation, so where they were saved decides what
releasing them costs: garbage from a young collection is freed by a cheap
collection of generation 1, garbage from an older one only by a full collection.
The monitor therefore freezes the heap that exists at start (``gc.freeze``, undone
at stop), so a full collection only traverses what the run made; with
``freeze=False`` older collections are examined only within a time budget
(``max_overhead``). With automatic GC off, ``step(collect=True)`` sweeps the young
generations with ``DEBUG_SAVEALL`` and then runs the scheduled collection, which is
also the one that frees what was analysed: no full collection beyond the scheduled one.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from whyalive.capture.collector import YOUNG, older_generation
from whyalive.capture.gcstate import OWNER
from whyalive.capture.interrupts import guard, locked
from whyalive.errors import UsageError
from whyalive.monitor.probing import PROBE_EVERY, UncollectableProbe
from whyalive.monitor.sampling import _OBJECT_SECONDS, GcSampler
from whyalive.monitor.signature_log import OnCycle, SignatureLog, analysis_options
from whyalive.monitor.stats import cuda_allocated
from whyalive.monitor.view import SignatureSeen, combine_reports, monitor_line, monitor_text
from whyalive.report import Report
from whyalive.report.pipeline import analyze
from whyalive.words import size_from_words

logger = logging.getLogger("whyalive")

_ACTIVE: weakref.WeakSet[GcMonitor] = weakref.WeakSet()


def _stop_in_child() -> None:
    # A forked worker inherits gc.callbacks but never calls step(): it starts unwatched.
    for active in list(_ACTIVE):
        active._teardown()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_stop_in_child)


class GcMonitor(GcSampler):
    """Observe the garbage collector during a long run and report each cycle signature once.

    Use :func:`whyalive.monitor` to make one. Call :meth:`step` once per
    training step (``step(collect=True)`` when automatic GC is off and the
    loop collects on a schedule). See ``docs/monitor.md``.

    Args:
        every: examine every N-th young collection while collections find nothing (1: all); one
            that follows an unexamined collection that freed cyclic garbage is always examined.
        min_bytes, allow, all_cycles: as for :func:`~whyalive.check_leaks`.
        on_cycle: called as ``on_cycle(cycle, report)`` when a signature is first
            seen and at each rate-limited update, with the running counts.
        log: log on the ``whyalive`` logger; ``log_interval`` s between updates of a signature.
        report_dir: write a JSON (and, when registered, HTML) report per first
            sighting; rewritten at :meth:`stop` with the counts of the run.
        collect_generation: what ``step(collect=True)`` collects on schedule.
        max_overhead: share of the run's time that releases needing a full
            collection may take (matters with ``freeze=False``).
        max_pending: most saved objects held between two safe points.
        cuda_growth: CUDA bytes of growth between steps that forces the next
            collection to be examined (``every > 1`` only; read only when torch
            has already initialised CUDA).
        gather_every: every N-th :meth:`step` calls
            :func:`whyalive.distributed.gather_summary`; result in ``last_summary``.
        poll_interval: run :meth:`poll` in a helper thread this often (seconds).
        freeze: freeze the heap present at :meth:`start` (when nothing is frozen).
        probe_every: every N-th :meth:`step`, look for uncollectable loops (None: never).

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        *,
        every: int = 1,
        min_bytes: int | str = 0,
        allow: Iterable[str] = (),
        all_cycles: bool = False,
        on_cycle: OnCycle | None = None,
        log: bool = True,
        log_interval: float = 60.0,
        report_dir: str | os.PathLike[str] | None = None,
        collect_generation: int = 2,
        max_overhead: float = 0.02,
        max_pending: int = 1_000_000,
        cuda_growth: int = 64 << 20,
        gather_every: int | None = None,
        poll_interval: float | None = None,
        freeze: bool = True,
        probe_every: int | None = PROBE_EVERY,
    ) -> None:
        if isinstance(every, bool) or every < 1:
            raise UsageError(f"every must be a positive int, not {every!r}")
        if collect_generation not in (0, 1, 2):
            raise UsageError(f"collect_generation must be 0, 1 or 2, not {collect_generation!r}")
        if not 0 < max_overhead <= 1:
            raise UsageError(f"max_overhead must be in (0, 1], not {max_overhead!r}")
        if gather_every is not None:
            if isinstance(gather_every, bool) or gather_every < 1:
                raise UsageError(f"gather_every must be a positive int, not {gather_every!r}")
            try:
                from whyalive.distributed import gather_summary  # noqa: F401
            except ImportError as error:
                raise UsageError(f"gather_every needs whyalive.distributed: {error}") from None
        if poll_interval is not None and poll_interval <= 0:
            raise UsageError(f"poll_interval must be positive, not {poll_interval!r}")
        self._probe = UncollectableProbe(probe_every)
        super().__init__(every=every, max_overhead=max_overhead, max_pending=max_pending)
        self.options = analysis_options(size_from_words(min_bytes), all_cycles, tuple(allow))
        self.on_cycle = on_cycle
        self.label: str | None = None  # where its reports say it ran; else stats.where()
        self.collect_generation = collect_generation
        self.cuda_growth = cuda_growth
        self.gather_every = gather_every
        self.poll_interval = poll_interval
        self.last_summary: object = None
        self._log = SignatureLog(
            logger if log else None, log_interval, Path(report_dir) if report_dir else None
        )
        self.freeze = freeze
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_thread = threading.Event()
        self._cuda_before: int | None = None
        self._misused = False

    # -- life cycle -----------------------------------------------------------------

    @property
    def active(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return any(callback is self._hook for callback in OWNER.callbacks)

    def _start(self) -> GcMonitor:
        """Install the callback (once); returns ``self``."""
        if self.active:
            self._misused = True  # the rescue must leave the running monitor alone
            raise UsageError("this GcMonitor is already started")
        if self.poll_interval is not None:
            # First, so a platform without threads (WebAssembly) leaves gc state untouched;
            # the thread polls nothing until the callback is installed (_off until then).
            self._stop_thread.clear()
            self._thread = threading.Thread(
                target=self._poll_loop, name="whyalive-monitor", daemon=True
            )
            try:
                self._thread.start()
            except RuntimeError as error:
                self._thread = None
                raise UsageError(
                    f"poll_interval needs a helper thread, which this platform cannot start "
                    f"({error}); call step() or poll() instead"
                ) from None
        # The heap before the run leaves the collector's view: full collections (the
        # user's and the ones that free old saved garbage) then cost what the run made.
        self._probe.start()
        self._froze = self.freeze and OWNER.freeze.hold(self)[0]
        if not self._froze:
            self._full_cost = _OBJECT_SECONDS * len(gc.get_objects(generation=2))
        self._started_at = self._clock()
        _ACTIVE.add(self)
        OWNER.callbacks.append(self._hook)
        self._off = False
        return self

    def _stop(self) -> None:
        """Analyse what is pending, remove the callback and put every gc setting back."""
        if not self.active:
            return
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop_thread.set()
            thread.join()
        try:
            if not sys.is_finalizing():
                self._flush()
        except Exception:  # never raise into user code from a monitor
            logger.exception("whyalive monitor failed while stopping")
        finally:
            self._teardown()
        try:
            self._log.finish(self.stats, self._where())
        except Exception:
            logger.exception("whyalive monitor failed to write its final report")

    def _teardown(self, *_: object) -> None:
        """Remove the callback, put every gc setting back: the rescue of any cut method."""
        if self._misused:
            self._misused = False
            return
        self._off = True
        self._settle()
        self._uninstall()
        _ACTIVE.discard(self)
        self._stop_thread.set()

    start = guard(_start, _teardown)
    stop = guard(_stop, _teardown)

    __enter__ = start

    def _exit(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self._teardown()  # interrupted: put everything back, analyse nothing more
        else:
            self.stop()

    __exit__ = guard(_exit, _teardown)

    # -- safe points ------------------------------------------------------------------

    def _step(self, *, collect: bool = False) -> None:
        """A safe point: call once per training step (``collect=True``: and collect).

        Analyses what the chosen collections saved since the last safe point and
        frees it before returning; ``collect=True`` first runs the scheduled
        collection of ``collect_generation``. Never raises (errors are logged; an
        interrupt is raised with every gc setting put back).
        """
        self.stats.steps += 1
        if self._off:
            if collect:
                gc.collect(self.collect_generation)
            return
        try:
            if collect:
                self._scheduled_collection()
            elif self._saved and self._due:
                self._process()
            if self.every > 1 and self.cuda_growth:
                self._check_cuda()
            if self.gather_every is not None and self.stats.steps % self.gather_every == 0:
                self._gather()
            if self._froze and self._probe.due(self.stats.steps):
                self._probe.run(self)
        except Exception:
            logger.exception("whyalive monitor failed at step %d", self.stats.steps)

    step = guard(_step, GcSampler._settle)

    def _poll(self) -> None:
        """A safe point without counting a step: analyse and free what is pending."""
        if self._off or not self._saved or not self._due:
            return
        try:
            self._process()
        except Exception:
            logger.exception("whyalive monitor failed while polling")

    poll = guard(_poll, GcSampler._settle)

    def summary_reports(self) -> list[Report]:
        """One report per first sighting so far, each cycle with its counts over the run."""
        return self._log.summary_reports(self.stats, self._where())

    def signatures(self) -> list[SignatureSeen]:
        """Each cycle signature seen so far, with its counts and its first and last step."""
        # list() copies under the GIL: the helper thread may add a signature meanwhile.
        return [
            SignatureSeen(seen.cumulative(), seen.first_step, seen.last_step)
            for seen in list(self._log.seen.values())
        ]

    def report(self) -> Report:
        """Everything seen so far as one report, with the timeline of bytes per step.

        A safe point like :meth:`poll`: what a collection saved is analysed first.
        """
        self.poll()
        return self._combined()

    def _combined(self) -> Report:
        return combine_reports(self.summary_reports(), where=self._where())

    def __str__(self) -> str:
        return monitor_text(self)

    def __repr__(self) -> str:
        return f"<whyalive.GcMonitor {monitor_line(self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        from whyalive.render.notebook import report_html

        # No poll here: a display hook must not run an analysis as a side effect.
        return report_html(self._combined(), label=f"whyalive monitor: {monitor_line(self)}")

    # -- analysis and release --------------------------------------------------------------

    def _process(self) -> None:
        locked(self._lock, self._process_locked)

    def _process_locked(self) -> None:
        objects, self._saved = self._saved, []
        held_in, self._held_in = self._held_in, 0
        self._due = False
        if objects:
            self._analyse(objects, held_in)

    def _analyse(self, objects: list[object], held_in: int | None) -> None:
        """Analyse, then free the objects (``held_in=None``: the caller's collection frees them)."""
        began = self._clock()
        report: Report | None = None
        try:
            # Collections run by the analysis itself are not ours to save; what the ones
            # its allocations set off save waits for the next batch (see _dispose).
            self._quiet = self._waiting = True
            self.stats.saved_objects += len(objects)
            report = analyze(objects, self.options, words_for=self._log.wants_words)
        finally:
            self._quiet = False
            heavy = report is None or report.cycle_count > report.light_cycle_count
            self._dispose(objects, held_in, heavy)
            self.stats.analyses += 1
            self.stats.seconds += self._clock() - began
        self._log.record(report, self.stats.steps, self.on_cycle)

    def _scheduled_collection(self) -> None:
        """Sweep the young generations saving, analyse, then run the scheduled collection."""
        scheduled = self.collect_generation
        # The generations below the scheduled one; on 3.14.0-3.14.4 only the young one
        # (its gc.collect(1) is an increment that may collect nothing).
        sweep = min(max(scheduled - 1, 0), YOUNG)
        final = max(scheduled, older_generation(sweep))
        locked(self._lock, self._scheduled_collection_locked, sweep, final, scheduled)

    def _scheduled_collection_locked(self, sweep: int, final: int, scheduled: int) -> None:
        self._saving_collect(sweep)
        objects, self._saved = self._saved, []
        held_in, self._held_in = self._held_in, 0
        self._due = False
        released = len(objects)
        if objects and held_in <= final:
            self._analyse(objects, None)  # the scheduled collection below frees them
        elif objects:  # promoted past the scheduled generation by a nested collection
            self._analyse(objects, held_in)
            released = 0
        collected = self._release(final, scheduled=True)
        self.stats.unexamined_objects += max(collected - released, 0)

    def _flush(self) -> None:
        """At stop: save one last collection so the last steps' cycles are counted.

        With automatic GC on, also the generation that young collections move what
        is alive into (cycles promoted while alive end there: generation 1, or the
        old space of 3.14.0-3.14.4, which only a full collection reaches); with
        automatic GC off only the young one.
        """
        self._saving_collect(older_generation(0) if gc.isenabled() else 0)
        self._process()

    # -- signals, helpers -----------------------------------------------------------------

    def _check_cuda(self) -> None:
        allocated = cuda_allocated()
        if allocated is None:
            return
        before, self._cuda_before = self._cuda_before, allocated
        if before is not None and allocated - before >= self.cuda_growth:
            self._boost = True  # memory grew: examine the next collection whatever the sampling

    def _gather(self) -> None:
        from whyalive.distributed import gather_summary

        self.last_summary = gather_summary(self)

    def _poll_loop(self) -> None:
        while not self._stop_thread.wait(self.poll_interval):
            self.poll()

    def _where(self) -> str:
        return self.label or self.stats.where()
