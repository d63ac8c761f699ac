"""Which reported cycles are worth failing a check for, and why the others are not.

A cycle holding 0 bytes (meta or fake tensors), a cycle through pytest's own
objects (``pytest.raises(...) as excinfo``) and a cycle made inside an installed
package are reported, but by default fail nothing: the user cannot or need not
fix them. The integrations (``check_leaks``, the pytest plugin) ask here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from whyalive.report import CycleReport, Report

ThirdParty = Literal["fail", "report", "ignore"]
PYTEST_IDIOM = "pytest-idiom"


def why_not_failing(cycle: CycleReport, third_party: ThirdParty = "report") -> str | None:
    """None when the cycle fails a check; else the reason in words ("holds 0 bytes")."""
    if cycle.pattern == PYTEST_IDIOM:
        return "pytest idiom, dies with the test"
    if cycle.total_bytes <= 0 and cycle.heavy_count > 0:
        return "holds 0 bytes"
    if cycle.made_inside is not None and third_party != "fail":
        return f"made inside {cycle.made_inside}, not in your code"
    return None


def split_cycles(
    report: Report, third_party: ThirdParty = "report"
) -> tuple[list[CycleReport], list[tuple[CycleReport, str]]]:
    """(cycles that fail, (cycle, reason) of those only listed); ignored third-party dropped.

    Uncollectable loops (through the autograd graph) are judged as cycles are.
    """
    failing: list[CycleReport] = []
    listed: list[tuple[CycleReport, str]] = []
    for cycle in (*report.cycles, *report.uncollectable):
        reason = why_not_failing(cycle, third_party)
        if reason is None:
            failing.append(cycle)
        elif not (third_party == "ignore" and cycle.made_inside is not None):
            listed.append((cycle, reason))
    return failing, listed


def only(report: Report, cycles: list[CycleReport]) -> Report:
    """``report`` with just these of its cycles and uncollectable loops."""
    kept = {id(cycle) for cycle in cycles}
    return replace(
        report,
        cycles=tuple(c for c in report.cycles if id(c) in kept),
        uncollectable=tuple(c for c in report.uncollectable if id(c) in kept),
    )


def fails(report: Report, third_party: ThirdParty = "report") -> bool:
    """Whether the report has a cycle worth failing for, or a still-alive heavy object."""
    return bool(report.alive) or bool(split_cycles(report, third_party)[0])
