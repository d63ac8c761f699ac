"""A checked test's findings: failing or warning on them, and the session summary.

Every finding is recorded on the test item (``user_properties``, so it travels
with xdist's reports); the summary groups them by cycle signature.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from whyalive.pytest_plugin.settings import STATE
from whyalive.pytest_plugin.watch import Leak

if TYPE_CHECKING:
    from whyalive.pytest_plugin.settings import PluginState
    from whyalive.pytest_plugin.watch import TestWatch

_PROPERTY = "whyalive"


def act_on_leaks(item: pytest.Item, state: PluginState, watch: TestWatch, raise_now: bool) -> None:
    """Record new findings on the item (for the summary and xdist) and fail or warn.

    Only cycles worth fixing fail or warn (see :mod:`whyalive.verdict`); the
    others are recorded for the session summary with the reason they did not fail.
    """
    from whyalive.verdict import only, split_cycles

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
                        "uncollectable": any(c is cycle for c in leak.report.uncollectable),
                    },
                )
            )
        if not failing:
            continue
        report = only(leak.report, failing)
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


def write_summary(terminalreporter: pytest.TerminalReporter) -> None:
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
        if first.get("uncollectable"):
            pattern += ", loop through the autograd graph, never freed"
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
