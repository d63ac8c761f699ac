"""pytest plugin: fail the test that leaves heavy objects in cyclic garbage, and say why.

Inert unless asked (STYLE pitfall 2): without ``--whyalive`` (ini ``whyalive = true``)
or a ``whyalive`` marker, every hook returns at once and the garbage collector is
never touched; the analysis modules are imported only when a test is checked.

This module holds the hooks; :mod:`.settings` reads the options, :mod:`.watch`
brackets one test and blames its leaks on a segment, :mod:`.findings` fails or
warns and writes the session summary.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from whyalive.pytest_plugin.findings import LeakFailed, act_on_leaks, write_summary
from whyalive.pytest_plugin.settings import (
    MARKER_CHECK,
    MARKER_SKIP,
    STATE,
    BadMarker,
    add_options,
    options_for,
    read_settings,
)
from whyalive.pytest_plugin.watch import TestWatch


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options ``--whyalive-<thing>`` with ini twins ``whyalive_<thing>``."""
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and read the settings; nothing else happens here."""
    config.addinivalue_line("markers", MARKER_CHECK)
    config.addinivalue_line("markers", MARKER_SKIP)
    config.stash[STATE] = read_settings(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Open the test's bracket before any fixture runs."""
    state = item.config.stash[STATE]
    bad_marker: str | None = None
    try:
        options = options_for(item, state)
    except BadMarker as error:
        options, bad_marker = None, str(error)
    if bad_marker is not None:
        # Failed after pytest's own setup ran, so its teardown finds what it expects: the
        # test errors with this one line and the session goes on.
        yield
        pytest.fail(bad_marker, pytrace=False)
    if options is None:
        return (yield)
    path, line, name = item.location
    watch = TestWatch(options, where=f"{path}:{(line or 0) + 1} in {name}")
    state.current = state.bracket = watch
    watch.begin()
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
        act_on_leaks(item, state, watch, raise_now=False)
        raise
    watch.checkpoint("teardown")
    act_on_leaks(item, state, watch, raise_now=True)
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
        try:
            watch.checkpoint(None)
        finally:
            state.current = None
    act_on_leaks(item, state, watch, raise_now=True)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A leak's report is its message alone, so the short summary line reads
    ``FAILED test_model.py::test_cache - whyalive: 2.0 MiB, cut Cache.cb at ...``: pytest
    would put ``Failed:`` first and cut the line at the terminal's width."""
    report = yield
    if report.failed and call.excinfo is not None and isinstance(call.excinfo.value, LeakFailed):
        report.longrepr = str(call.excinfo.value.msg)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """The safety net: a bracket that an interrupt (Ctrl-C) left open is closed here."""
    try:
        return (yield)
    finally:
        state = item.config.stash[STATE]
        bracket = state.bracket
        if bracket is not None:
            bracket.abandon()
            state.current = state.bracket = None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Findings grouped by signature, with the tests that show each; failing ones first."""
    write_summary(terminalreporter)


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
