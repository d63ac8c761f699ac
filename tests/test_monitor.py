"""The garbage monitor: cycles counted per signature, memory freed, gc state and tracers kept."""

from __future__ import annotations

import cProfile
import gc
import inspect
import logging
import os
import pstats
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import whyalive
from capabilities import needs_fork, needs_subprocess
from scenarios import counts_said, stage_backward
from whyalive import GcMonitor, Report
from whyalive.errors import UsageError
from whyalive.graph.heap import user_freeze_count

numpy = pytest.importorskip("numpy")

# The monitor runs its own gc callbacks and DEBUG_SAVEALL: the plugin cannot watch it.
pytestmark = pytest.mark.whyalive_skip


def leak_steps(mon: GcMonitor, steps: int, *, collect: bool = False) -> list[weakref.ref]:
    """Run ``steps`` steps that each leak one closure cycle holding a 4 KiB array."""
    refs = []
    for _ in range(steps):
        array = numpy.zeros(1024, dtype=numpy.float32)
        refs.append(weakref.ref(array))
        stage_backward([array])
        del array
        mon.step(collect=collect)
    return refs


def occurrences(mon: GcMonitor) -> dict[str, int]:
    """Occurrences by pattern over the reports gathered so far."""
    counts: dict[str, int] = {}
    for report in mon.summary_reports():
        for cycle in report.cycles:
            counts[cycle.pattern] = counts.get(cycle.pattern, 0) + cycle.occurrences
    return counts


@pytest.fixture
def gc_off() -> Iterator[None]:
    """Automatic GC off for the test, as large training jobs run."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_a_leak_seen_before_is_only_counted(gc_off: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a signature's first sighting its report is not written again (until an
    update is due), yet every occurrence and byte is counted."""
    from whyalive.report import pipeline

    written: list[int] = []
    build_report = pipeline.build_report

    def counted(*args: object, **kwargs: object) -> Report:
        written.append(1)
        return build_report(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "build_report", counted)
    with whyalive.monitor(log=False, log_interval=3600) as mon:
        leak_steps(mon, 12, collect=True)
    assert mon.stats.analyses >= 12
    assert len(written) == 1
    assert occurrences(mon) == {"recursive-closure": 12}
    assert mon.summary_reports()[0].cycles[0].total_bytes == 12 * 4096


def test_every_leaking_step_counted_and_freed() -> None:
    """With automatic GC on, each of 60 leaking steps is one occurrence; every array is freed."""
    with whyalive.monitor(log=False) as mon:
        refs = leak_steps(mon, 60)
    assert occurrences(mon) == {"recursive-closure": 60}
    cycle = mon.summary_reports()[0].cycles[0]
    assert cycle.total_bytes == 60 * 4096
    gc.collect()
    assert all(r() is None for r in refs), "the monitor kept an array alive"


def test_counts_agree_between_text_json_and_html_over_the_run() -> None:
    """mon.report(): the headline's cycles, arrays and bytes are the JSON's, summed over the
    run; cycles holding nothing heavy are in the JSON's cycle_count, not in the headline."""
    with whyalive.monitor(log=False, collect_generation=1) as mon:
        for step in range(30):
            stage_backward([numpy.zeros(1024, dtype=numpy.float32)])
            light: list[object] = []
            light.append(light)  # a cycle that holds nothing heavy
            del light
            mon.step(collect=step % 5 == 4)
    report = mon.report()
    said = counts_said(report)
    assert (said.cycles, said.signatures, said.heavy, said.size) == (30, 1, 30, "120.0 KiB")
    data = report.to_dict()
    assert data["reported_cycle_count"] == 30
    assert data["cycle_count"] >= 60
    headline = report.render("text", width=1000).splitlines()[0]
    assert headline.startswith(
        "whyalive: 30 reference cycles (1 signature) kept 30 arrays alive over 30 monitored steps: "
        "120.0 KiB on cpu"
    )
    assert headline.endswith(", summed over the run.")
    assert "summed over the run" in str(mon)


def test_torch_tensors_counted_and_freed() -> None:
    """Tensors held by the seed cycle are counted with their bytes and freed by the monitor."""
    torch = pytest.importorskip("torch")
    refs = []
    with whyalive.monitor(log=False) as mon:
        for _ in range(20):
            tensor = torch.zeros(16, 16)
            refs.append(weakref.ref(tensor))
            stage_backward([tensor, [tensor[0]]])
            del tensor
            mon.step()
    cycle = mon.summary_reports()[0].cycles[0]
    assert (cycle.occurrences, cycle.total_bytes) == (20, 20 * 16 * 16 * 4)
    assert all(r() is None for r in refs)


def test_without_freeze_still_frees_and_restores() -> None:
    """freeze=False leaves the heap unfrozen; leaks are still found and every array freed."""
    with whyalive.monitor(log=False, freeze=False) as mon:
        assert user_freeze_count() == 0
        refs = leak_steps(mon, 30)
    assert 0 < occurrences(mon)["recursive-closure"] <= 30
    gc.collect()
    assert all(r() is None for r in refs)


def test_unfrozen_old_collections_wait_for_the_budget() -> None:
    """Without freeze, a gen-1 collection right after start is over budget: counted, not saved."""
    with whyalive.monitor(log=False, freeze=False, max_overhead=0.01) as mon:
        stage_backward([numpy.zeros(16)])
        gc.collect(1)
        assert mon.stats.examined == 0
        assert mon.stats.unexamined_objects > 0
    assert occurrences(mon) == {}


def test_memory_released_before_the_next_step() -> None:
    """Arrays saved by an examined collection are freed by the step() that analyses them."""
    with whyalive.monitor(log=False) as mon:
        array = numpy.zeros(1024, dtype=numpy.float32)
        ref = weakref.ref(array)
        stage_backward([array])
        del array
        gc.collect(0)  # an automatic-style young collection: saved, not freed
        assert ref() is not None
        mon.step()
        assert ref() is None
    assert occurrences(mon) == {"recursive-closure": 1}


def test_collect_mode_runs_no_extra_full_collection(gc_off: None) -> None:
    """With automatic GC off, step(collect=True) counts every leak, one full collection a step."""
    full = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    mon = whyalive.monitor(log=False)
    mon.start()
    gc.callbacks.append(count)
    try:
        refs = leak_steps(mon, 25, collect=True)
        assert len(full) == 25
        assert all(r() is None for r in refs), "freed by the scheduled collection itself"
    finally:
        gc.callbacks.remove(count)
        mon.stop()
    assert occurrences(mon) == {"recursive-closure": 25}
    assert mon.stats.full_releases == 0


def test_collect_mode_generation_one(gc_off: None) -> None:
    """A framework-style gen-1 schedule: leaks counted, no full collection during the steps."""
    full = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    with whyalive.monitor(log=False, collect_generation=1) as mon:
        gc.callbacks.append(count)
        try:
            leak_steps(mon, 10, collect=True)
        finally:
            gc.callbacks.remove(count)
    assert full == []
    assert occurrences(mon) == {"recursive-closure": 10}


def test_gc_settings_and_user_garbage_restored() -> None:
    """Thresholds, flags, callbacks and the user's gc.garbage entries are exactly as before."""
    threshold = gc.get_threshold()
    callbacks = list(gc.callbacks)
    mine = object()
    gc.garbage.append(mine)
    gc.set_threshold(500, 7, 9)
    try:
        with whyalive.monitor(log=False) as mon:
            leak_steps(mon, 5)
            assert gc.get_debug() == 0
        assert gc.get_threshold() == (500, 7, 9)
        assert gc.get_debug() == 0
        assert gc.callbacks == callbacks
        assert gc.garbage[-1] is mine
        assert user_freeze_count() == 0
    finally:
        gc.set_threshold(*threshold)
        gc.garbage.remove(mine)


def test_users_own_saveall_garbage_left_alone() -> None:
    """When the user runs with DEBUG_SAVEALL, the saved garbage stays in their gc.garbage."""
    start = len(gc.garbage)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with whyalive.monitor(log=False) as mon:
            leak_steps(mon, 3)
            gc.collect(0)
            assert len(gc.garbage) > start
        assert occurrences(mon) == {}
        assert len(gc.garbage) > start
    finally:
        gc.set_debug(0)
        del gc.garbage[start:]
        gc.collect()


def test_profiler_and_coverage_still_record() -> None:
    """cProfile and coverage running around a monitored loop see every call and line."""
    coverage = pytest.importorskip("coverage")
    scenario_file = inspect.getsourcefile(stage_backward) or ""
    cov = coverage.Coverage(data_file=None, config_file=False, include=[scenario_file])
    profiler = cProfile.Profile()
    trace_before = sys.gettrace()
    cov.start()
    profiler.enable()
    # None on 3.12+, where cProfile records through sys.monitoring instead.
    profile_hook = sys.getprofile()
    try:
        with whyalive.monitor(log=False) as mon:
            leak_steps(mon, 20)
            assert sys.getprofile() is profile_hook
    finally:
        profiler.disable()
        cov.stop()
    assert sys.gettrace() is trace_before
    calls = {
        func[2]: stats[1]
        for func, stats in pstats.Stats(profiler).stats.items()  # type: ignore[attr-defined]
    }
    assert calls["stage_backward"] == 20
    assert calls["extract_tensors_with_grads"] == 40
    lines = set(cov.get_data().lines(scenario_file) or ())
    source, first = inspect.getsourcelines(stage_backward)
    wanted = {first + i for i, text in enumerate(source) if "append" in text or "(outputs)" in text}
    assert wanted <= lines, "coverage lost lines of the monitored loop"
    assert occurrences(mon) == {"recursive-closure": 20}


def test_report_dir_files_exist_with_run_counts(tmp_path: Path) -> None:
    """report_dir gets a JSON report that holds the counts over the whole run."""
    with whyalive.monitor(log=False, report_dir=tmp_path) as mon:
        leak_steps(mon, 12)
    files = sorted(tmp_path.glob("whyalive-monitor-*.json"))
    assert len(files) == 1
    report = Report.load(files[0])
    assert [c.occurrences for c in report.cycles] == [12]
    assert report.total_bytes == 12 * 4096
    assert "12 steps" in report.notes[-1]


def test_logged_once_then_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    """A signature is logged when first seen and once at stop with its count, not per step."""
    seen: list[tuple[str, int]] = []
    caplog.set_level(logging.WARNING, logger="whyalive")
    with whyalive.monitor(on_cycle=lambda c, r: seen.append((c.pattern, c.occurrences))) as mon:
        leak_steps(mon, 10)
        gc.collect(0)  # found mid-run: logged now, counted again at stop
        leak_steps(mon, 20)
    first = [r for r in caplog.records if "first seen" in r.getMessage()]
    assert len(first) == 1
    assert "extract_tensors_with_grads" in first[0].getMessage()
    counts = [r for r in caplog.records if "seen 30 times" in r.getMessage()]
    assert len(counts) == 1
    assert seen == [("recursive-closure", 10)]
    assert len(caplog.records) <= 5


def test_never_raises_into_user_code(caplog: pytest.LogCaptureFixture) -> None:
    """A failing on_cycle callback is logged; step() and stop() return normally."""

    def broken(cycle: object, report: object) -> None:
        raise RuntimeError("boom")

    with whyalive.monitor(log=False, on_cycle=broken) as mon:
        leak_steps(mon, 3)
    assert any("on_cycle callback failed" in r.getMessage() for r in caplog.records)
    assert occurrences(mon) == {"recursive-closure": 3}


def test_helper_thread_polls() -> None:
    """With poll_interval, a helper thread analyses saved garbage without any step() call."""
    with whyalive.monitor(log=False, poll_interval=0.01) as mon:
        array = numpy.zeros(16)
        ref = weakref.ref(array)
        stage_backward([array])
        del array
        gc.collect(0)
        deadline = time.monotonic() + 5
        while ref() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ref() is None
    assert occurrences(mon) == {"recursive-closure": 1}


def test_sampling_every_nth_young_collection() -> None:
    """With every=3 and nothing found, only every third young collection is saved."""
    with whyalive.monitor(log=False, every=3) as mon:
        for _ in range(9):
            gc.collect(0)
        assert mon.stats.examined == 3


def test_gather_every_calls_distributed_summary() -> None:
    """gather_every=2 gathers a summary every second step (one process: its own summary)."""
    pytest.importorskip("whyalive.distributed")
    with whyalive.monitor(log=False, gather_every=2) as mon:
        leak_steps(mon, 4)
    assert mon.last_summary is not None


@pytest.mark.parametrize(
    "options",
    [{"every": 0}, {"collect_generation": 3}, {"max_overhead": 0}, {"gather_every": 0}],
)
def test_bad_options_raise_usage_error(options: dict[str, int]) -> None:
    """Invalid options fail at construction with a UsageError."""
    with pytest.raises(UsageError):
        whyalive.monitor(**options)


def test_start_twice_is_an_error() -> None:
    """Starting an active monitor again is refused; stop() twice is harmless."""
    mon = whyalive.monitor(log=False)
    with mon, pytest.raises(UsageError):
        mon.start()
    mon.stop()
    assert not mon.active


CHILD_AND_SHUTDOWN = """
import gc, os, sys
import whyalive

def leak():
    def f():
        return f
    f.data = bytearray(1 << 16)

mon = whyalive.monitor(log=False).start()
pid = os.fork()
if pid == 0:
    leak()
    gc.collect(0)
    os._exit(0 if mon._off and not mon._saved else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
leak()
sys.exit(0)  # never stopped: the callback must stay quiet through shutdown
"""


@needs_fork
@needs_subprocess
def test_forked_child_muted_and_shutdown_quiet() -> None:
    """A forked worker never saves garbage; an unstopped monitor exits the interpreter cleanly."""
    src = str(Path(whyalive.__file__).parent.parent)
    result = subprocess.run(
        [sys.executable, "-c", CHILD_AND_SHUTDOWN],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": src},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "child 0" in result.stdout
    assert result.stderr == ""


class _Pair:
    """Two of these refer to each other (a leak whose reference names the test picks)."""


def _pairs(name: str, count: int) -> list[object]:
    """``count`` pairs, each two _Pair objects holding each other by ``name`` and a 1 MiB
    buffer, captured as garbage."""
    from whyalive.capture import GarbageWatch

    watch = GarbageWatch()
    watch.begin()
    for _ in range(count):
        first, second = _Pair(), _Pair()
        setattr(first, name, second)
        setattr(second, name, first)
        first.payload = bytearray(1 << 20)  # type: ignore[attr-defined]
        del first, second
    captured = watch.end()
    objects = list(captured.objects)
    captured.objects.clear()
    watch.finish()
    return objects


def test_a_group_seen_before_is_counted_with_what_its_full_analysis_found() -> None:
    """Analyses that only count reuse a group's diagnosis while its shape is the same:
    the same references, by name, between the same classes; words always come from a
    full analysis."""
    from whyalive.analysis import AnalysisOptions
    from whyalive.analysis.repeats import RepeatMemo
    from whyalive.report.pipeline import analyze

    memo = RepeatMemo()
    options = AnalysisOptions(progress_after=None, autograd_walks=1, repeats=memo)
    plain = AnalysisOptions(progress_after=None, autograd_walks=1)
    first = analyze(_pairs("other", 3), options, words_for=lambda _: True)
    assert (memo.full, memo.reused) == (1, 0)
    counted = analyze(_pairs("other", 4), options, words_for=lambda _: False)
    assert (memo.full, memo.reused) == (1, 1)
    (cycle,) = counted.cycles
    assert (cycle.signature, cycle.occurrences, cycle.total_bytes) == (
        first.cycles[0].signature,
        4,
        4 << 20,
    )
    # The same classes, other names: a shape of its own, diagnosed in full.
    renamed = analyze(_pairs("partner", 2), options, words_for=lambda _: False)
    assert memo.full == 2
    fresh = analyze(_pairs("partner", 2), plain, words_for=lambda _: False)
    assert renamed.cycles[0].signature == fresh.cycles[0].signature != cycle.signature
    # Words wanted for a group counted from the memo: the full analysis runs again, and the
    # report is the one an analysis without the memo writes.
    worded = analyze(_pairs("other", 2), options, words_for=lambda _: True)
    unmemoized = analyze(_pairs("other", 2), plain, words_for=lambda _: True)
    assert worded.cycles == unmemoized.cycles


def test_a_repeated_leak_is_diagnosed_and_walked_once_per_refresh(
    gc_off: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leak every step (tensors with their consumed autograd graph, as in a training
    loop): its group is diagnosed and one occurrence's graph walked at the first analysis
    and once every REFRESH_EVERY analyses after, and counted as a monitor without the memo
    counts it."""
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from whyalive.analysis.repeats import REFRESH_EVERY
    from whyalive.kinds.torch import AutogradWalk

    walks: list[object] = []
    visit = AutogradWalk.visit

    def counted(self: AutogradWalk, node: int, tensor: object) -> None:
        walks.append(node)
        visit(self, node, tensor)

    monkeypatch.setattr(AutogradWalk, "visit", counted)
    layer = torch.nn.Linear(8, 8)
    steps = 2 * REFRESH_EVERY + 4
    results = []
    for memo in (True, False):
        walks.clear()
        mon = whyalive.monitor(log=False, log_interval=3600)
        if not memo:
            mon.options = replace(mon.options, repeats=None)
        with mon:
            for _ in range(steps):
                out = layer(torch.ones(4, 8))
                loss = out.sum()
                loss.backward()
                stage_backward([out, [loss]])
                del out, loss
                mon.step(collect=True)
        assert mon.stats.analyses >= steps
        (seen,) = mon.signatures()
        results.append((seen.cycle.occurrences, seen.cycle.total_bytes, len(walks)))
        if memo:
            repeats = mon.options.repeats
            assert repeats is not None
            assert repeats.full == 3  # analyses 1, 2 + REFRESH_EVERY, 3 + 2 * REFRESH_EVERY
            assert repeats.reused == steps - 3
    (memo_run, plain_run) = results
    assert memo_run[:2] == plain_run[:2] == (steps, memo_run[1])
    assert memo_run[1] > steps * 4 * 8 * 4  # the graphs' saved tensors are counted too
    assert plain_run[2] == 2 * steps  # out and loss walked at every analysis
    assert memo_run[2] == 2 * 3


def test_full_saving_collections_after_a_batch_stay_within_their_budget() -> None:
    """A batch promoted to the old generation is freed by tp_clear; the full collection
    that looks for other old cycles with it runs within a share of ``max_overhead``:
    with almost none, only the first one runs; every leak is still counted and freed.
    The monitor's clock is the test's (each reading 1 us later, each step 1 ms): the
    budget's decisions do not depend on how busy the machine is."""
    full: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            self.now += 1e-6
            return self.now

    results = []
    for budget in (1e-9, 1.0):
        full.clear()
        gc.callbacks.append(count)
        clock = Clock()
        monitor = whyalive.monitor(log=False, max_overhead=budget)
        monitor._clock = clock
        try:
            with monitor as mon:
                refs = []
                for _ in range(30):
                    array = numpy.zeros(1024)
                    refs.append(weakref.ref(array))
                    stage_backward([array])
                    del array
                    gc.collect(0)
                    gc.collect(1)  # what the callback saved is now in the old generation
                    mon.step()
                    clock.now += 1e-3
        finally:
            gc.callbacks.remove(count)
        assert occurrences(mon) == {"recursive-closure": 30}
        assert all(r() is None for r in refs)
        results.append(len(full))
    assert results[0] == 1
    assert results[1] == 30


def test_what_the_analysis_sets_off_joins_the_next_batch() -> None:
    """The automatic collection that an analysis's own allocations set off (the collector is
    off while it runs) finds the step's fresh leak: it waits for the next batch instead of
    costing an analysis of its own at the next step, and is counted all the same."""
    threshold = gc.get_threshold()
    with whyalive.monitor(log=False) as mon:
        first = numpy.zeros(1024)
        stage_backward([first])
        gc.collect(0)  # saved: the batch the next step analyses
        second = numpy.zeros(1024)
        freed = [weakref.ref(first), weakref.ref(second)]
        del first
        try:
            # Above what the step allocates before its analysis, below what the analysis does.
            gc.set_threshold(300, *threshold[1:])
            stage_backward([second])  # garbage now, in the young generation
            del second
            mon.step()
        finally:
            gc.set_threshold(*threshold)
        assert mon.stats.analyses == 1
        assert len(mon._saved) > 0, "the analysis set off no collection: nothing tested"
        mon.step()
        mon.step()
        assert mon.stats.analyses == 1  # held until a collection finds more, or stop()
    assert mon.stats.analyses == 2
    assert occurrences(mon) == {"recursive-closure": 2}
    assert [ref() for ref in freed] == [None, None]
