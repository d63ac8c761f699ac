"""Raise KeyboardInterrupt at every line of whyalive that a scenario runs; run by
tests/test_interrupts.py, one process per scenario and graph core.

``python tests/interrupt_worker.py SCENARIO`` (``WHYALIVE_PURE_PYTHON=1`` for the
Python twin, ``INTERRUPT_WITHOUT_COMPILED=1`` for the Python fallbacks of
``whyalive.capture.interrupts``, ``INTERRUPT_OCCURRENCES=N`` to try the first N
occurrences of each line, 4 by default) prints one JSON object: the lines and the
(line, occurrence) pairs tried, the harm found after each
(gc state not the user's, a lock held, whyalive still holding or saving something,
the scenario's garbage not freed, the interrupt swallowed), lines that a run never
reached, and the seconds spent. ``INTERRUPT_LINES_ONLY=1`` prints the executed lines
instead (``{"executed": [[file, line], ...]}``) and tries none;
``INTERRUPT_TRIED_ELSEWHERE=FILE`` (such a list) leaves those lines untried.

A run first goes through the scenario twice untraced (imports, caches), then once
with a tracer that counts how many times each ``(file, line)`` of ``src/whyalive``
starts. Then, for each of those lines and each of its first four occurrences, the
scenario runs again with a tracer that raises ``KeyboardInterrupt`` at that occurrence
(the trace function is then unset, so one interrupt per run): a loop's later passes,
the second collection of a scenario and the line a ``with`` statement runs again on its
way out are tried as well as the first time a line runs. Collections are kept explicit
(a high threshold) so every run executes the same lines.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType, FunctionType
from typing import Any

if os.environ.get("INTERRUPT_WITHOUT_COMPILED") == "1":
    # What a machine without a C compiler runs: the Python fallbacks of capture/interrupts.py.
    sys.modules["whyalive.capture._interrupts"] = None  # type: ignore[assignment]

import whyalive
from whyalive import check_leaks, explain
from whyalive.capture.gcstate import OWNER
from whyalive.graph.heap import user_freeze_count
from whyalive.monitor import GcMonitor

PACKAGE = os.path.dirname(os.path.abspath(whyalive.__file__)) + os.sep
Line = tuple[str, int]
Trial = tuple[Line, int]  # a line and which of its occurrences (1 for the first)


class Payload:
    """A cycle member holding a heavy buffer; weakly referenced to prove it is freed."""

    def __init__(self) -> None:
        self.me = self
        self.data = bytearray(2 << 20)


MADE: list[weakref.ref[Payload]] = []


def leak() -> None:
    MADE.append(weakref.ref(Payload()))


def scenario_check() -> None:
    """A check whose block leaks and runs its own collection (analysed inside it)."""
    with check_leaks(on_leak="ignore"):
        leak()
        gc.collect()
        leak()


def scenario_monitor() -> None:
    """A monitor over two steps, one with the scheduled collection."""
    monitor = GcMonitor(log=False)
    MONITORS[:] = [monitor]
    with monitor:
        leak()
        monitor.step(collect=True)
        leak()
        gc.collect()
        monitor.step()


HELD: dict[str, object] = {}


def scenario_explain() -> None:
    """explain() of a heavy object that a module-level dict keeps alive."""
    payload = Payload()
    payload.me = None  # type: ignore[assignment]
    MADE.append(weakref.ref(payload))
    HELD["payload"] = payload
    del payload
    try:
        explain(HELD["payload"])
    finally:
        HELD.clear()


TEST_FILE = """
import gc
import pytest
import interrupt_worker


@pytest.fixture
def resource():
    yield [object()]


@pytest.mark.parametrize("run", range({runs}))
def test_leaks(resource, run):
    interrupt_worker.leak()
    gc.collect()
"""


class PytestScenario:
    """The plugin's per-test path: each run is the next copy of one parametrized test."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.result: dict[str, Any] = {}

    def pytest_runtestloop(self, session: Any) -> bool:
        self.items = list(session.items)
        self.result = drive(self.run_once)
        return True

    def run_once(self) -> None:
        item, following = self.items[0], self.items[1]
        del self.items[0]
        try:
            item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
        finally:
            # pytest ends a session on Ctrl-C; to go on, forget the interrupted test's state.
            with contextlib.suppress(BaseException):  # the next run needs a clean setup
                item.session._setupstate.teardown_exact(following)
            for fixturedefs in item._fixtureinfo.name2fixturedefs.values():
                for fixturedef in fixturedefs:
                    if fixturedef.scope == "function":
                        fixturedef._finalizers.clear()
                        fixturedef.cached_result = None

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Each copy fails on its leak; nothing to print."""


def pytest_scenario(runs: int) -> dict[str, Any]:
    import pytest

    directory = Path(os.environ.get("INTERRUPT_WORKDIR", "."))
    (directory / "test_injected.py").write_text(TEST_FILE.format(runs=runs))
    sys.path.insert(0, str(Path(__file__).parent))
    plugin = PytestScenario()
    pytest.main(
        [
            str(directory / "test_injected.py"),
            "--whyalive",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--tb=no",
            "-W",
            "ignore::pytest.PytestUnraisableExceptionWarning",
        ],
        plugins=[plugin],
    )
    return plugin.result


SCENARIOS: dict[str, Callable[[], None]] = {
    "check": scenario_check,
    "monitor": scenario_monitor,
    "explain": scenario_explain,
}


# -- tracing -----------------------------------------------------------------------------


def ours(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(PACKAGE)


Codes = dict[int, tuple[Any, dict[int, int]]]


def package_codes() -> Codes:
    """Every code object of the package with an empty count of its executed lines, made
    before a run: logging then allocates no tracked object while the run goes on (a line
    and its count are ints), so a heap snapshot taken by the run (explain) sees the same
    heap as the injection runs will."""
    codes: Codes = {}
    stack = [
        obj.__code__
        for obj in gc.get_objects()
        if type(obj) is FunctionType and obj.__code__.co_filename.startswith(PACKAGE)
    ]
    while stack:
        code = stack.pop()
        if id(code) not in codes:
            codes[id(code)] = (code, {})
            stack.extend(const for const in code.co_consts if type(const) is CodeType)
    return codes


def log_line(codes: Codes, code: Any, line: int) -> None:
    entry = codes.get(id(code))
    if entry is None:  # made at run time: logged all the same
        entry = codes[id(code)] = (code, {})
    entry[1][line] = entry[1].get(line, 0) + 1


def injected(target: Line, occurrence: int) -> KeyboardInterrupt:
    return KeyboardInterrupt(f"injected at {target[0]}:{target[1]} (occurrence {occurrence})")


class Tracer:
    """What both tracers share: the code objects each executed line belongs to, and how
    many times each line started."""

    def __init__(self) -> None:
        self.codes_of: dict[Line, list[Any]] = {}
        self.occurrences: dict[Line, int] = {}

    def _lines(self, codes: Codes) -> list[Line]:
        for code, found in codes.values():
            for line, count in found.items():
                key = (code.co_filename, line)
                self.codes_of.setdefault(key, []).append(code)
                self.occurrences[key] = self.occurrences.get(key, 0) + count
        return sorted(self.codes_of)

    def trials(self, most: int) -> list[Trial]:
        """The first ``most`` occurrences of every executed line, in line order."""
        return [
            (line, k)
            for line in sorted(self.codes_of)
            for k in range(1, min(self.occurrences[line], most) + 1)
        ]


class SetTrace(Tracer):
    """Line events through ``sys.settrace`` (3.10, 3.11). A trace function that raises is
    unset by CPython: one interrupt per run."""

    def executed(self, run: Callable[[], None]) -> list[Line]:
        codes = package_codes()

        def local(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                log_line(codes, frame.f_code, frame.f_lineno)
            return local

        self._run(run, lambda frame, event, arg: local if ours(frame) else None)
        return self._lines(codes)

    def inject(self, trial: Trial, run: Callable[[], None], everywhere: bool) -> tuple[bool, bool]:
        """(fired, raised): whether the run reached the trial's occurrence of its line and
        raised out of it."""
        target, occurrence = trial
        fired = False
        seen = 0

        def local(frame: FrameType, event: str, arg: object) -> Any:
            nonlocal fired, seen
            if event == "line" and (frame.f_code.co_filename, frame.f_lineno) == target:
                seen += 1
                if seen == occurrence:
                    fired = True
                    raise injected(target, occurrence)
            return local

        # Only the target's code objects are traced (one lookup per call elsewhere).
        wanted = dict.fromkeys(self.codes_of[target], local)
        try:
            self._run(
                run,
                (lambda frame, event, arg: local if ours(frame) else None)
                if everywhere
                else (lambda frame, event, arg: wanted.get(frame.f_code)),
            )
        except KeyboardInterrupt:
            return fired, True
        return fired, False

    @staticmethod
    def _run(run: Callable[[], None], tracing: Callable[[FrameType, str, object], Any]) -> None:
        sys.settrace(tracing)
        try:
            run()
        finally:
            sys.settrace(None)


class Monitoring(Tracer):
    """Line events through ``sys.monitoring`` (3.12+), only where they are wanted:
    ``sys.settrace`` there re-instruments every code object each time it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 - 3.12+ only
        self.tool = self.monitoring.DEBUGGER_ID
        self.monitoring.use_tool_id(self.tool, "interrupt_worker")
        self.handler: Callable[[Any, int], Any] = lambda code, line: None
        self.monitoring.register_callback(
            self.tool, self.monitoring.events.LINE, lambda code, line: self.handler(code, line)
        )
        self.codes_of: dict[Line, list[Any]] = {}

    def executed(self, run: Callable[[], None]) -> list[Line]:
        codes = package_codes()
        disable = self.monitoring.DISABLE

        def handler(code: Any, line: int) -> Any:
            if not code.co_filename.startswith(PACKAGE):
                return disable
            log_line(codes, code, line)
            return None

        self.handler = handler
        self.monitoring.set_events(self.tool, self.monitoring.events.LINE)
        try:
            run()
        finally:
            self.monitoring.set_events(self.tool, 0)
            self.monitoring.restart_events()
        return self._lines(codes)

    def inject(self, trial: Trial, run: Callable[[], None], everywhere: bool) -> tuple[bool, bool]:
        """(fired, raised): whether the run reached the trial's occurrence of its line and
        raised out of it."""
        target, occurrence = trial
        fired = False
        seen = 0
        line_events = self.monitoring.events.LINE
        codes = self.codes_of[target]

        def handler(code: Any, line: int) -> Any:
            nonlocal fired, seen
            if fired or (code.co_filename, line) != target:
                return None
            seen += 1
            if seen < occurrence:
                return None
            fired = True
            self._stop(codes)  # one interrupt per run
            raise injected(target, occurrence)

        self.handler = handler
        if everywhere:
            self.monitoring.set_events(self.tool, line_events)
        for code in codes:
            self.monitoring.set_local_events(self.tool, code, line_events)
        try:
            run()
        except KeyboardInterrupt:
            return fired, True
        finally:
            self._stop(codes)
        return fired, False

    def _stop(self, codes: list[Any]) -> None:
        self.monitoring.set_events(self.tool, 0)
        for code in codes:
            self.monitoring.set_local_events(self.tool, code, 0)


# -- harm --------------------------------------------------------------------------------


def gc_state() -> tuple[object, ...]:
    return (
        gc.get_debug(),
        gc.isenabled(),
        gc.get_threshold(),
        [id(callback) for callback in gc.callbacks],
        user_freeze_count(),
        id(gc.garbage),
        [id(item) for item in gc.garbage],
    )


def locks_held() -> list[str]:
    # One thread runs the scenarios: a lock still held is held by this one.
    held = ["the owner's lock"] if OWNER._lock._is_owned() else []  # type: ignore[attr-defined]
    held += [f"{monitor!r}'s lock" for monitor in MONITORS if monitor._lock.locked()]
    return held


MONITORS: list[GcMonitor] = []


def owner_holds() -> list[str]:
    held = []
    if OWNER._leases:
        held.append(f"{len(OWNER._leases)} lease(s) open")
    if OWNER._saved:
        held.append(f"{len(OWNER._saved)} saved collection(s)")
    if OWNER.freeze.holders or OWNER.freeze.frozen:
        held.append("a freeze hold")
    if OWNER._capturing or OWNER._freeing:
        held.append("a thread marked capturing/freeing")
    return held


def harm(before: tuple[object, ...], raised: bool) -> list[str]:
    found = []
    if not raised:
        found.append("the interrupt was not raised")
    if any(ref() is not None for ref in MADE):
        gc.collect()  # what the user's next collection does: frees what whyalive let go
    after = gc_state()
    names = (
        "debug flags",
        "enabled",
        "thresholds",
        "callbacks",
        "freeze count",
        "gc.garbage identity",
        "gc.garbage contents",
    )
    found += [f"{name} changed" for name, a, b in zip(names, before, after, strict=True) if a != b]
    found += [f"{lock} is held" for lock in locks_held()]
    found += owner_holds()
    alive = sum(1 for ref in MADE if ref() is not None)
    if alive:
        found.append(f"{alive} object(s) of the scenario still alive")
    MADE.clear()
    return found


def repair(before: tuple[object, ...]) -> None:
    """Put the process back after a harmful run, so the next line is tried cleanly."""
    for lease in list(OWNER._leases):
        OWNER.close_lease(lease)
    for holder in OWNER.freeze.holders:
        OWNER.freeze.drop(holder)
    OWNER._saved.clear()
    OWNER._capturing.clear()
    OWNER._freeing.clear()
    keep = set(before[3])  # type: ignore[arg-type]
    gc.callbacks[:] = [c for c in gc.callbacks if id(c) in keep]
    gc.set_debug(before[0])  # type: ignore[arg-type]
    kept = set(before[6])  # type: ignore[arg-type]
    gc.garbage[:] = [g for g in gc.garbage if id(g) in kept]
    if user_freeze_count() and not before[4]:
        gc.unfreeze()
    # A lock left held would be found again after every later line.
    while OWNER._lock._is_owned():  # type: ignore[attr-defined]
        OWNER._lock.release()
    for monitor in MONITORS:
        if monitor._lock.locked():
            monitor._lock.release()
    gc.collect()


# How many occurrences of each line are tried: 4 catch a `with` on its way out and a loop's
# later passes at a bounded cost; 1 is a cheaper pass over every line, for the legs where a
# run costs more (tests/test_interrupts.py says which).
OCCURRENCES = int(os.environ.get("INTERRUPT_OCCURRENCES", "4"))


def tried_elsewhere() -> set[Line]:
    """The lines another run tries (``INTERRUPT_TRIED_ELSEWHERE``: the C core's run of the
    same scenario, for the Python twin's run)."""
    listed = os.environ.get("INTERRUPT_TRIED_ELSEWHERE")
    if not listed:
        return set()
    return {(path, line) for path, line in json.loads(Path(listed).read_text())["executed"]}


def drive(run: Callable[[], None], occurrences: int = OCCURRENCES) -> dict[str, Any]:
    """Every line of one scenario (but those tried elsewhere), interrupted in turn at each
    of its first ``occurrences`` occurrences; what each run left behind."""
    thresholds = gc.get_threshold()
    gc.set_threshold(1_000_000, 1_000, 1_000)  # only the scenario's own collections
    try:
        for _ in range(2):
            run()
        MADE.clear()
        gc.collect()
        tracer = Monitoring() if sys.version_info >= (3, 12) else SetTrace()
        lines = tracer.executed(run)
        if os.environ.get("INTERRUPT_LINES_ONLY") == "1":
            return {"executed": lines}
        elsewhere = tried_elsewhere()
        trials = [trial for trial in tracer.trials(occurrences) if trial[0] not in elsewhere]
        MADE.clear()
        gc.collect()
        before = gc_state()
        started = time.perf_counter()
        harmful: dict[str, list[str]] = {}
        unreached: list[str] = []
        for trial in trials:
            # Events only in the target's code run at full speed; a line that depends on
            # what the full tracer allocates (the heap snapshot of explain() sees its
            # objects) is tried again with events everywhere.
            for everywhere in (False, True):
                fired, raised = tracer.inject(trial, run, everywhere)
                if fired:
                    break
                MADE.clear()
            (path, line), occurrence = trial
            where = f"{os.path.relpath(path, PACKAGE)}:{line}#{occurrence}"
            if not fired:
                unreached.append(where)
                MADE.clear()
                continue
            found = harm(before, raised)
            if found:
                harmful[where] = found
                repair(before)
        return {
            "lines": len(lines),
            "tried elsewhere": len(elsewhere.intersection(lines)),
            "trials": len(trials),
            "occurrences": occurrences,
            "harmful": harmful,
            "unreached": unreached,
            "seconds": round(time.perf_counter() - started, 2),
        }
    finally:
        gc.set_threshold(*thresholds)


# -- real signals ---------------------------------------------------------------------------


class Link:
    __slots__ = ("__weakref__", "next")


def ring(size: int) -> weakref.ref[Link]:
    first = last = Link()
    for _ in range(size - 1):
        last.next = last = Link()  # type: ignore[attr-defined]
    last.next = first  # type: ignore[attr-defined]
    return weakref.ref(first)


def sigint_trials(target: str, size: int) -> dict[str, Any]:
    """A real SIGINT (from another process) at increasing delays after the block ends,
    so that some land inside the closing collection of ``size`` objects."""
    import signal
    import subprocess

    # A shell that started us in the background may have left SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    outcomes = []
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02, 0.04):
        before = gc_state()
        where = "not raised"
        killer = None
        try:
            if target == "check":
                with check_leaks(on_leak="ignore"):
                    MADE.append(ring(size))  # type: ignore[arg-type]
                    killer = subprocess.Popen(
                        ["sh", "-c", f"sleep {delay}; kill -INT {os.getpid()}"]
                    )
            else:
                with GcMonitor(log=False) as monitor:
                    MADE.append(ring(size))  # type: ignore[arg-type]
                    killer = subprocess.Popen(
                        ["sh", "-c", f"sleep {delay}; kill -INT {os.getpid()}"]
                    )
                    monitor.step(collect=True)
            killer.wait()
            time.sleep(0.2)  # the signal arrives after the block: raised here
        except KeyboardInterrupt as error:
            last = error.__traceback__
            while last is not None and last.tb_next is not None:
                last = last.tb_next
            frame = last.tb_frame if last is not None else None
            where = f"{frame.f_code.co_name}:{last.tb_lineno}" if frame and last else "?"
            if killer is not None:
                killer.wait()
        outcomes.append(
            {"delay": delay, "raised at": where, "harm": harm(before, where != "not raised")}
        )
    return {"trials": outcomes}


def main() -> None:
    name = sys.argv[1]
    if name == "pytest":
        result = pytest_scenario(int(sys.argv[2]))
    elif name.startswith("sigint-"):
        result = sigint_trials(name.removeprefix("sigint-"), int(sys.argv[2]))
    else:
        result = drive(SCENARIOS[name])
    result["core"] = whyalive.graph.core.IMPLEMENTATION
    result["python"] = sys.version.split()[0]
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
