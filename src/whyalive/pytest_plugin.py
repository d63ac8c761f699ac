"""pytest plugin: fail the test that leaves heavy objects in cyclic garbage, and say why.

Inert unless asked (STYLE pitfall 2): without ``--whyalive`` (ini ``whyalive = true``)
or a ``whyalive`` marker, every hook returns at once and the garbage collector is
never touched; the analysis modules are imported only when a test is checked.

A checked test is watched from the start of its setup to the end of its teardown
by one bracket: the baseline heap is frozen once (so each collection traverses
only what the test created) and ``DEBUG_SAVEALL`` stays on. Checkpoints between
the segments (each fixture's setup, the call, each fixture's finalizer) take
what the segment left as garbage, so a leak is blamed on the phase and fixture
that made it, and garbage from an earlier test was frozen before this one began.
Debug flags, thresholds, callbacks and the freeze count stay constant inside the
bracket, so a suite's own "gc state unchanged" fixture sees nothing move.
"""

from __future__ import annotations

import dataclasses
import gc
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from whyalive.analysis import AnalysisOptions
    from whyalive.gcstate import Lease
    from whyalive.report import Report
    from whyalive.verdict import ThirdParty

_THIRD_PARTY_CHOICES = ("fail", "report", "ignore")

HELP_ENABLE = "check every test for heavy objects left in cyclic garbage (whyalive)"
HELP_MIN_BYTES = "report only cycles holding at least this many bytes (default 0)"
HELP_ON_LEAK = "what a leaking test does: 'fail' (default) or 'warn'"
HELP_REPORT = "write a JSON (and HTML, when available) report per leaking test to this directory"
HELP_BASELINE = "fail only on cycle signatures not in this baseline file (JSON)"
HELP_UPDATE_BASELINE = (
    "write every cycle signature found, with its tests and bytes, to the baseline file "
    "(--whyalive-baseline, default .whyalive-baseline.json in the rootdir); leaks do not fail"
)
HELP_ALLOW = "a cycle signature or pattern name never to report (repeat; ini: one per line)"
HELP_THIRD_PARTY = (
    "cycles made entirely inside installed packages (torch, the standard library): "
    "'fail' the test, 'report' them in the summary (default) or 'ignore' them"
)

MARKER_CHECK = (
    "whyalive(min_bytes=0, allow=[], on_leak='fail'): check this test for heavy objects "
    "left in cyclic garbage, with these settings"
)
MARKER_SKIP = "whyalive_skip: never check this test with whyalive"

_PROPERTY = "whyalive"


@dataclass(frozen=True)
class TestOptions:
    """The settings one test is checked with (command line, ini, then its marker)."""

    min_bytes: int = 0
    allow: tuple[str, ...] = ()
    on_leak: str = "fail"
    third_party: ThirdParty = "report"
    user_root: str | None = None


@dataclass
class Leak:
    """A leak found in one segment of one test."""

    phase: str
    report: Report


@dataclass
class TestWatch:
    """The bracket around one test: segments, their labels, and the leaks found."""

    options: TestOptions
    where: str
    label: str = "setup"
    leaks: list[Leak] = field(default_factory=list)
    reported: int = 0
    _lease: Lease | None = None
    _holds_freeze: bool = False

    def begin(self) -> None:
        """Open the bracket: earlier young garbage is freed as usual, later garbage is saved.

        What the test's own collections (and automatic ones) save is analysed and
        freed before they return, so ``gc.collect()`` in a test frees what it would
        free without whyalive.
        """
        from whyalive.gcstate import OWNER
        from whyalive.pipeline import prepare_in_collector

        prepare_in_collector()
        gc.collect(1)
        self._lease = OWNER.open_lease(analyze_now=self._analyze)

    def _analyze(self, objects: list[object]) -> Leak | None:
        """The leak in what one collection saved (inside that collection: no gc, no import)."""
        from whyalive.pipeline import analyze

        if not objects:
            return None
        report = analyze(objects, self._analysis_options(progress_after=None))
        return Leak(self.label, report) if report.found else None

    def _analysis_options(self, **more: Any) -> AnalysisOptions:
        from whyalive.analysis import AnalysisOptions

        return AnalysisOptions(
            min_bytes=self.options.min_bytes,
            allow=self.options.allow,
            where=f"{self.where} ({self.label})",
            user_root=self.options.user_root,
            **more,
        )

    def checkpoint(self, next_label: str | None) -> None:
        """Take the segment's garbage, blame it on ``label``, and go on as ``next_label``.

        The call segment freezes its baseline and ends with a full collection, which
        then traverses only what the test body created. Setup and teardown segments
        run user fixtures, which a suite may ask about the freeze count, so they end
        with a young-generation collection instead (fixture cycles are young).

        When the baseline cannot be frozen (objects were frozen already, as Python
        3.12 does at startup), the call segment is bracketed by two full collections
        instead: the test's garbage may have been promoted to the oldest generation
        while it ran, and a young collection would miss it.
        """
        from whyalive.capture import OVERLAP_NOTE, CapturedGarbage
        from whyalive.gcstate import OWNER
        from whyalive.pipeline import analyze

        lease = self._lease
        if lease is None:
            return
        full = (
            self._holds_freeze
            or self.label == "call"
            or (next_label == "call" and not OWNER.freeze_available())
        )
        generation = 2 if full else 1
        if next_label is None:
            self._lease = None
            objects = OWNER.close_lease(lease, generation)
        else:
            objects = OWNER.collect(lease, generation)
        captured = CapturedGarbage(objects, user_keeps=lease.user_keeps)
        self.leaks.extend(leak for leak in lease.records if isinstance(leak, Leak))
        lease.records.clear()
        try:
            if captured.objects:
                notes = (OVERLAP_NOTE,) if lease.overlapped else ()
                report = analyze(captured.objects, self._analysis_options(notes=notes))
                if report.found:
                    self.leaks.append(Leak(self.label, report))
        finally:
            captured.release()
        if self._holds_freeze:
            self._holds_freeze = False
            OWNER.drop_freeze()
        if next_label is None:
            return
        self.label = next_label
        if next_label == "call":
            self._holds_freeze = OWNER.hold_freeze()[0]

    def take_new(self) -> list[Leak]:
        """Leaks found since the last call."""
        new = self.leaks[self.reported :]
        self.reported = len(self.leaks)
        return new


@dataclass
class PluginState:
    """Everything the plugin keeps, in ``config.stash``."""

    check_all: bool
    defaults: TestOptions
    report_dir: Path | None
    current: TestWatch | None = None
    baseline: frozenset[str] = frozenset()
    baseline_path: Path | None = None
    update_baseline: bool = False


STATE = pytest.StashKey[PluginState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options ``--whyalive-<thing>`` with ini twins ``whyalive_<thing>`` (one help each)."""
    group = parser.getgroup("whyalive", "whyalive: reference cycles that hold tensors")
    group.addoption("--whyalive", action="store_true", default=None, help=HELP_ENABLE)
    group.addoption(
        "--whyalive-min-bytes", type=int, metavar="N", default=None, help=HELP_MIN_BYTES
    )
    group.addoption("--whyalive-on-leak", choices=("fail", "warn"), default=None, help=HELP_ON_LEAK)
    group.addoption("--whyalive-report", metavar="DIR", default=None, help=HELP_REPORT)
    group.addoption(
        "--whyalive-third-party", choices=_THIRD_PARTY_CHOICES, default=None, help=HELP_THIRD_PARTY
    )
    group.addoption("--whyalive-baseline", metavar="FILE", default=None, help=HELP_BASELINE)
    group.addoption(
        "--whyalive-update-baseline", action="store_true", default=None, help=HELP_UPDATE_BASELINE
    )
    group.addoption(
        "--whyalive-allow", action="append", metavar="SIGNATURE", default=None, help=HELP_ALLOW
    )
    parser.addini("whyalive", HELP_ENABLE, type="bool", default=False)
    parser.addini("whyalive_min_bytes", HELP_MIN_BYTES, default="0")
    parser.addini("whyalive_on_leak", HELP_ON_LEAK, default="fail")
    parser.addini("whyalive_report", HELP_REPORT, default="")
    parser.addini("whyalive_baseline", HELP_BASELINE, default="")
    parser.addini("whyalive_update_baseline", HELP_UPDATE_BASELINE, type="bool", default=False)
    parser.addini("whyalive_allow", HELP_ALLOW, type="linelist", default=[])
    parser.addini("whyalive_third_party", HELP_THIRD_PARTY, default="report")


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and read the settings; nothing else happens here."""
    config.addinivalue_line("markers", MARKER_CHECK)
    config.addinivalue_line("markers", MARKER_SKIP)
    on_leak = str(_setting(config, "whyalive_on_leak"))
    if on_leak not in ("fail", "warn"):
        raise pytest.UsageError(f"whyalive_on_leak must be 'fail' or 'warn', not {on_leak!r}")
    try:
        min_bytes = int(_setting(config, "whyalive_min_bytes"))
    except ValueError:
        raise pytest.UsageError("whyalive_min_bytes must be an integer") from None
    third_party = str(_setting(config, "whyalive_third_party"))
    if third_party not in _THIRD_PARTY_CHOICES:
        raise pytest.UsageError(
            f"whyalive_third_party must be 'fail', 'report' or 'ignore', not {third_party!r}"
        )
    report = str(_setting(config, "whyalive_report") or "")
    update_baseline = bool(_setting(config, "whyalive_update_baseline"))
    baseline_name = str(_setting(config, "whyalive_baseline") or "")
    baseline_path = config.rootpath / (baseline_name or ".whyalive-baseline.json")
    baseline: frozenset[str] = frozenset()
    if baseline_name and not update_baseline:
        from whyalive.baseline import load_baseline
        from whyalive.errors import UsageError

        try:
            baseline = load_baseline(baseline_path)
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
    config.stash[STATE] = PluginState(
        check_all=bool(_setting(config, "whyalive")),
        defaults=TestOptions(
            min_bytes=min_bytes,
            allow=tuple(_setting(config, "whyalive_allow")),
            on_leak=on_leak,
            third_party=cast("ThirdParty", third_party),
            user_root=str(config.rootpath),
        ),
        report_dir=Path(report) if report else None,
        baseline=baseline,
        baseline_path=baseline_path if baseline_name or update_baseline else None,
        update_baseline=update_baseline,
    )


def _options_for(item: pytest.Item, state: PluginState) -> TestOptions | None:
    """The test's settings, or None when it is not checked."""
    if item.get_closest_marker("whyalive_skip") is not None:
        return None
    marker = item.get_closest_marker("whyalive")
    if marker is None:
        return state.defaults if state.check_all else None
    allow = marker.kwargs.get("allow", ())
    on_leak = marker.kwargs.get("on_leak", state.defaults.on_leak)
    if on_leak not in ("fail", "warn"):
        raise pytest.UsageError(f"{item.nodeid}: whyalive on_leak must be 'fail' or 'warn'")
    return dataclasses.replace(
        state.defaults,
        min_bytes=int(marker.kwargs.get("min_bytes", state.defaults.min_bytes)),
        allow=state.defaults.allow + ((allow,) if isinstance(allow, str) else tuple(allow)),
        on_leak=on_leak,
    )


def _act(item: pytest.Item, state: PluginState, watch: TestWatch, raise_now: bool) -> None:
    """Record new findings on the item (for the summary and xdist) and fail or warn.

    Only cycles worth fixing fail or warn (see :mod:`whyalive.verdict`); the
    others are recorded for the session summary with the reason they did not fail.
    """
    from whyalive.verdict import split_cycles

    texts = []
    first_phase = ""
    for leak in watch.take_new():
        failing, listed = split_cycles(leak.report, watch.options.third_party)
        if state.update_baseline:
            listed += [(c, "written to the baseline") for c in failing]
            failing = []
        elif state.baseline:
            listed += [(c, "in the baseline") for c in failing if c.signature in state.baseline]
            failing = [c for c in failing if c.signature not in state.baseline]
        for cycle, reason in [(c, None) for c in failing] + listed:
            item.user_properties.append(
                (
                    _PROPERTY,
                    {
                        "phase": leak.phase,
                        "signature": cycle.signature,
                        "pattern": cycle.pattern,
                        "bytes": cycle.total_bytes,
                        "not_failing": reason,
                    },
                )
            )
        if not failing:
            continue
        report = dataclasses.replace(leak.report, cycles=tuple(failing))
        text = f"whyalive: leak in {leak.phase} of {item.nodeid}\n{report.render('text')}"
        written = _write_report(state, item, Leak(leak.phase, report))
        if written:
            text += f"Report written to {', '.join(str(p) for p in written)}\n"
        texts.append(text)
        first_phase = first_phase or leak.phase
    if not texts:
        return
    message = "\n".join(texts)
    if watch.options.on_leak == "warn" or not raise_now:
        from whyalive.errors import LeakWarning

        if watch.options.on_leak == "warn":
            item.warn(LeakWarning(message))
        else:
            item.add_report_section(first_phase.split()[0], "whyalive", message)
        return
    pytest.fail(message, pytrace=False)


_OUTPUTS = (".json", ".html")


def _write_report(state: PluginState, item: pytest.Item, leak: Leak) -> list[Path]:
    if state.report_dir is None:
        return []
    from whyalive.render import write_report

    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{item.nodeid}-{leak.phase}").strip("_")
    return [write_report(leak.report, state.report_dir / f"{stem}{suffix}") for suffix in _OUTPUTS]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Open the test's bracket before any fixture runs."""
    state = item.config.stash[STATE]
    options = _options_for(item, state)
    if options is None:
        return (yield)
    path, line, name = item.location
    state.current = TestWatch(options, where=f"{path}:{(line or 0) + 1} in {name}")
    state.current.begin()
    return (yield)


def _is_pytest_own(fixturedef: pytest.FixtureDef[Any]) -> bool:
    """pytest's own fixtures (parametrize values, tmp_path, capsys) get no segment of their own.

    Parametrized tests run one such pseudo-fixture per argument: two checkpoints each
    were most of the plugin's cost on a parametrize-heavy suite. What they leave
    would be blamed on the segment around them.
    """
    module = getattr(fixturedef.func, "__module__", None)
    return isinstance(module, str) and module.startswith("_pytest.")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, object, object]:
    """Give each fixture's setup its own segment, so its leaks are blamed on it."""
    watch = request.config.stash[STATE].current
    if watch is None or _is_pytest_own(fixturedef):
        return (yield)
    phase = watch.label.split()[0]
    watch.checkpoint(f"{phase} (fixture {fixturedef.argname})")
    try:
        return (yield)
    finally:
        watch.checkpoint(phase)


def pytest_fixture_post_finalizer(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> None:
    """A fixture was just torn down: what its finalizer left is blamed on it."""
    watch = request.config.stash[STATE].current
    if watch is not None and watch.label.startswith("teardown") and not _is_pytest_own(fixturedef):
        watch.label = f"teardown (fixture {fixturedef.argname})"
        watch.checkpoint("teardown")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Check the test body; setup leaks fail the test here, so they count as failures."""
    state = item.config.stash[STATE]
    watch = state.current
    if watch is None:
        return (yield)
    watch.checkpoint("call")
    try:
        result = yield
    except BaseException:
        watch.checkpoint("teardown")
        _act(item, state, watch, raise_now=False)
        raise
    watch.checkpoint("teardown")
    _act(item, state, watch, raise_now=True)
    return result


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """Close the bracket after the last finalizer; teardown leaks are reported here."""
    state = item.config.stash[STATE]
    watch = state.current
    if watch is None:
        return (yield)
    try:
        result = yield
    finally:
        state.current = None
        watch.checkpoint(None)
    _act(item, state, watch, raise_now=True)
    return result


def _findings(terminalreporter: pytest.TerminalReporter) -> dict[str, list[dict[str, Any]]]:
    """Each test's findings by signature (xdist: user_properties travel with the reports)."""
    by_signature: dict[str, list[dict[str, Any]]] = {}
    seen: set[tuple[str, str, str]] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key != _PROPERTY or not isinstance(value, dict):
                    continue
                signature = str(value.get("signature", ""))
                # Call and teardown reports both carry the properties recorded so far.
                marker = (report.nodeid, str(value.get("phase")), signature)
                if marker in seen:
                    continue
                seen.add(marker)
                by_signature.setdefault(signature, []).append({**value, "nodeid": report.nodeid})
    return by_signature


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Findings grouped by signature, with the tests that show each; failing ones first."""
    by_signature = _findings(terminalreporter)
    state = terminalreporter.config.stash[STATE]
    worker = hasattr(terminalreporter.config, "workerinput")  # xdist: the controller writes
    if state.update_baseline and state.baseline_path is not None and not worker:
        from whyalive.baseline import save_baseline

        written = save_baseline(state.baseline_path, by_signature)
        terminalreporter.write_line(
            f"whyalive: wrote {len(by_signature)} cycle signature(s) to the baseline {written}"
        )
    if not by_signature:
        return
    from whyalive.words import BLIND_SPOTS, plural, size_to_words

    terminalreporter.section("whyalive")
    groups = sorted(
        by_signature.items(),
        key=lambda kv: (kv[1][0].get("not_failing") is not None, -_bytes(kv[1]), kv[0]),
    )
    failing = [sig for sig, rows in groups if rows[0].get("not_failing") is None]
    if failing:
        terminalreporter.line(
            f"{plural(len(failing), 'cycle signature')} left heavy objects in cyclic garbage:",
            red=True,
        )
    for signature, rows in groups:
        first = rows[0]
        reason = first.get("not_failing")
        status = f"listed, not failing: {reason}" if reason else "failing"
        pattern = first.get("pattern") or "unrecognised"
        terminalreporter.line(
            f"  {signature} {pattern}: {size_to_words(_bytes(rows))} in "
            f"{plural(len({r['nodeid'] for r in rows}), 'test')} ({status})"
        )
        for row in sorted(rows, key=lambda r: (r["nodeid"], str(r.get("phase")))):
            size = size_to_words(int(row.get("bytes", 0)))
            terminalreporter.line(f"      {row['nodeid']} [{row.get('phase')}]: {size}")
    terminalreporter.line(f"Note: {BLIND_SPOTS}")


def _bytes(rows: list[dict[str, Any]]) -> int:
    return sum(int(row.get("bytes", 0)) for row in rows)


@pytest.hookimpl(trylast=True)
def pytest_report_header(config: pytest.Config) -> str | None:
    """Say that whyalive is checking, and with what."""
    state = config.stash[STATE]
    if not state.check_all:
        return None
    options = state.defaults
    header = (
        f"whyalive: checking every test (min_bytes={options.min_bytes}, on_leak={options.on_leak})"
    )
    if state.baseline_path is not None:
        verb = "writing" if state.update_baseline else f"{len(state.baseline)} signature(s) in"
        header += f"\nwhyalive: {verb} baseline {state.baseline_path}"
    return header


@pytest.fixture
def whyalive(request: pytest.FixtureRequest) -> Any:
    """A ``check_leaks`` handle for this test: ``with whyalive: ...`` then ``whyalive.report``."""
    from whyalive.check import check_leaks

    state = request.config.stash[STATE]
    return check_leaks(on_leak="raise", min_bytes=state.defaults.min_bytes)
