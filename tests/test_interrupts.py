"""The adversarial suite's interrupt tests: Ctrl-C at every line, and real SIGINTs.

``tests/interrupt_worker.py`` raises ``KeyboardInterrupt`` at each of the first four
occurrences of each line of whyalive that a check, a monitor step, the pytest plugin's
per-test path and ``explain()`` execute on the C core (a loop's later passes, a second
collection, the line a ``with`` runs again on its way out), at the first occurrence of
each line that only the Python twin executes (see ``OCCURRENCES``), and reports the harm
each left: gc state not the user's (flags, enabled, thresholds, callbacks, freeze count,
``gc.garbage`` identity and contents), a lock held, whyalive still holding a lease, saved
garbage or a freeze, the scenario's garbage not freed, the interrupt swallowed. No line may be
skipped: an occurrence the injection never reached fails the test too.

The suite on Python 3.11 runs every scenario so. On the other Pythons ``scripts/test.sh``
runs the check and monitor scenarios on the C core only (``WHYALIVE_TEST_INTERRUPT_SCENARIOS``;
``WHYALIVE_TEST_INTERRUPT_OCCURRENCES`` sets how many occurrences of each line are tried):
what differs there is the tracer and the bytecode.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from capabilities import needs_c, needs_subprocess
from whyalive.capture.interrupts import gc_callback, guard

WORKER = Path(__file__).with_name("interrupt_worker.py")

# Fewer would mean the scenario stopped exercising what it is for.
MIN_LINES = {"check": 900, "monitor": 900, "pytest": 1000, "explain": 300}
MIN_TWIN_LINES = {"check": 150, "monitor": 150, "pytest": 150, "explain": 60}
SCENARIOS = os.environ.get("WHYALIVE_TEST_INTERRUPT_SCENARIOS", "check,monitor,pytest,explain")
# The C core's runs try the first four occurrences of every line; the Python twin's, the
# first occurrence of each line the C core's run of the same scenario does not execute:
# the lines both run (capture, check, plugin, analysis: the same code, whichever core
# answers) are tried on the C core, and what only the twin runs is its graph algorithms,
# pure functions over arrays with no state to restore, and the branches taken for it (a
# release by collection). At four occurrences of every line, the twin's runs took 5 of the
# suite's 10 CPU minutes; at one, explain()'s alone took 100 s (each of its 530 runs
# builds the heap's graph in Python), against 12 s for the 98 lines that are its own.
OCCURRENCES = {
    "c": os.environ.get("WHYALIVE_TEST_INTERRUPT_OCCURRENCES", "4"),
    "python": os.environ.get("WHYALIVE_TEST_INTERRUPT_OCCURRENCES", "1"),
}


def _env(cwd: Path, core: str = "c", **extra: str) -> dict[str, str]:
    env = dict(os.environ, INTERRUPT_WORKDIR=str(cwd), INTERRUPT_OCCURRENCES=OCCURRENCES[core])
    env.update(extra)
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def _run_worker(core: str, *args: str, cwd: Path, **extra: str) -> dict[str, object]:
    env = _env(cwd, core, **extra)
    if core == "python":
        env["WHYALIVE_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, str(WORKER), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=1800,  # a loaded machine: minutes for the pure-Python core
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.get("core", core) == core
    return result


# The [python] runs use the Python graph core with the compiled whyalive.capture._interrupts (built
# with the C core): without it, Python cannot protect a callback's first bytecode.
@needs_c
@needs_subprocess
@pytest.mark.whyalive_skip  # the worker checks its own gc state; this process only waits
@pytest.mark.parametrize("core", ["c", "python"])
@pytest.mark.parametrize("scenario", SCENARIOS.split(","))
def test_keyboard_interrupt_at_every_line_leaves_no_harm(
    scenario: str, core: str, tmp_path: Path
) -> None:
    args = [scenario, "8000"] if scenario == "pytest" else [scenario]
    extra: dict[str, str] = {}
    if core == "python":
        executed = _run_worker("c", *args, cwd=tmp_path, INTERRUPT_LINES_ONLY="1")
        listed = tmp_path / "tried_on_c.json"
        listed.write_text(json.dumps(executed))
        extra["INTERRUPT_TRIED_ELSEWHERE"] = str(listed)
    result = _run_worker(core, *args, cwd=tmp_path, **extra)
    assert result["harmful"] == {}
    assert result["unreached"] == []
    lines, trials, elsewhere = result["lines"], result["trials"], result["tried elsewhere"]
    assert isinstance(lines, int)
    assert isinstance(trials, int)
    assert isinstance(elsewhere, int)
    assert lines >= MIN_LINES[scenario]
    occurrences = int(OCCURRENCES[core])
    assert result["occurrences"] == occurrences
    own = lines - elsewhere  # the lines this run tries
    if core == "python":
        # Most lines are the C core's too, but the twin's algorithms are its own.
        assert elsewhere >= lines // 2
        assert own >= MIN_TWIN_LINES[scenario]
    else:
        assert elsewhere == 0
    # Lines run more than once (loops, the second collection, the line of a `with` on its
    # way out) are tried again at their later occurrences.
    assert trials > own if occurrences > 1 else trials == own


# What the Python fallbacks cannot protect, as capture/interrupts.py says: their own steps
# (a `try` line, a `finally` before the release), and an interrupt inside a gc callback,
# which CPython prints and drops (the rescue still runs: nothing else is harmed).
_FALLBACK = "capture/interrupts.py:"
_DROPPED = ["the interrupt was not raised"]


@needs_subprocess
@pytest.mark.whyalive_skip
def test_without_the_compiled_module_harm_is_only_where_documented(tmp_path: Path) -> None:
    """A machine without a C compiler runs the Python fallbacks of whyalive.capture.interrupts
    (and the Python graph core): every line of a check is tried (the first time it runs)."""
    done = subprocess.run(
        [sys.executable, str(WORKER), "check"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path, INTERRUPT_WITHOUT_COMPILED="1", INTERRUPT_OCCURRENCES="1"),
        timeout=1800,  # a loaded machine: minutes for the pure-Python core
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["unreached"] == []
    assert result["lines"] >= MIN_LINES["check"]
    harmful = result["harmful"]
    undocumented = {
        where: found
        for where, found in harmful.items()
        if found != _DROPPED and not where.startswith(_FALLBACK)
    }
    assert undocumented == {}
    # The fallbacks' own steps are where the compiled module makes the difference.
    assert any(where.startswith(_FALLBACK) for where in harmful), harmful


@needs_c
@needs_subprocess
@pytest.mark.whyalive_skip
@pytest.mark.parametrize("target", ["check", "monitor"])
def test_real_sigint_during_a_300k_object_closing_collection(target: str, tmp_path: Path) -> None:
    """Ctrl-C while the collector works is raised once the collection returns, and the
    300,000 objects are freed; no gc setting stays changed."""
    result = _run_worker("c", f"sigint-{target}", "300000", cwd=tmp_path)
    trials = result["trials"]
    assert isinstance(trials, list)
    for trial in trials:
        assert trial["raised at"] != "not raised", trial
        assert trial["harm"] == [], trial
    in_collection = [t for t in trials if str(t["raised at"]).split(":")[0] in _COLLECTING]
    assert in_collection, trials


_COLLECTING = {"collect", "_free_collect", "_saving_collect"}


class Exit:
    """What a guard does for __exit__: the rescue runs whatever line the body stopped at."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def __enter__(self) -> Exit:
        return self

    def _exit(self, *exc: object) -> None:
        self.log.append("body")
        raise KeyboardInterrupt

    def _rescue(self, *exc: object) -> None:
        self.log.append("rescue")

    __exit__ = guard(_exit, _rescue)


def test_guard_runs_the_rescue_and_re_raises() -> None:
    manager = Exit()
    with pytest.raises(KeyboardInterrupt), manager:
        pass
    assert manager.log == ["body", "rescue"]
    assert Exit.__exit__.__wrapped__ is Exit._exit


@needs_c
@pytest.mark.whyalive_skip
def test_an_interrupt_in_a_gc_callback_is_raised_after_the_collection() -> None:
    """CPython drops what a callback raises; this one comes back where the collection was,
    after every other callback of the collection ran."""
    seen: list[tuple[str, str]] = []

    def body(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            raise KeyboardInterrupt("during the collection")

    def rescue(phase: str, info: dict[str, int]) -> None:
        seen.append(("rescue", phase))

    def later(phase: str, info: dict[str, int]) -> None:
        seen.append(("later", phase))

    callback = gc_callback(body, rescue)
    gc.callbacks.extend([callback, later])
    try:
        with pytest.raises(KeyboardInterrupt, match="during the collection"):
            gc.collect()
    finally:
        gc.callbacks.remove(callback)
        gc.callbacks.remove(later)
    assert seen == [("later", "start"), ("rescue", "stop"), ("later", "stop")]


@needs_c
def test_an_interrupt_in_a_gc_callback_holds_nothing_of_the_collection() -> None:
    """The kept exception carries no traceback into the callback (it held ``info``)."""
    infos: list[weakref.ref[object]] = []

    class Info(dict):  # type: ignore[type-arg]
        pass

    def body(phase: str, info: dict[str, int]) -> None:
        raise KeyboardInterrupt

    callback = gc_callback(body, lambda phase, info: None)
    held = [Info(collected=0, uncollectable=0, generation=0)]
    infos.append(weakref.ref(held[0]))
    callback("stop", held[0])  # rides on info: raised once info is freed
    with pytest.raises(KeyboardInterrupt):
        _free(held)
    assert infos[0]() is None


def _free(held: list[object]) -> None:
    held.clear()
