"""Per-test overhead of ``pytest --whyalive`` on a torch-sized heap, vs the PyTorch-style helper.

Writes a suite of N tests (default 240) whose conftest imports torch, runs it
with and without ``--whyalive`` in subprocesses, and times each test's whole
protocol (setup, call, teardown) with an outermost hook wrapper. Overhead is
the median over tests of (time with --whyalive) - (time without), paired by
test id. The PyTorch pipelining tests' helper does
``gc.collect(); gc.set_debug(SAVEALL); ...; gc.collect()`` per use: its cost is
timed in one subprocess on the same heap (torch imported, same extra objects).

Usage: ``python benchmarks/bench_plugin.py [--tests 240] [--rounds 2] [--baseline-src DIR]``
(``--baseline-src``: the ``src`` directory of another whyalive checkout, its C core built
in place, timed the same way beside this one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CONFTEST = """
import gc
import json
import os
import time

import pytest
import torch

# Pad the heap to about the size of a real torch test session (~175k objects).
_BALLAST = [{"k": [i, str(i)]} for i in range(int(os.environ.get("BENCH_BALLAST", "0")))]
_TIMES = {}


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        _TIMES[item.nodeid] = time.perf_counter() - start


def pytest_sessionfinish(session):
    out = os.environ["BENCH_OUT"]
    with open(out, "w") as handle:
        json.dump({"times": _TIMES, "heap": len(gc.get_objects())}, handle)


@pytest.fixture
def weights():
    return torch.zeros(64, 64)
"""

TESTS = """
import torch


class Node:
    def __init__(self):
        self.me = self  # a light cycle: no heavy object, never reported


def test_tensor_{i}(weights):
    assert float((weights + 1).sum()) == 64 * 64


def test_light_cycle_{i}():
    Node()
    assert torch.ones(3).sum() == 3


def test_plain_{i}():
    assert sum(range(100)) == 4950
"""

HELPER = """
import gc, os, statistics, time, torch
_BALLAST = [{"k": [i, str(i)]} for i in range(int(os.environ.get("BENCH_BALLAST", "0")))]
times = []
for _ in range(15):
    start = time.perf_counter()
    gc.collect()
    old = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    x = torch.zeros(8)  # the checked block
    gc.collect()
    gc.set_debug(old)
    del gc.garbage[:]
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1e3, len(gc.get_objects()))
"""


def run_suite(folder: Path, flag: bool, ballast: int, src: Path | None = None) -> dict[str, object]:
    out = folder / f"times-{int(flag)}.json"
    env = {"BENCH_OUT": str(out), "BENCH_BALLAST": str(ballast), "PATH": "/usr/bin:/bin"}
    if src is not None:  # another whyalive checkout's src/, its C core built in place
        env["PYTHONPATH"] = str(src)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if flag:
        argv.append("--whyalive")
    subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=240, help="number of tests (multiple of 3)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode")
    parser.add_argument("--ballast", type=int, default=0, help="extra dicts on the heap")
    parser.add_argument("--baseline-src", type=Path, help="src/ of a whyalive checkout to compare")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
        body = "".join(TESTS.format(i=i) for i in range(args.tests // 3))
        (folder / "test_many.py").write_text(body)
        plain: dict[str, list[float]] = {}
        checked: dict[str, list[float]] = {}
        baseline: dict[str, list[float]] = {}
        modes = [(False, plain, None), (True, checked, None)]
        if args.baseline_src is not None:
            modes.append((True, baseline, args.baseline_src))
        heap = 0
        for _ in range(args.rounds):
            for flag, into, src in modes:
                data = run_suite(folder, flag, args.ballast, src)
                heap = int(data["heap"])  # type: ignore[call-overload]
                for nodeid, seconds in data["times"].items():  # type: ignore[attr-defined]
                    into.setdefault(nodeid, []).append(seconds)
        helper = subprocess.run(
            [sys.executable, "-c", HELPER],
            env={"BENCH_BALLAST": str(args.ballast), "PATH": "/usr/bin:/bin"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    per_test = [(min(checked[n]) - min(plain[n])) * 1e3 for n in plain if n in checked]
    base = statistics.median(min(v) for v in plain.values()) * 1e3
    print(f"tests: {len(per_test)}, heap at session end: {heap} objects (torch imported)")
    print(f"median test time without --whyalive: {base:.3f} ms")
    print(
        f"per-test overhead of --whyalive: median {statistics.median(per_test):.3f} ms, "
        f"p90 {statistics.quantiles(per_test, n=10)[-1]:.3f} ms"
    )
    if baseline:
        before = [(min(baseline[n]) - min(plain[n])) * 1e3 for n in plain if n in baseline]
        p90 = statistics.quantiles(before, n=10)[-1]
        print(
            f"per-test overhead of --whyalive from {args.baseline_src}: median "
            f"{statistics.median(before):.3f} ms, p90 {p90:.3f} ms"
        )
    print(
        f"PyTorch-style helper (collect, SAVEALL, collect) on a {helper[1]}-object heap: "
        f"median {float(helper[0]):.3f} ms per use"
    )


if __name__ == "__main__":
    main()
