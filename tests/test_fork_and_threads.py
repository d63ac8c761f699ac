"""A fork inside a check or a monitor, and cycles that other threads make meanwhile.

A forked child starts with the user's gc state and no whyalive capture running (its
cyclic garbage is freed as usual, nothing saved, nothing frozen); the parent goes on
unaffected. Cycles made by other threads while a check runs are found with it, and
the report says so. On both graph cores (the ``core`` fixture).
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import weakref

import pytest

from capabilities import needs_fork, needs_threads
from whyalive import check_leaks
from whyalive.capture.gcstate import OWNER
from whyalive.graph.heap import user_freeze_count
from whyalive.monitor import GcMonitor


class Payload:
    def __init__(self) -> None:
        self.me = self
        self.data = bytearray(1 << 20)


def _child_state(batches: int) -> dict[str, object]:
    """In the child: make cyclic garbage in batches, collect, report what the collector did."""
    refs = []
    for _ in range(batches):
        refs.extend(weakref.ref(Payload()) for _ in range(10))
        gc.collect()
    return {
        "debug": gc.get_debug(),
        "frozen": user_freeze_count(),
        "callbacks": [repr(callback) for callback in gc.callbacks],
        "garbage": len(gc.garbage),
        "alive": sum(1 for ref in refs if ref() is not None),
        # No capture running: nothing saved, no record made per collection.
        "held by whyalive": len(OWNER._saved) + OWNER.saving,
    }


def _fork_and_report(batches: int = 5) -> dict[str, object]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        os.close(read)
        try:
            os.write(write, json.dumps(_child_state(batches)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as stream:
        found: dict[str, object] = json.loads(stream.read())
    os.waitpid(pid, 0)
    return found


@needs_fork
@pytest.mark.whyalive_skip  # the child must start from the user's state, not a bracket
def test_a_child_forked_inside_a_check_starts_unwatched(core: str) -> None:
    debug, callbacks = gc.get_debug(), [repr(c) for c in gc.callbacks]
    frozen = user_freeze_count()
    garbage = len(gc.garbage)
    with check_leaks(on_leak="ignore") as check:
        leaked = weakref.ref(Payload())
        child = _fork_and_report()
    assert child == {
        "debug": debug,
        "frozen": frozen,
        "callbacks": callbacks,
        "garbage": garbage,
        "alive": 0,
        "held by whyalive": 0,
    }
    assert check.report is not None
    assert check.report.cycle_count == 1  # the parent's check is unaffected
    assert leaked() is None


@needs_fork
@pytest.mark.whyalive_skip
def test_a_child_forked_inside_a_monitor_starts_unwatched(core: str) -> None:
    debug, callbacks = gc.get_debug(), [repr(c) for c in gc.callbacks]
    frozen = user_freeze_count()
    with GcMonitor(log=False) as monitor:
        child = _fork_and_report(batches=3)
        leaked = weakref.ref(Payload())
        monitor.step(collect=True)
    assert child["debug"] == debug
    assert child["frozen"] == frozen
    assert child["callbacks"] == callbacks
    assert child["alive"] == 0
    assert child["held by whyalive"] == 0
    assert len(monitor.signatures()) == 1
    assert leaked() is None


@needs_threads
@pytest.mark.whyalive_skip  # a background thread makes cycles during other tests too
def test_cycles_of_other_threads_are_said_to_be_maybe_theirs(core: str) -> None:
    started, stop = threading.Event(), threading.Event()

    def churn() -> None:
        started.set()
        while not stop.is_set():
            Payload()
            stop.wait(0.001)

    worker = threading.Thread(target=churn, name="churner")
    worker.start()
    started.wait()
    try:
        with check_leaks(on_leak="ignore") as check:
            stop.wait(0.05)  # the block itself makes nothing
    finally:
        stop.set()
        worker.join()
    gc.collect()
    assert check.report is not None
    assert check.report.cycle_count > 0
    notes = [note for note in check.report.notes if "other thread" in note]
    assert len(notes) == 1
    assert "churner" in notes[0]
    assert f"{check.report.cycle_count} cycle" in notes[0]


@needs_threads
def test_no_thread_note_when_only_the_block_ran(core: str) -> None:
    idle = threading.Event()
    sleeper = threading.Thread(target=idle.wait, name="sleeper")
    sleeper.start()
    time.sleep(0.2)  # past its start-up: blocked in idle.wait() from here on
    try:
        with check_leaks(on_leak="ignore") as check:
            Payload()
    finally:
        idle.set()
        sleeper.join()
    assert check.report is not None
    assert check.report.cycle_count == 1
    assert not [note for note in check.report.notes if "sleeper" in note]
