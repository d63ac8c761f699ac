"""Short reprs, notebook HTML, print(mon) and the monitor's timeline (no kernel, no browser)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import whyalive
from scenarios import heavy, self_loop, stage_backward
from scenarios.modules import throwaway_module
from whyalive import Report, explain, find_leaks
from whyalive.distributed import RankCycle, summarize
from whyalive.monitor.view import MAX_POINTS, MAX_ROWS, Timeline, combine_reports
from whyalive.render.timeline import timeline_svg
from whyalive.report import TimelinePoint

numpy = pytest.importorskip("numpy")

MODULE_NAME = "whyalive_display_holders"
HOSTILE = '</script><img src=x onerror="alert(1)">'


def closure_report() -> Report:
    """The report of one recursive closure over four 4 KiB arrays."""
    return find_leaks(stage_backward, [heavy() for _ in range(4)])


def srcdoc(markup: str) -> str:
    """The document inside an ``<iframe srcdoc>``, unescaped."""
    match = re.search(r'srcdoc="([^"]*)"', markup)
    assert match is not None
    return html.unescape(match.group(1))


def test_report_repr_is_one_line_and_print_keeps_the_text() -> None:
    """repr(report) is one line with count, bytes and top pattern; str() is the full text."""
    report = closure_report()
    line = repr(report)
    assert line.startswith("<whyalive.Report: 1 reference cycle keeps 4 arrays alive at ")
    assert ": 16.0 KiB on cpu; top:" in line
    assert "top: recursive-closure (recursive nested function)" in line
    assert "\n" not in line
    assert len(line) < 250
    assert str(report).count("\n") > 10
    assert "Fix:" in str(report)
    assert (
        repr(Report()) == "<whyalive.Report: no cyclic garbage holding heavy objects was captured "
        "(0 garbage objects, 0 light cycles)>"
    )


def test_repr_pretty_is_the_short_repr() -> None:
    """IPython's pretty printer gets the same one line as repr()."""
    pretty = pytest.importorskip("IPython.lib.pretty")
    report = closure_report()
    assert pretty.pretty(report) == repr(report)


def test_report_html_is_a_sandboxed_offline_frame() -> None:
    """_repr_html_ embeds the whole offline page in a sandboxed srcdoc iframe, escaped."""
    report = closure_report()
    markup = report._repr_html_()
    assert markup.startswith('<iframe srcdoc="')
    assert 'sandbox="allow-scripts"' in markup
    assert "allow-same-origin" not in markup
    page = srcdoc(markup)
    assert page == report.render("html", title=page.split("<title>")[1].split("</title>")[0])
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    clean = Report()._repr_html_()
    assert clean == (
        "<p><code>whyalive: no cyclic garbage holding heavy objects was captured "
        "(0 garbage objects, 0 light cycles).</code></p>"
    )


def test_summary_repr_and_html_escape_hostile_titles() -> None:
    """A summary is one line in a REPL and an escaped table in a notebook."""
    rows = [RankCycle("sig1", "recursive-closure", f"title {HOSTILE}", 4096, 2)]
    summary = summarize({0: rows, 1: []}, 3)
    assert repr(summary) == (
        "<whyalive.Summary: 2 of 3 ranks reported; 2 reference cycles (1 signature) keep 4.0 KiB "
        "alive on rank 0; top: recursive-closure; missing rank 2>"
    )
    markup = summary._repr_html_()
    assert HOSTILE not in markup
    assert html.escape(HOSTILE) in markup
    assert "<script" not in markup
    assert str(summary).startswith("whyalive summary: 2 of 3 ranks reported")


@pytest.fixture
def holders() -> Iterator[types.ModuleType]:
    """A throwaway module in sys.modules, standing for the notebook's ``__main__``."""
    with throwaway_module(MODULE_NAME) as module:
        yield module


@pytest.mark.whyalive_skip  # explain() would see the plugin's frozen baseline
def test_explanation_repr_names_the_global(holders: types.ModuleType) -> None:
    """repr(explain(x)) is one line under 600 characters naming the module and the variable."""
    holders.weights = numpy.zeros(256, dtype=numpy.float32)
    explanation = explain(holders.weights)
    line = repr(explanation)
    assert line == (
        "<whyalive.Explanation: ndarray(float32[256]), 1.0 KiB, held by module "
        f"`{MODULE_NAME}` (a global variable): module {MODULE_NAME} --.weights--> "
        "ndarray(float32[256])>"
    )
    assert len(line) < 600
    assert "Holder paths:" in str(explanation)
    assert srcdoc(explanation._repr_html_()).startswith("<!DOCTYPE html>")


@pytest.mark.whyalive_skip  # explain() would see the plugin's frozen baseline
def test_explanation_repr_stays_short_for_a_deep_path(holders: types.ModuleType) -> None:
    """A holder path 200 levels deep is cut: the repr stays under 600 characters."""
    node: Any = numpy.zeros(8)
    for _ in range(200):
        node = {"k" * 20: node}
    holders.deep = node
    target = holders.deep
    for _ in range(200):
        target = target["k" * 20]
    line = repr(explain(target))
    assert len(line) < 600
    assert f"module {MODULE_NAME} --.deep-->" in line


def monitor_loop(steps: int, *, leak_every: int = 1, **options: Any) -> whyalive.GcMonitor:
    """A stopped monitor after ``steps`` steps, a gen-1 collection every 10th."""
    with whyalive.monitor(log=False, collect_generation=1, **options) as mon:
        for step in range(steps):
            if step % leak_every == 0:
                stage_backward([numpy.zeros(1024, dtype=numpy.float32)])
            mon.step(collect=step % 10 == 9)
    return mon


@pytest.mark.whyalive_skip  # the monitor runs its own gc callback
def test_print_monitor_fits_one_screen_after_50_steps(tmp_path: Path) -> None:
    """print(mon) after 50 leaking steps: <= 15 lines with signature, first step, count, bytes."""
    mon = monitor_loop(50, report_dir=tmp_path)
    text = str(mon)
    lines = text.splitlines()
    assert len(lines) <= 15
    (seen,) = mon.signatures()
    assert lines[0].startswith("whyalive monitor (stopped): 50 steps, ")
    assert lines[1] == "1 cycle signature, 200.0 KiB found, summed over the run:"
    assert lines[3].split() == [
        seen.cycle.signature,
        "recursive-closure",
        "10",
        "50",
        "200.0",
        "KiB",
    ]
    assert "extract_tensors_with_grads" in lines[4]
    assert repr(mon).startswith("<whyalive.GcMonitor stopped, 50 steps, ")
    assert repr(mon).endswith("1 cycle signature, 200.0 KiB; top: recursive-closure>")
    report = mon.report()
    assert [(p.step, p.nbytes, p.occurrences) for p in report.timeline] == [
        (step, 40960, 10) for step in (10, 20, 30, 40, 50)
    ]
    page = report.render("html")
    assert '<section id="timeline"><svg' in page
    assert page.count("<circle") == 5
    assert ">recursive-closure 200.0 KiB</text>" in page  # the legend: pattern whole, bytes
    (written,) = tmp_path.glob("*.html")
    assert '<section id="timeline"><svg' in written.read_text()
    assert "<iframe srcdoc=" in mon._repr_html_()


@pytest.mark.whyalive_skip  # the monitor runs its own gc callback
def test_print_monitor_before_anything_is_seen() -> None:
    """A fresh monitor says it has seen nothing yet and when a first sighting can come."""
    mon = whyalive.monitor(log=False)
    assert str(mon).splitlines() == [
        "whyalive monitor (stopped): 0 steps, 0 collections examined, 0 analyses (0.0 ms)",
        "No cycle signature seen yet. A cycle shows at the first safe point after a "
        "collection that finds it (see docs/monitor.md).",
    ]
    assert mon.report().cycles == ()


@pytest.mark.whyalive_skip  # the monitor runs its own gc callback
def test_print_monitor_with_many_signatures_stays_on_one_screen() -> None:
    """Eight signatures: the biggest five are listed, the rest counted, still <= 15 lines."""
    with whyalive.monitor(log=False, collect_generation=1) as mon:
        for number in range(1, 9):
            holder = type(f"Holder{number}", (), {})()  # a class per signature
            holder.me = holder
            holder.payload = numpy.zeros(256 * number)
            del holder
            mon.step(collect=True)
    signatures = mon.signatures()
    assert len(signatures) > MAX_ROWS
    lines = str(mon).splitlines()
    assert len(lines) <= 15
    assert lines[-2] == f"  ... and {len(signatures) - MAX_ROWS} more signatures"
    report = mon.report()
    assert {c.signature for c in report.cycles} == {s.cycle.signature for s in signatures}
    # The timeline's legend names each line by its whole pattern; lines that share one are
    # told apart by their signature's start, the full signature in the tooltip.
    legend = re.findall(r'fill="#111827"><title>(\w+)</title>([^<]+)</text>', timeline_svg(report))
    assert len(legend) == 8
    for signature, words in legend:
        pattern = next(c.pattern for c in report.cycles if c.signature == signature)
        assert words.startswith(f"{pattern} {signature[:8]} "), words
    for cycle in report.cycles:  # node ids renumbered consistently across the joined reports
        heavy = report.node(cycle.holder_paths[0].heavy_node)
        assert heavy.heavy
        assert report.node(cycle.members[0]).type_name.startswith(f"{__name__}.Holder")


def test_timeline_keeps_bounded_buckets_with_exact_sums() -> None:
    """Five thousand steps keep at most MAX_POINTS points per signature and every byte."""
    timeline = Timeline()
    for step in range(1, 5001):
        timeline.add("a", step, 10, 1)
        if step % 7 == 0:
            timeline.add("b", step, 3, 1)
    points = timeline.points()
    by_signature = {s: [p for p in points if p.signature == s] for s in "ab"}
    assert 0 < len(by_signature["a"]) <= MAX_POINTS
    assert sum(p.nbytes for p in by_signature["a"]) == 50_000
    assert sum(p.occurrences for p in by_signature["b"]) == 5000 // 7
    assert all(p.step % timeline.bucket == 0 for p in points)
    assert timeline.bucket == 8


def test_timeline_svg_escapes_and_has_no_style_attribute() -> None:
    """Hostile signatures in the timeline are text; the SVG uses no inline style (CSP)."""
    points = tuple(TimelinePoint(f"{HOSTILE}{i}", 5 * i, 1024 * i, i) for i in range(1, 11))
    page = Report(timeline=points).render("html")
    section = page.split('<section id="timeline">')[1].split("</section>")[0]
    assert "<img" not in section
    assert " style=" not in section
    assert section.count('class="series"') == 8  # the biggest eight signatures
    assert "+2 signatures not drawn" in section


def test_combine_reports_renumbers_nodes() -> None:
    """Two reports joined: each cycle's paths still lead to its own heavy objects."""
    first, second = closure_report(), find_leaks(self_loop, 2048)
    joined = combine_reports([first, second], where="joined")
    assert len(joined.nodes) == len(first.nodes) + len(second.nodes)
    assert joined.total_bytes == first.total_bytes + second.total_bytes
    assert joined.run.where == "joined"
    by_pattern = {c.pattern: c for c in joined.cycles}
    loop = by_pattern[second.cycles[0].pattern]
    assert (
        joined.node(loop.holder_paths[0].heavy_node).label
        == second.node(second.cycles[0].holder_paths[0].heavy_node).label
    )
    assert joined.to_dict() == Report.from_dict(joined.to_dict()).to_dict()
    for original in (first, second):
        (cycle,) = original.cycles
        (moved,) = [c for c in joined.cycles if c.signature == cycle.signature]
        # The cycle's block of text (members, loop, cut, paths) reads the same after the move.
        alone = str(replace(original, notes=())).split("\n\n")[1]
        assert str(replace(joined, cycles=(moved,), notes=())).split("\n\n")[1] == alone


def test_display_never_imports_ipython() -> None:
    """Reprs and HTML work in a process where IPython was never imported."""
    code = (
        "import sys, whyalive\n"
        "r = whyalive.Report()\n"
        "repr(r); r._repr_html_(); whyalive.monitor(log=False)._repr_html_()\n"
        "print('IPython' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout == "False\n"
