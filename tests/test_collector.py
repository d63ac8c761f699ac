"""What differs from one collector to the next, checked on whichever one runs the tests.

CPython 3.14.0-3.14.4 collect incrementally: ``gc.collect(1)`` may collect nothing,
and what a collection saves joins an old space that only a full collection examines
again (``whyalive.capture.collector``). Each test here holds on every leg, 3.14 included, with
payloads that need no NumPy (big buffers are heavy objects too).
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

import whyalive
from scenarios import stage_backward
from whyalive import check_leaks, find_leaks
from whyalive.capture.collector import YOUNG, older_generation
from whyalive.errors import UsageError

BUFFER = 2 << 20


class Box:
    """A weakly referenceable holder: its death proves the payload it holds was freed."""

    def __init__(self, payload: object) -> None:
        self.payload = payload


def leak_box() -> weakref.ref[Box]:
    """A recursive-closure cycle (the seed's shape) holding a box with a 2 MiB buffer."""
    box = Box(bytearray(BUFFER))
    stage_backward([box])
    return weakref.ref(box)


@pytest.mark.whyalive_skip  # watches what one collection frees
def test_young_collection_collects_a_fresh_cycle() -> None:
    """gc.collect(YOUNG) collects what the code just left, even right after a full collection
    (3.14.0-3.14.4's gc.collect(1) may then do nothing at all)."""
    gc.collect()
    ref = leak_box()
    assert ref() is not None
    gc.collect(YOUNG)
    assert ref() is None


@pytest.mark.whyalive_skip  # sets DEBUG_SAVEALL itself
def test_older_generation_frees_what_a_young_collection_saved() -> None:
    """What a young collection saved is freed by a collection of older_generation(0)."""
    start = len(gc.garbage)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        leak_box()
        gc.collect(0)
    finally:
        gc.set_debug(0)
    try:
        # Taken now: the collector cleared the weak references the box had when it was saved.
        (ref,) = [weakref.ref(o) for o in gc.garbage[start:] if type(o) is Box]
    finally:
        del gc.garbage[start:]
    assert ref() is not None  # still a cycle, now in an older generation
    gc.collect(older_generation(0))
    assert ref() is None


@pytest.mark.whyalive_skip  # freezes and unfreezes the heap itself
def test_unfrozen_garbage_waits_for_a_full_collection() -> None:
    """gc.freeze() hides from every collection what was tracked then; what is made while
    frozen is young and collected as usual. gc.unfreeze() gives the frozen objects back as
    the oldest (generation 2; on 3.14.0-3.14.4 the half of the old space the incremental
    scan has visited), where no young collection looks: garbage among them waits for a full
    collection. docs/architecture.md, "Per version"."""
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection in between: each step is one known collection
    try:
        gc.collect()
        before = leak_box()  # garbage already, that no collection has looked at yet
        gc.freeze()
        try:
            gc.collect()
            assert before() is not None  # frozen: not even a full collection looks at it
            made_while_frozen = leak_box()
            gc.collect(YOUNG)
            assert made_while_frozen() is None
        finally:
            gc.unfreeze()
        for _ in range(3):
            gc.collect(YOUNG)
            gc.collect(0)
        assert before() is not None
        gc.collect()
        assert before() is None
    finally:
        if enabled:
            gc.enable()


def test_automatic_collections_inside_a_check_keep_every_cycle() -> None:
    """With automatic collections running all through the block (increments on 3.14.0-3.14.4),
    every cycle is reported once and freed."""
    thresholds = gc.get_threshold()
    refs: list[weakref.ref[Box]] = []
    gc.set_threshold(50, *thresholds[1:])
    try:
        with check_leaks(on_leak="ignore") as check:
            for _ in range(20):
                refs.append(leak_box())
                junk = [[i] for i in range(200)]  # allocations that trigger collections
                del junk
    finally:
        gc.set_threshold(*thresholds)
    report = check.report
    assert report is not None
    assert report.cycle_count == 20
    assert report.total_bytes == 20 * BUFFER
    assert all(ref() is None for ref in refs)


def test_own_collection_inside_a_check_frees_and_is_still_reported() -> None:
    """The block's own gc.collect() frees what it would free without whyalive; the check
    still reports that cycle and the one made after it."""
    with check_leaks(on_leak="ignore") as check:
        first = leak_box()
        gc.collect()
        assert first() is None
        second = leak_box()
    report = check.report
    assert report is not None
    assert report.cycle_count == 2
    assert report.total_bytes == 2 * BUFFER
    assert second() is None


def test_patterns_are_named_on_this_collector() -> None:
    """Closure, traceback and parent-pointer cycles are named and cut as on any version."""

    def keep_exception() -> None:
        activations = bytearray(BUFFER)  # noqa: F841 - held by the frame the traceback keeps
        try:
            raise ValueError("boom")
        except ValueError as error:
            kept = error  # noqa: F841 - the frame now holds its own exception

    class Node:
        def __init__(self, parent: Node | None) -> None:
            self.parent = parent
            self.children: list[Node] = []
            if parent is not None:
                parent.children.append(self)

    def tree() -> None:
        root = Node(None)
        root.payload = bytearray(BUFFER)  # type: ignore[attr-defined]
        nodes = [root]
        for index in range(1, 3000):
            nodes.append(Node(nodes[(index - 1) // 3]))

    closure = find_leaks(leak_box).cycles[0]
    assert closure.pattern == "recursive-closure"
    assert closure.cut is not None
    assert "extract_tensors_with_grads" in closure.cut.description
    traceback = find_leaks(keep_exception).cycles[0]
    assert traceback.pattern == "exception-traceback"
    assert traceback.cut is not None
    assert "kept" in traceback.cut.description
    (structure,) = find_leaks(tree).cycles
    assert structure.pattern == "parent-child"
    assert structure.member_count >= 3000
    assert structure.cut is not None
    assert "`.parent`" in structure.cut.description


@pytest.mark.whyalive_skip  # a monitor runs its own callback and DEBUG_SAVEALL
def test_monitor_counts_a_cycle_left_just_before_stop() -> None:
    """stop() collects where the last steps' cycles are (generation 1, or the full collection
    on 3.14.0-3.14.4), so a cycle made after the last step is counted and freed."""
    with whyalive.monitor(log=False) as mon:
        ref = leak_box()
    (report,) = mon.summary_reports()
    assert [cycle.pattern for cycle in report.cycles] == ["recursive-closure"]
    assert report.cycles[0].total_bytes == BUFFER
    gc.collect()
    assert ref() is None


@pytest.mark.whyalive_skip  # a monitor runs its own callback and DEBUG_SAVEALL
@pytest.mark.parametrize("generation", [0, 1, 2])
def test_monitor_scheduled_collections_count_and_free_each_step(generation: int) -> None:
    """With automatic GC off, step(collect=True) on any schedule counts every leak and frees it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with whyalive.monitor(log=False, collect_generation=generation) as mon:
            refs = []
            for _ in range(5):
                refs.append(leak_box())
                mon.step(collect=True)
            assert all(ref() is None for ref in refs)
    finally:
        if was_enabled:
            gc.enable()
    (report,) = mon.summary_reports()
    assert report.cycles[0].occurrences == 5


@pytest.mark.whyalive_skip  # a monitor runs its own callback and DEBUG_SAVEALL
def test_monitor_without_threads_refuses_poll_interval_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where no thread can start (WebAssembly), poll_interval is one clear error and gc is
    left as it was (the conftest fixture checks callbacks and the freeze count)."""

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    monitor = whyalive.monitor(log=False, poll_interval=0.01)
    with pytest.raises(UsageError, match="poll_interval needs a helper thread"):
        monitor.start()
    assert not monitor.active


PLUGIN_SUITE = """
import pytest


def make_cycle():
    holder = [bytearray(2 << 20)]
    holder.append(holder)


@pytest.fixture
def leaky_fixture():
    make_cycle()
    return 1


def test_fixture_leak(leaky_fixture):
    pass


def test_call_leak():
    make_cycle()
"""


@pytest.mark.whyalive_skip  # runs the plugin itself, in this process
def test_plugin_blames_setup_and_call_on_this_collector(pytester: pytest.Pytester) -> None:
    """A fixture's cycle is taken at the end of setup by a young collection, so it is blamed
    on setup, not on the test's call."""
    pytester.makepyfile(test_suite=PLUGIN_SUITE)
    result = pytester.runpytest_inprocess("--whyalive", "-p", "no:randomly", "-q")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["Leak found in the setup (fixture leaky_fixture) of test_suite.py::test_fixture_leak:"]
    )
    result.stdout.fnmatch_lines(["Leak found in the call of test_suite.py::test_call_leak:"])
    assert "in the call of test_suite.py::test_fixture_leak" not in result.stdout.str()
