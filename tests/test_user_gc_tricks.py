"""User code that plays with the collector inside a check, the pytest plugin or ``run``.

A fixture that saves and slice-restores ``gc.callbacks``, ``gc.callbacks.clear()``,
rebinding ``gc.callbacks`` or ``gc.garbage``, a callback ahead of whyalive's that
appends a live object to ``gc.garbage``: the block ends normally with the user's
state, the leak is still reported and freed, and nothing the user put in
``gc.garbage`` is touched. On both graph cores (the ``core`` fixture).
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from capabilities import needs_subprocess
from test_gc_safety import AppendsLive
from whyalive import check_leaks
from whyalive.graph.heap import user_freeze_count


class Payload:
    """A heavy cycle: it refers to itself and holds 2 MiB."""

    def __init__(self) -> None:
        self.me = self
        self.data = bytearray(2 << 20)


def _leak() -> weakref.ref[Payload]:
    return weakref.ref(Payload())


@contextmanager
def _users_callbacks_back() -> Iterator[list[object]]:
    """Whatever the test does to gc.callbacks, the suite's own come back afterwards."""
    module = sys.modules["gc"]
    original = module.callbacks
    saved = list(original)
    try:
        yield saved
    finally:
        module.callbacks = original
        original[:] = saved


def _slice_restore() -> None:
    gc.callbacks[:] = _SAVED_BEFORE


_SAVED_BEFORE: list[object] = []


def _clear() -> None:
    gc.callbacks.clear()


def _rebind() -> None:
    gc.callbacks = []  # type: ignore[misc]


EDITS: dict[str, Callable[[], None]] = {
    "slice-restored": _slice_restore,
    "cleared": _clear,
    "rebound": _rebind,
}


@pytest.mark.whyalive_skip  # the test removes the plugin's own callback on purpose
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_callbacks_edited_inside_the_block(edit: str, core: str) -> None:
    debug = gc.get_debug()
    with _users_callbacks_back() as saved:
        _SAVED_BEFORE[:] = saved
        with check_leaks(on_leak="ignore") as check:
            before = _leak()
            EDITS[edit]()
            after = _leak()
        assert gc.get_debug() == debug
    assert check.report is not None
    assert check.report.cycle_count == 2
    assert before() is None
    assert after() is None
    assert user_freeze_count() == 0


@pytest.mark.whyalive_skip  # its callback touches gc.garbage on purpose
def test_a_callback_ahead_of_ours_that_appends_a_live_list(core: str) -> None:
    """whyalive takes what the collection saved, by position before the user's stop runs."""
    mine = [1, 2, 3]

    def appends(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            gc.garbage.append(mine)

    start = len(gc.garbage)
    try:
        with check_leaks(on_leak="ignore") as check:
            gc.callbacks.insert(0, appends)
            leaked = _leak()
            gc.collect()
            gc.callbacks.remove(appends)
        assert check.report is not None
        assert check.report.cycle_count == 1
        assert leaked() is None
        assert all(item is mine for item in gc.garbage[start:])
        assert mine == [1, 2, 3]
    finally:
        if appends in gc.callbacks:
            gc.callbacks.remove(appends)
        del gc.garbage[start:]


def _leak_with_a_finalizer_and_a_freed_weakref(
    mine: list[object], registry: weakref.WeakValueDictionary[str, Payload]
) -> weakref.ref[Payload]:
    """A collection whose "collected" count also holds a weakref freed after its callback."""
    AppendsLive(mine)
    payload = Payload()
    registry["payload"] = payload
    return weakref.ref(payload)


@pytest.mark.whyalive_skip  # its finalizer touches gc.garbage on purpose
@pytest.mark.parametrize("integration", ["check", "monitor"])
def test_a_finalizer_appending_a_live_list_in_a_collection_that_frees_a_weakref(
    integration: str, core: str
) -> None:
    """The collector's "collected" count is no length of what it saved: identity decides."""
    from whyalive.monitor import GcMonitor

    mine: list[object] = ["the user's live object"]
    registry: weakref.WeakValueDictionary[str, Payload] = weakref.WeakValueDictionary()
    start = len(gc.garbage)
    try:
        if integration == "check":
            with check_leaks(on_leak="ignore") as check:
                leaked = _leak_with_a_finalizer_and_a_freed_weakref(mine, registry)
                gc.collect()
            assert check.report is not None
            assert check.report.cycle_count >= 1
        else:
            with GcMonitor(log=False) as monitor:
                leaked = _leak_with_a_finalizer_and_a_freed_weakref(mine, registry)
                gc.collect()
                monitor.step()
        assert mine == ["the user's live object"]
        assert len(gc.garbage) == start + 1
        assert gc.garbage[start] is mine
        gc.collect()
        assert leaked() is None
        assert len(registry) == 0
    finally:
        del gc.garbage[start:]


@pytest.mark.whyalive_skip
@pytest.mark.parametrize("users_saveall", [False, True])
def test_gc_garbage_rebound_inside_the_block(users_saveall: bool, core: str) -> None:
    """The collector keeps using the list gc.garbage named first; so does whyalive (with
    the user's own DEBUG_SAVEALL, their garbage goes back there, not to the new name)."""
    real = gc.garbage
    contents = list(real)
    stand_in: list[object] = []
    if users_saveall:
        gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with check_leaks(on_leak="ignore") as check:
            gc.garbage = stand_in  # type: ignore[misc]
            leaked = _leak()
            gc.collect()
    finally:
        gc.garbage = real  # type: ignore[misc]
        gc.set_debug(0)
    assert check.report is not None
    assert check.report.cycle_count == 1
    assert stand_in == []
    saved = real[len(contents) :]
    assert all(a is b for a, b in zip(real, contents, strict=False))
    if users_saveall:
        assert any(type(item) is Payload for item in saved)
        for item in saved:
            if type(item) is Payload:
                item.me = None  # type: ignore[assignment]
        del real[len(contents) :]
    else:
        assert saved == []
    gc.collect()
    assert leaked() is None


@pytest.mark.whyalive_skip
def test_set_debug_inside_the_block_is_kept(core: str) -> None:
    """The user's own DEBUG_SAVEALL, turned on inside the block, stays on afterwards."""
    start = len(gc.garbage)
    try:
        with check_leaks(on_leak="ignore") as check:
            gc.set_debug(gc.DEBUG_SAVEALL)
            leaked = _leak()
        assert gc.get_debug() == gc.DEBUG_SAVEALL
        assert check.report is not None
        assert check.report.cycle_count == 1
        # Their SAVEALL: the garbage goes where they asked it to, not freed by whyalive.
        assert any(type(item) is Payload for item in gc.garbage[start:])
    finally:
        gc.set_debug(0)
        for item in gc.garbage[start:]:
            if type(item) is Payload:
                item.me = None  # type: ignore[assignment]
        del gc.garbage[start:]
        gc.collect()
    assert leaked() is None


PLUGIN_TEST = """
import gc
import pytest


class Payload:
    def __init__(self):
        self.me = self
        self.data = bytearray(2 << 20)


@pytest.fixture
def restores_callbacks():
    saved = gc.callbacks[:]
    yield
    gc.callbacks[:] = saved


def test_leaks(restores_callbacks):
    Payload()
    gc.callbacks.clear()
"""


@needs_subprocess
def test_plugin_with_a_fixture_that_restores_callbacks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tricks=PLUGIN_TEST)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*whyalive*leak*"])
    result.stdout.no_fnmatch_line("*ValueError*")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


@needs_subprocess
def test_run_with_a_script_that_clears_the_callbacks(tmp_path: Path) -> None:
    script = tmp_path / "clears.py"
    script.write_text(
        textwrap.dedent(
            """
            import gc

            class Payload:
                def __init__(self):
                    self.me = self
                    self.data = bytearray(2 << 20)

            Payload()
            gc.callbacks.clear()
            Payload()
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "whyalive", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "2 reference cycles" in done.stderr or "2 cycles" in done.stderr, done.stderr
