"""whyalive never harms the process it watches: live objects, gc state, overlapping checks.

Every test runs on the C core and on the pure-Python twin (the ``core`` fixture in
conftest.py).
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Callable

import pytest

from capabilities import needs_subprocess, needs_threads
from whyalive import check_leaks, explain
from whyalive.capture import FREEZE_NOTE, OVERLAP_NOTE
from whyalive.capture.gcstate import OWNER
from whyalive.graph.heap import user_freeze_count
from whyalive.monitor import GcMonitor


class Payload:
    """A tracked object that can be weakly referenced and put in a cycle."""

    def __init__(self) -> None:
        self.me = self
        self.data = list(range(10))


class SavesItself:
    """Its finalizer puts it on gc.garbage, as some legacy code does."""

    def __init__(self) -> None:
        self.me = self
        self.contents = [1, 2, 3]

    def __del__(self) -> None:
        gc.garbage.append(self)


class MakesCycles:
    """Its finalizer creates fresh cyclic garbage while the collector runs."""

    made: list[weakref.ref[Payload]]

    def __init__(self, made: list[weakref.ref[Payload]]) -> None:
        self.me = self
        self.made = made

    def __del__(self) -> None:
        for _ in range(10):
            self.made.append(weakref.ref(Payload()))


def _leak() -> weakref.ref[Payload]:
    payload = Payload()
    return weakref.ref(payload)


def _tail_since(start: int) -> list[object]:
    return gc.garbage[start:]


def test_live_objects_put_on_gc_garbage_keep_their_contents(core: str) -> None:
    """Objects the user appends to gc.garbage inside a check stay there, untouched."""
    live = [1, 2, 3]
    mapping = {"k": "v"}
    start = len(gc.garbage)
    try:
        with check_leaks(on_leak="ignore") as check:
            gc.garbage.append(live)
            gc.garbage.append(mapping)
        assert live == [1, 2, 3]
        assert mapping == {"k": "v"}
        tail = _tail_since(start)
        assert len(tail) == 2
        assert tail[0] is live
        assert tail[1] is mapping
        assert check.report is not None
        assert check.report.garbage_objects == 0
    finally:
        del gc.garbage[start:]


def test_finalizer_that_saves_itself_is_left_alone(core: str) -> None:
    """An object whose __del__ resurrects it into gc.garbage keeps its contents."""
    start = len(gc.garbage)
    try:
        with check_leaks(on_leak="ignore"):
            SavesItself()
            leaked = _leak()
        tail = _tail_since(start)
        assert len(tail) == 1
        saved = tail[0]
        assert isinstance(saved, SavesItself)
        assert saved.contents == [1, 2, 3]
        assert saved.me is saved
        assert leaked() is None
    finally:
        for obj in gc.garbage[start:]:
            if isinstance(obj, SavesItself):
                obj.me = None  # type: ignore[assignment]
        del gc.garbage[start:]


def test_overlapping_checks_restore_the_debug_flags(core: str) -> None:
    """An outer check that exits before the inner one still ends with the user's flags."""
    before = gc.get_debug()
    saving = OWNER.saving  # the pytest plugin's bracket, under --whyalive
    first = check_leaks(on_leak="ignore")
    second = check_leaks(on_leak="ignore")
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    leaked = _leak()
    second.__exit__(None, None, None)
    assert gc.get_debug() == before
    assert OWNER.saving == saving
    assert first.report is not None
    assert second.report is not None
    assert OVERLAP_NOTE in first.report.notes
    assert OVERLAP_NOTE in second.report.notes
    assert second.report.garbage_objects > 0  # the leak made after the first ended
    assert leaked() is None


def test_nested_checks_attribute_each_leak_to_its_own_block(core: str) -> None:
    """Properly nested checks need no overlap note and each reports its own garbage."""
    with check_leaks(on_leak="ignore", all_cycles=True) as outer:
        outer_leak = _leak()
        with check_leaks(on_leak="ignore", all_cycles=True) as inner:
            inner_leak = _leak()
    assert outer.report is not None
    assert inner.report is not None
    assert OVERLAP_NOTE not in outer.report.notes
    assert OVERLAP_NOTE not in inner.report.notes
    assert inner.report.cycle_count == 1
    assert outer.report.cycle_count == 1
    assert outer_leak() is None
    assert inner_leak() is None


@needs_threads
def test_checks_in_two_threads_say_they_overlapped(core: str) -> None:
    """Checks running at once in two threads report the overlap and restore the flags."""
    before = gc.get_debug()
    entered = threading.Barrier(2)
    leave = threading.Barrier(2)
    reports: list[object] = []
    refs: list[weakref.ref[Payload]] = []

    def work() -> None:
        with check_leaks(on_leak="ignore", all_cycles=True) as check:
            refs.append(_leak())
            entered.wait()
            leave.wait()
        reports.append(check.report)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.get_debug() == before
    assert len(reports) == 2
    assert all(OVERLAP_NOTE in report.notes for report in reports)  # type: ignore[attr-defined]
    found = sum(report.cycle_count for report in reports)  # type: ignore[attr-defined]
    # The twin frees what it released by a collection, which a collection running in
    # the other thread can make a no-op; the next one then captures those cycles once
    # more. The C core breaks them at once (tp_clear): each cycle is reported once.
    assert found == 2 if core == "c" else found >= 2
    assert all(ref() is None for ref in refs)


@pytest.mark.whyalive_skip  # the plugin's own freeze would hide the check's
def test_what_the_interpreter_freezes_itself_is_not_taken_for_a_user_freeze(core: str) -> None:
    """With nothing frozen by the user, checks, the monitor and explain() see an unfrozen heap.

    CPython 3.12 keeps its immortal tuples in the permanent generation (its freeze count
    is never 0): read as a user's freeze, no check froze the heap (every one paid for a
    collection of the whole heap), and every report and explain() noted frozen objects.
    """
    assert user_freeze_count() == 0
    with check_leaks(on_leak="ignore") as check:
        leaked = _leak()
        assert OWNER.freeze.frozen
    assert check.report is not None
    assert not any("frozen" in note for note in check.report.notes), check.report.notes
    assert leaked() is None
    with GcMonitor(log=False) as monitor:
        assert monitor._froze
    held = [1]
    explained = explain(held)
    assert not any("frozen" in note for note in explained.report.notes), explained.report.notes
    assert user_freeze_count() == 0


@pytest.mark.whyalive_skip  # freezes inside the plugin's frozen baseline on purpose
def test_user_freeze_inside_the_block_is_kept_and_stated(core: str) -> None:
    """gc.freeze() in the block stays in force, and the report states what it hides."""
    try:
        with check_leaks(on_leak="ignore", all_cycles=True) as check:
            before_freeze = _leak()
            gc.freeze()
            after_freeze = _leak()
        assert user_freeze_count() > 0  # the user's freeze was not undone
        assert check.report is not None
        assert FREEZE_NOTE in check.report.notes
        assert check.report.cycle_count == 1  # the leak made after the freeze
        assert after_freeze() is None
        assert before_freeze() is not None  # frozen, as the user asked
    finally:
        gc.unfreeze()
        gc.collect()
    assert before_freeze() is None


def test_gc_garbage_cleared_inside_the_block_hides_nothing(core: str) -> None:
    """A user who empties gc.garbage mid-block still gets the report, and nothing stays."""
    saved = list(gc.garbage)
    try:
        with check_leaks(on_leak="ignore", all_cycles=True) as check:
            leaked = _leak()
            gc.collect()
            gc.garbage.clear()
        assert check.report is not None
        assert check.report.cycle_count == 1
        assert leaked() is None
        assert gc.garbage == []
    finally:
        gc.garbage[:] = saved


@pytest.mark.whyalive_skip  # its finalizers make cyclic garbage on purpose
def test_cycles_made_by_finalizers_during_the_closing_collection_are_freed(core: str) -> None:
    """Cycles created by __del__ while the check collects never stay in gc.garbage."""
    start = len(gc.garbage)
    made: list[weakref.ref[Payload]] = []
    with check_leaks(on_leak="ignore"):
        for _ in range(100):
            MakesCycles(made)
    assert len(made) == 1000
    assert len(gc.garbage) == start
    gc.collect()
    assert all(ref() is None for ref in made)
    assert len(gc.garbage) == start


class HostileMeta(type):
    """A metaclass whose every dunder read raises, names included."""

    def __getattribute__(cls, name: str) -> object:
        if name.startswith("__") and name not in ("__dict__", "__mro__", "__class__"):
            raise RuntimeError(f"hostile {name}")
        return type.__getattribute__(cls, name)


class HostileType(metaclass=HostileMeta):
    """Instances of a class that raises on ``type(obj).__qualname__``."""


def _hostile_leak() -> None:
    obj = HostileType()
    obj.me = obj  # type: ignore[attr-defined]
    obj.payload = bytearray(2 << 20)  # type: ignore[attr-defined]


def _raise_inside_check(error: Exception, work: Callable[[], object]) -> None:
    with check_leaks():
        work()
        raise error


def test_hostile_metaclass_is_named_without_running_its_code(core: str) -> None:
    """Type names come from type's own descriptors, so the report is built and names it."""
    with check_leaks(on_leak="ignore") as check:
        _hostile_leak()
    assert check.report is not None
    assert check.report.found
    text = check.report.render("text")
    assert "HostileType" in text
    assert "`.me`" in text


class UnhashableMeta(type):
    """A metaclass whose classes cannot be hashed or compared: a set or dict of classes, or
    ``cls in (...)``, runs this code."""

    def __hash__(cls) -> int:
        raise RuntimeError("hostile __hash__")

    def __eq__(cls, other: object) -> bool:
        raise RuntimeError("hostile __eq__")


class Unhashable(metaclass=UnhashableMeta):
    """Instances of a class that can be neither hashed nor compared."""


def _unhashable_ring(size: int) -> None:
    first = last = Unhashable()
    for _ in range(size - 1):
        link = Unhashable()
        last.next = link  # type: ignore[attr-defined]
        last = link
    last.next = first  # type: ignore[attr-defined]
    first.payload = bytearray(1 << 20)  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [1, 3000])  # a small cycle, and a structure
def test_classes_that_cannot_be_hashed_or_compared_are_analysed(core: str, size: int) -> None:
    """Types are told apart by identity: the report is built, rendered everywhere, and an
    object of such a class is explained."""
    with check_leaks(on_leak="ignore") as check:
        _unhashable_ring(size)
    assert check.report is not None
    assert check.report.total_bytes >= 1 << 20
    text = check.report.render("text")
    assert "Unhashable" in text
    for form in ("json", "dot", "html"):
        assert check.report.render(form)
    held = Unhashable()
    held.payload = bytearray(1 << 16)  # type: ignore[attr-defined]
    assert "bytearray" in str(explain(held.payload))


def test_user_exception_wins_over_a_hostile_metaclass(core: str) -> None:
    """The block's own ValueError surfaces unchanged from a check over hostile garbage."""
    error = ValueError("the user's own")
    with pytest.raises(ValueError, match="the user's own") as raised:
        _raise_inside_check(error, _hostile_leak)
    assert raised.value is error


def test_user_exception_wins_when_the_analysis_fails(
    core: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a failing analysis never replaces the user's exception; it adds a note."""

    def broken(captured: object, options: object) -> object:
        raise RuntimeError("analysis failed")

    monkeypatch.setattr("whyalive.check.analyze_block", broken)
    refs: list[weakref.ref[Payload]] = []
    with pytest.raises(ValueError, match="the user's own") as raised:
        _raise_inside_check(ValueError("the user's own"), lambda: refs.append(_leak()))
    if sys.version_info >= (3, 11):
        assert any("whyalive could not check" in n for n in raised.value.__notes__)
    assert refs[0]() is None
    with pytest.raises(RuntimeError, match="analysis failed"), check_leaks():
        pass


class AppendsLive:
    """A cycle whose finalizer appends a live list to gc.garbage."""

    def __init__(self, live: list[object]) -> None:
        self.me = self
        self.live = live

    def __del__(self) -> None:
        gc.garbage.append(self.live)


@pytest.mark.whyalive_skip  # the monitor must see this collection, not the plugin
def test_monitor_leaves_what_finalizers_put_on_gc_garbage(core: str) -> None:
    """The monitor takes only what its collection saved, never a finalizer's live object."""
    live: list[object] = [1, 2, 3]
    start = len(gc.garbage)
    try:
        with GcMonitor(log=False) as monitor:
            AppendsLive(live)
            leaked = _leak()
            gc.collect(0)  # young: examined whatever the full-collection budget says
            monitor.step()
        assert leaked() is None
        assert monitor.stats.saved_objects > 0
        tail = _tail_since(start)
        assert len(tail) == 1
        assert tail[0] is live
        assert live == [1, 2, 3]
    finally:
        del gc.garbage[start:]


def test_checks_in_two_asyncio_tasks_say_they_overlapped(core: str) -> None:
    """Checks in two tasks of one thread overlap even when one opens and closes inside the other."""
    reports: list[object] = []
    inner_done = asyncio.Event()
    outer_open = asyncio.Event()

    async def outer() -> None:
        with check_leaks(on_leak="ignore") as check:
            outer_open.set()
            await inner_done.wait()
        reports.append(check.report)

    async def inner() -> None:
        await outer_open.wait()
        with check_leaks(on_leak="ignore") as check:
            await asyncio.sleep(0)
        reports.append(check.report)
        inner_done.set()

    async def both() -> None:
        await asyncio.gather(outer(), inner())

    asyncio.run(both())
    assert len(reports) == 2
    assert all(OVERLAP_NOTE in report.notes for report in reports)  # type: ignore[attr-defined]


def test_check_around_an_event_loop_nests_the_checks_inside_it(core: str) -> None:
    """A check opened outside asyncio.run() encloses every task's check: no overlap note."""

    async def task() -> object:
        with check_leaks(on_leak="ignore") as check:
            await asyncio.sleep(0)
        return check.report

    with check_leaks(on_leak="ignore") as outer:
        inner = asyncio.run(task())
    assert OVERLAP_NOTE not in inner.notes  # type: ignore[attr-defined]
    assert outer.report is not None
    assert OVERLAP_NOTE not in outer.report.notes


_FREED_ITERATORS = textwrap.dedent(
    """
    import asyncio, gc
    import whyalive

    loop = asyncio.new_event_loop()
    future = loop.create_future()
    for _ in range(4):  # each dropped iterator goes to the C _asyncio module's free list
        iter(future)
    whyalive.explain([bytearray(16)])  # a walk over the whole heap, the module included
    for _ in range(4):
        iter(future)
    gc.collect()
    loop.close()
    print("collected")
    """
)


@needs_subprocess
@pytest.mark.parametrize("pure", ["0", "1"], ids=["c", "python"])
def test_a_heap_walk_leaves_the_asyncio_free_list_alone(pure: str) -> None:
    """On CPython 3.12.0-3.12.5 asking for the `_asyncio` module's referents hands out the
    freed iterators of its free list; dropping that answer frees them again, and the next
    collection loops for ever (3.12.1 here). `explain()` walks the heap on both cores and a
    collection still returns. In a child process: what fails here hangs."""
    done = subprocess.run(
        [sys.executable, "-c", _FREED_ITERATORS],
        env={**os.environ, "WHYALIVE_PURE_PYTHON": pure, "PYTHONWARNINGS": "ignore"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "collected"
