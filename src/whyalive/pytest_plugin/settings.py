"""The plugin's settings: options with ini twins, markers, and what one test is checked with."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from whyalive.pytest_plugin.options import TestOptions

if TYPE_CHECKING:
    from whyalive.pytest_plugin.watch import TestWatch
    from whyalive.report.verdict import ThirdParty

_THIRD_PARTY_CHOICES = ("fail", "report", "ignore")

HELP_ENABLE = "check every test for heavy objects left in cyclic garbage (whyalive)"
HELP_MIN_BYTES = (
    "report only cycles holding at least this size: 1048576, 1MB, '1.5 MiB' "
    "(KB, MB, GB are 1024-based; default 0)"
)
HELP_ON_LEAK = "what a leaking test does: 'fail' (default) or 'warn'"
HELP_REPORT = (
    "write a JSON and an HTML report to this directory for each test with findings, "
    "failing or listed"
)
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


@dataclass
class PluginState:
    """Everything the plugin keeps, in ``config.stash``."""

    check_all: bool
    defaults: TestOptions
    report_dir: Path | None
    current: TestWatch | None = None
    bracket: TestWatch | None = None
    """The running test's bracket until its protocol ends (then abandoned if still open)."""
    baseline: frozenset[str] = frozenset()
    baseline_path: Path | None = None
    update_baseline: bool = False


STATE = pytest.StashKey[PluginState]()


def add_options(parser: pytest.Parser) -> None:
    """Options ``--whyalive-<thing>`` with ini twins ``whyalive_<thing>`` (one help each)."""
    group = parser.getgroup("whyalive", "whyalive: reference cycles that hold tensors")
    group.addoption("--whyalive", action="store_true", default=None, help=HELP_ENABLE)
    group.addoption("--whyalive-min-bytes", metavar="SIZE", default=None, help=HELP_MIN_BYTES)
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


def _size(value: object, what: str) -> int:
    """A size from the command line, ini or a marker; a bad one is a one-line usage error."""
    from whyalive.errors import UsageError
    from whyalive.words import size_from_words

    try:
        return size_from_words(value, what)
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None


def read_settings(config: pytest.Config) -> PluginState:
    """The session's settings from the command line and ini; a clear UsageError when bad."""
    on_leak = str(_setting(config, "whyalive_on_leak"))
    if on_leak not in ("fail", "warn"):
        raise pytest.UsageError(f"whyalive_on_leak must be 'fail' or 'warn', not {on_leak!r}")
    min_bytes = _size(_setting(config, "whyalive_min_bytes"), "whyalive_min_bytes")
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
        from whyalive.errors import UsageError
        from whyalive.report.baseline import load_baseline

        try:
            baseline = load_baseline(baseline_path)
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
    return PluginState(
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


class BadMarker(Exception):
    """A ``whyalive`` marker with a bad argument: that test errors with this one line."""


def options_for(item: pytest.Item, state: PluginState) -> TestOptions | None:
    """The test's settings, or None when it is not checked; :class:`BadMarker` when its
    ``whyalive`` marker has a bad argument."""
    if item.get_closest_marker("whyalive_skip") is not None:
        return None
    marker = item.get_closest_marker("whyalive")
    if marker is None:
        return state.defaults if state.check_all else None
    from whyalive.errors import UsageError
    from whyalive.words import size_from_words

    allow = marker.kwargs.get("allow", ())
    on_leak = marker.kwargs.get("on_leak", state.defaults.on_leak)
    if on_leak not in ("fail", "warn"):
        raise BadMarker(f"whyalive marker: on_leak={on_leak!r} is not 'fail' or 'warn'")
    size = marker.kwargs.get("min_bytes", state.defaults.min_bytes)
    try:
        min_bytes = size_from_words(size)
    except UsageError:
        raise BadMarker(
            f"whyalive marker: min_bytes={size!r} is not a size (use 1048576, 1MB or 1.5 MiB)"
        ) from None
    return dataclasses.replace(
        state.defaults,
        min_bytes=min_bytes,
        allow=state.defaults.allow + ((allow,) if isinstance(allow, str) else tuple(allow)),
        on_leak=on_leak,
    )
