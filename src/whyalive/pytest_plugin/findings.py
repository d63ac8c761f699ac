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

if TYPE_CHECKING:
    from whyalive.pytest_plugin.settings import PluginState
    from whyalive.pytest_plugin.watch import TestWatch
    from whyalive.report import CycleReport, Report

_PROPERTY = "whyalive"
_HELD = "whyalive-held"  # survivors an unnamed C/C++ owner holds: listed, in no baseline


class LeakFailed(pytest.fail.Exception):  # type: ignore[name-defined,misc]  # a value, not a name
    """A checked test left heavy objects in cyclic garbage: shown without a traceback, and
    in the short summary without pytest's ``Failed:`` (see ``pytest_runtest_makereport``)."""


def act_on_leaks(item: pytest.Item, state: PluginState, watch: TestWatch, raise_now: bool) -> None:
    """Record new findings on the item (for the summary and xdist) and fail or warn.

    Only cycles worth fixing fail or warn (see :mod:`whyalive.report.verdict`); the
    others are recorded for the session summary with the reason they did not fail.
    With ``--whyalive-report`` every finding is written, listed ones too.
    """
    from whyalive.render.text import leak_line
    from whyalive.report.verdict import only, split_cycles

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
        shown = failing + [cycle for cycle, _ in listed]
        written = _write_report(state, item, leak.phase, leak.report, shown)
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
                        "report": str(written[0]) if written else None,
                        "uncollectable": any(c is cycle for c in leak.report.uncollectable),
                    },
                )
            )
        if leak.report.held_natively:
            held = [[h.description, h.nbytes] for h in leak.report.held_natively]
            item.user_properties.append((_HELD, {"phase": leak.phase, "held": held}))
        if not failing:
            continue
        report = only(leak.report, failing)
        text = f"{leak_line(report)}\nLeak found in the {leak.phase} of {item.nodeid}:\n"
        text += report.render("text")
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
    raise LeakFailed(message, pytrace=False)


_OUTPUTS = (".json", ".html")


def _write_report(
    state: PluginState, item: pytest.Item, phase: str, report: Report, cycles: list[CycleReport]
) -> list[Path]:
    """JSON and HTML of what one segment of a test left, failing and listed cycles alike."""
    if state.report_dir is None or not (cycles or report.alive or report.held_natively):
        return []
    from whyalive.render import write_report
    from whyalive.report.verdict import only

    shown = only(report, cycles)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{item.nodeid}-{phase}").strip("_")
    return [write_report(shown, state.report_dir / f"{stem}{suffix}") for suffix in _OUTPUTS]


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


# A failing signature lists this many tests by name; the rest are counted.
_TESTS_NAMED = 5


def write_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Failing signatures with their tests, then listed findings folded by test function."""
    by_signature = _findings(terminalreporter)
    held = _held(terminalreporter)
    config = terminalreporter.config
    state = config.stash[STATE]
    worker = hasattr(config, "workerinput")  # xdist: the controller writes
    if state.update_baseline and state.baseline_path is not None and not worker:
        from whyalive.report.baseline import save_baseline

        written = save_baseline(state.baseline_path, by_signature)
        terminalreporter.write_line(
            f"whyalive: wrote {len(by_signature)} cycle signature(s) to the baseline {written}"
        )
    if not by_signature and not held:
        return
    from whyalive.render.text import blind_spot_note
    from whyalive.render.wrap import wrap
    from whyalive.words import plural, size_to_words

    width = config.get_terminal_writer().fullwidth
    terminalreporter.section("whyalive")
    failing = {s: rows for s, rows in by_signature.items() if rows[0].get("not_failing") is None}
    if failing:
        terminalreporter.line(
            f"{plural(len(failing), 'cycle signature')} left heavy objects in cyclic garbage:",
            red=True,
        )
    for signature, rows in sorted(failing.items(), key=lambda kv: (-_bytes(kv[1]), kv[0])):
        pattern = rows[0].get("pattern") or "unrecognised"
        if rows[0].get("uncollectable"):
            pattern += ", loop through the autograd graph, never freed"
        head = (
            f"{signature} {pattern}: {size_to_words(_bytes(rows))} in "
            f"{plural(len({r['nodeid'] for r in rows}), 'test')} (failing)"
        )
        for line in wrap(head, width, indent="  "):
            terminalreporter.line(line)
        ordered = sorted(rows, key=lambda r: (r["nodeid"], str(r.get("phase"))))
        for row in ordered[:_TESTS_NAMED]:
            size = size_to_words(int(row.get("bytes", 0)))
            terminalreporter.line(f"      {row['nodeid']} [{row.get('phase')}]: {size}")
        if len(ordered) > _TESTS_NAMED:
            terminalreporter.line(f"      ... and {plural(len(ordered) - _TESTS_NAMED, 'more')}")
    for line in _listed_lines(by_signature, width):
        terminalreporter.line(line)
    for line in _held_lines(held, width):
        terminalreporter.line(line)
    reports = {r["report"] for rows in by_signature.values() for r in rows if r.get("report")}
    if reports:
        terminalreporter.line(
            f"{plural(len(reports), 'report')} written to {state.report_dir} (JSON and HTML)"
        )
    for line in blind_spot_note(width).strip("\n").splitlines():
        terminalreporter.line(line)


def _listed_lines(by_signature: dict[str, list[dict[str, Any]]], width: int) -> list[str]:
    """Per pattern, reason and test function, one entry: its parametrised cases folded; a
    line of their own opens them, as pytest-memray's entries (and the failing group) do."""
    from whyalive.render.wrap import wrap
    from whyalive.words import plural, size_to_words

    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for signature, rows in by_signature.items():
        for row in rows:
            reason = row.get("not_failing")
            if reason is None:
                continue
            base, _, _ = row["nodeid"].partition("[")
            key = (str(row.get("pattern") or "unrecognised"), str(reason), base)
            groups.setdefault(key, []).append({**row, "signature": signature})
    if not groups:
        return []
    listed = {r["signature"] for rows in groups.values() for r in rows}
    intro = f"{plural(len(listed), 'cycle signature')} listed, not failing (each says why):"
    lines = wrap(intro, width)
    for (pattern, reason, base), rows in sorted(
        groups.items(), key=lambda kv: (-_bytes(kv[1]), kv[0])
    ):
        signatures = sorted({r["signature"] for r in rows})
        sigs = signatures[0] if len(signatures) == 1 else plural(len(signatures), "signature")
        tests = list(dict.fromkeys(r["nodeid"] for r in rows))  # in the order they ran
        cases = [t[len(base) :] for t in tests if t != base]
        named = base if not cases else f"{base}{_folded(cases)}"
        head = (
            f"{sigs} {pattern}: {size_to_words(_bytes(rows))} in {plural(len(tests), 'test')} "
            f"(listed, not failing: {reason})"
        )
        lines.extend(wrap(head, width, indent="  "))
        lines.append(f"      {named}")
    return lines


def _held(terminalreporter: pytest.TerminalReporter) -> list[dict[str, Any]]:
    """Each test's survivors that an unnamed C/C++ owner holds, once per test and phase."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key != _HELD or not isinstance(value, dict):
                    continue
                # Call and teardown reports both carry the properties recorded so far.
                marker = (report.nodeid, repr(value))
                if marker in seen:
                    continue
                seen.add(marker)
                for what, nbytes in value.get("held", ()):
                    rows.append(
                        {
                            "nodeid": report.nodeid,
                            "phase": value.get("phase"),
                            "what": what,
                            "bytes": nbytes,
                        }
                    )
    return rows


def _held_lines(rows: list[dict[str, Any]], width: int) -> list[str]:
    """The survivors held by C/C++ owners, per test: listed, never failing."""
    from whyalive.render.wrap import wrap
    from whyalive.words import HELD_NATIVELY_SECTION, plural, size_to_words

    if not rows:
        return []
    tests = list(dict.fromkeys(r["nodeid"] for r in rows))
    head = (
        f"{plural(len(rows), 'heavy object')} in {plural(len(tests), 'test')}: "
        f"{HELD_NATIVELY_SECTION[0].lower()}{HELD_NATIVELY_SECTION[1:]}:"
    )
    lines = wrap(head, width)  # a group of its own: its line opens it, as the others' do
    for row in rows[:_TESTS_NAMED]:
        size = size_to_words(int(row.get("bytes", 0)))
        lines.append(f"  {row['nodeid']} [{row.get('phase')}]: {row.get('what')}, {size}")
    if len(rows) > _TESTS_NAMED:
        lines.append(f"  ... and {plural(len(rows) - _TESTS_NAMED, 'more')}")
    return lines


def _folded(cases: list[str]) -> str:
    """``[0]``, ``[1]``, ``[2]`` -> ``[0, 1, 2]``; many -> the first three and how many more."""
    inner = [case[1:-1] if case.startswith("[") and case.endswith("]") else case for case in cases]
    shown = ", ".join(inner[:3])
    more = f", ... {len(inner) - 3} more" if len(inner) > 3 else ""
    return f"[{shown}{more}]"


def _bytes(rows: list[dict[str, Any]]) -> int:
    return sum(int(row.get("bytes", 0)) for row in rows)
