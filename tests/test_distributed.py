"""Every rank: rank tags, the gathered summary, and real pipelining schedules on gloo.

The multi-process tests launch ``tests/pipelining_worker.py`` once per rank on
127.0.0.1 with a fresh port. One 2-rank launch runs every scenario in turn
(module fixture), one 4-rank launch runs one; every launch has a deadline and
its processes are killed in ``finally`` whatever happens.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from whyalive import check_leaks, find_leaks
from whyalive.demo import run_demo
from whyalive.distributed import (
    Summary,
    gather_summary,
    rank_and_world,
    rank_cycles,
    rank_tag,
    summarize,
)
from whyalive.errors import UsageError
from whyalive.report import Report

WORKER = Path(__file__).with_name("pipelining_worker.py")
SCHEDULES_FULL_BACKWARD = ("gpipe", "1f1b", "interleaved")
SCHEDULES = (*SCHEDULES_FULL_BACKWARD, "zerobubble")
TWO_RANK_SCENARIOS = (
    *(f"{s}:shipped" for s in SCHEDULES),
    *(f"{s}:prefix" for s in SCHEDULES_FULL_BACKWARD),
    "zerobubble:prefix-split",
    "missing",
)


@dataclass
class Launch:
    """What one multi-process run left: exit codes, per-rank results, logs."""

    returncodes: list[int | None]
    results: list[dict[str, Any]]
    logs: list[str]

    def scenario(self, name: str) -> list[dict[str, Any]]:
        """Each rank's result for one scenario."""
        missing = [r for r, res in enumerate(self.results) if name not in res]
        assert not missing, f"ranks {missing} have no result for {name}:\n" + "\n".join(self.logs)
        return [res[name] for res in self.results]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(world: int, scenarios: tuple[str, ...], out: Path, *, deadline: float) -> Launch:
    """Run the worker on ``world`` ranks; kill whatever is still running at the deadline."""
    return start_ranks(world, [str(WORKER), "--out", str(out), *scenarios], out, deadline=deadline)


def start_ranks(world: int, argv: list[str], out: Path, *, deadline: float) -> Launch:
    """Run ``python argv`` once per rank, as torchrun would; kill what outlives the deadline."""
    env = {
        **os.environ,
        "WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }
    processes: list[subprocess.Popen[bytes]] = []
    logs = [out / f"log{rank}.txt" for rank in range(world)]
    try:
        for rank in range(world):
            with logs[rank].open("wb") as log:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, *argv],
                        env={**env, "RANK": str(rank)},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        end = time.monotonic() + deadline
        for process in processes:
            try:
                process.wait(timeout=max(end - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                break
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    results = []
    for rank in range(world):
        path = out / f"rank{rank}.pickle"
        results.append(pickle.loads(path.read_bytes()) if path.exists() else {})
    texts = [
        f"--- rank {r} ---\n" + p.read_text(errors="replace")[-3000:] for r, p in enumerate(logs)
    ]
    return Launch([p.returncode for p in processes], results, texts)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Launch:
    """All 2-rank scenarios in one launch (torch starts once per rank, not once per test)."""
    pytest.importorskip("torch.distributed.pipelining")
    out = tmp_path_factory.mktemp("two_ranks")
    return launch(2, TWO_RANK_SCENARIOS, out, deadline=150)


def _reports(results: list[dict[str, Any]]) -> list[Report]:
    return [Report.from_dict(result["report"]) for result in results]


def _union(reports: list[Report]) -> dict[str, dict[int, int]]:
    union: dict[str, dict[int, int]] = {}
    for rank, report in enumerate(reports):
        for cycle in report.cycles:
            union.setdefault(cycle.signature, {})[rank] = cycle.total_bytes
    return union


def _assert_summary_is_union_of(summary: Summary, by_rank: dict[int, dict[str, Any]]) -> None:
    reports = {rank: Report.from_dict(data) for rank, data in by_rank.items()}
    union: dict[str, dict[int, int]] = {}
    for rank, report in reports.items():
        for cycle in report.cycles:
            union.setdefault(cycle.signature, {})[rank] = cycle.total_bytes
    assert union, "the demo leak was found on the subgroup's ranks"
    assert {row.signature: row.bytes_by_rank for row in summary.rows} == union


def _assert_summary_is_union(summary: Summary, reports: list[Report]) -> None:
    assert summary.missing == ()
    assert summary.ranks == tuple(range(len(reports)))
    assert {row.signature: row.bytes_by_rank for row in summary.rows} == _union(reports)
    assert summary.total_bytes == sum(r.total_bytes for r in reports)


def test_rank_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an initialised group, RANK (else LOCAL_RANK) and WORLD_SIZE give the rank."""
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert rank_and_world() == (3, 8)
    assert rank_tag() == "[rank 3/8] "
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert rank_and_world() == (1, 8)
    monkeypatch.delenv("LOCAL_RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert rank_and_world() == (None, None)
    assert rank_tag() == ""


def test_report_and_headline_carry_the_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report records its rank, and its text headline says it."""
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    _, report = run_demo()
    assert (report.run.rank, report.run.world_size) == (2, 4)
    assert report.render("text").startswith("whyalive [rank 2]")
    clean = find_leaks(lambda: None)
    assert clean.run.rank == 2
    assert "[rank 2]" in clean.render("text").splitlines()[0]


def test_summarize_is_the_union_of_rank_reports() -> None:
    """Rows join ranks by signature; bytes per rank come from each rank's report."""
    _, leaky = run_demo()
    _, fixed = run_demo(fixed=True)
    per_rank = {0: rank_cycles([leaky]), 1: rank_cycles([fixed]), 2: rank_cycles([leaky])}
    summary = summarize(per_rank, 4)
    (row,) = summary.rows
    assert row.signature == leaky.cycles[0].signature
    assert row.bytes_by_rank == {0: leaky.total_bytes, 2: leaky.total_bytes}
    assert row.ranks == (0, 2)
    assert summary.missing == (3,)
    assert summary.leaking_ranks == (0, 2)
    text = str(summary)
    assert "3 of 4 ranks reported" in text
    assert "missing: rank 3" in text
    assert row.signature in text
    assert "recursive-closure" in text
    data = json.loads(json.dumps(summary.to_dict()))
    assert data["missing"] == [3]
    assert data["rows"][0]["bytes_by_rank"] == {"0": leaky.total_bytes, "2": leaky.total_bytes}


def test_gather_outside_a_group_and_check_leaks_gather() -> None:
    """With no process group, gather_summary and check_leaks(gather=True) summarise this process."""
    _, leaky = run_demo()
    summary = gather_summary([leaky, leaky])
    assert summary is not None
    (row,) = summary.rows
    assert row.bytes_by_rank == {0: 2 * leaky.total_bytes}
    assert sum(row.occurrences_by_rank.values()) == 2 * leaky.cycles[0].occurrences
    with check_leaks(gather=True) as check:
        pass
    assert check.summary is not None
    assert not check.summary.found
    assert check.summary.ranks == (0,)


def test_gather_rejects_what_it_cannot_read() -> None:
    """A value that is no report, check or monitor is a usage error, not a silent empty row."""
    with pytest.raises(UsageError, match="gather_summary"):
        gather_summary(42)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_shipped_pipelining_no_false_alarm(two_ranks: Launch, schedule: str) -> None:
    """torch 2.13's pipelining as shipped leaves no heavy cyclic garbage on any rank."""
    results = two_ranks.scenario(f"{schedule}:shipped")
    reports = _reports(results)
    for rank, report in enumerate(reports):
        assert (report.run.rank, report.run.world_size) == (rank, 2)
        assert not report.found, report.render("text")
    summary = results[0]["summary"]
    assert results[1]["summary"] is None
    assert not summary.found
    _assert_summary_is_union(summary, reports)


@pytest.mark.parametrize("schedule", SCHEDULES_FULL_BACKWARD)
def test_prefix_stage_backward_found_on_every_rank(two_ranks: Launch, schedule: str) -> None:
    """The pre-fix stage_backward leaks on every rank: named, cut at the self-reference, sized."""
    results = two_ranks.scenario(f"{schedule}:prefix")
    reports = _reports(results)
    for rank, (report, result) in enumerate(zip(reports, results, strict=True)):
        assert report.run.rank == rank
        (cycle,) = report.cycles
        assert cycle.pattern == "recursive-closure"
        assert "extract_tensors_with_grads" in cycle.summary
        assert "stage_output_tensors" in cycle.summary
        assert cycle.cut is not None
        assert [e.name for e in cycle.cut.edges] == ["cell_contents"]
        assert "`extract_tensors_with_grads` in `stage_backward`" in cycle.cut.description
        # Each backward of each microbatch made one cycle; bytes are what collecting freed.
        stages = 1 if schedule != "interleaved" else 2
        assert cycle.occurrences == 4 * stages
        assert result["activations_freed"]
        assert result["activation_bytes"] > 0
        assert report.total_bytes == result["freed_bytes"]
    assert len({r.cycles[0].signature for r in reports}) == 1, "one leak: one signature everywhere"
    summary = results[0]["summary"]
    _assert_summary_is_union(summary, reports)
    assert summary.leaking_ranks == (0, 1)
    assert "recursive-closure" in results[0]["summary_text"]


def test_prefix_split_backward_param_groups_found_on_every_rank(two_ranks: Launch) -> None:
    """Zero-bubble's pre-fix split backward: a parameter group's intermediates hold its hooks."""
    results = two_ranks.scenario("zerobubble:prefix-split")
    reports = _reports(results)
    for rank, (report, result) in enumerate(zip(reports, results, strict=True)):
        assert report.run.rank == rank
        (cycle,) = report.cycles
        assert cycle.pattern == "node-hook-loop"
        names = {e.name for e in cycle.edges}
        assert "['intermediates']" in names
        assert "cell_contents" in names, "the hook's closure holds the group"
        assert any(e.name == "['grads']" for p in cycle.holder_paths for e in p.edges)
        assert cycle.cut is not None
        assert report.total_bytes == result["freed_bytes"] > 0
        assert result["activations_freed"], "every saved gradient was freed by collecting"
    summary = results[0]["summary"]
    _assert_summary_is_union(summary, reports)
    assert summary.leaking_ranks == (0, 1)


def test_crashed_rank_is_reported_missing(two_ranks: Launch) -> None:
    """A rank that dies before gathering is listed as missing; rank 0 does not wait forever."""
    first = two_ranks.results[0]
    assert two_ranks.returncodes == [0, 3], "\n".join(two_ranks.logs)
    summary = first["missing"]["summary"]
    assert summary.ranks == (0,)
    assert summary.missing == (1,)
    assert "missing: rank 1" in first["missing"]["summary_text"]


def test_example_prints_the_summary_on_rank_zero(tmp_path: Path) -> None:
    """examples/pipelining_monitor.py --leak on 2 ranks, the monitor on: one table naming both."""
    pytest.importorskip("torch.distributed.pipelining")
    example = Path(__file__).parents[1] / "examples" / "pipelining_monitor.py"
    argv = [str(example), "--leak", "--steps", "2", "--gather-every", "2"]
    run = start_ranks(2, argv, tmp_path, deadline=150)
    assert run.returncodes == [0, 0], "\n".join(run.logs)
    text = run.logs[0]
    assert "whyalive summary: 2 of 2 ranks reported" in text
    (row,) = [line for line in text.splitlines() if "recursive-closure" in line and " 0,1 " in line]
    assert row.split()[-1] == "16", "2 ranks x 2 steps x 4 microbatches"
    assert "whyalive summary" not in run.logs[1], "only rank 0 prints the summary"


def test_four_ranks_gpipe_prefix_and_a_subgroup(tmp_path: Path) -> None:
    """Four ranks of GPipe with the pre-fix helper all leak; a 2-rank subgroup gathers alone."""
    pytest.importorskip("torch.distributed.pipelining")
    run = launch(4, ("gpipe:prefix", "subgroup"), tmp_path, deadline=150)
    assert run.returncodes == [0, 0, 0, 0], "\n".join(run.logs)
    results = run.scenario("gpipe:prefix")
    reports = _reports(results)
    assert all(len(r.cycles) == 1 and r.total_bytes > 0 for r in reports)
    summary = results[0]["summary"]
    _assert_summary_is_union(summary, reports)
    assert summary.leaking_ranks == (0, 1, 2, 3)
    assert all(result["summary"] is None for result in results[1:])
    sub = run.scenario("subgroup")
    assert [r["summary"] is None for r in sub] == [True, True, False, True]
    summary = sub[2]["summary"]
    assert (summary.world_size, summary.ranks, summary.missing) == (2, (2, 3), ())
    _assert_summary_is_union_of(summary, {2: sub[2]["report"], 3: sub[3]["report"]})
