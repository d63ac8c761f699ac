"""A whole suite under ``pytest --whyalive``: 2,000 trivial tests and 200 that make 10 MB tensors.

Writes the suite (its conftest imports torch; half the tensor tests run a backward
pass) to a temporary directory and runs it in subprocesses, interleaved: without
the plugin, with ``--whyalive`` from this checkout, and, given ``--baseline-src DIR``
(the ``src`` directory of another whyalive checkout, its C core built in place),
with ``--whyalive`` from that one. Reports the CPU time (user + sys) and wall time
of each run, the medians and the overheads per test. No test leaks: every run must
pass them all.

Usage: ``python benchmarks/bench_plugin_suite.py [--rounds 5] [--baseline-src DIR]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIVIAL = 2000
TENSORS = 200
ELEMENTS = 10 * 1024 * 1024 // 4  # float32: 10 MiB

CONFTEST = """
import torch

torch.set_num_threads(1)
"""

TRIVIAL_TEST = """
def test_trivial_{i}():
    assert {i} + 1 > {i}
"""

TENSOR_TEST = """
def test_tensor_{i}():
    x = torch.randn({elements}, requires_grad={grad})
    y = (x * 2).sum()
    if x.requires_grad:
        y.backward()
        assert x.grad is not None
    assert x.numel() == {elements}
"""


def write_suite(folder: Path) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_trivial.py").write_text(
        "".join(TRIVIAL_TEST.format(i=i) for i in range(TRIVIAL))
    )
    body = "".join(
        TENSOR_TEST.format(i=i, elements=ELEMENTS, grad=i % 2 == 0) for i in range(TENSORS)
    )
    (folder / "test_tensors.py").write_text("import torch\n" + body)


def run(folder: Path, plugin: str | None, baseline_src: Path | None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run; ``plugin`` None, "this" or "baseline"."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if plugin == "baseline" and baseline_src is not None:
        env["PYTHONPATH"] = str(baseline_src)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if plugin is not None:
        argv.append("--whyalive")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or f"{TRIVIAL + TENSORS} passed" not in done.stdout:
        sys.exit(f"the suite did not pass ({plugin}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, help="src/ of another whyalive checkout")
    args = parser.parse_args()
    modes: list[str | None] = [None, "this"]
    if args.baseline_src is not None:
        modes.append("baseline")
    results: dict[str | None, list[tuple[float, float]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_suite(folder)
        for _ in range(args.rounds):
            for mode in modes:
                results[mode].append(run(folder, mode, args.baseline_src))
    tests = TRIVIAL + TENSORS
    plain_cpu = statistics.median(c for c, _ in results[None])
    plain_wall = statistics.median(w for _, w in results[None])
    for mode in modes:
        label = {None: "plain", "this": "--whyalive", "baseline": "--whyalive (baseline)"}[mode]
        cpu = statistics.median(c for c, _ in results[mode])
        wall = statistics.median(w for _, w in results[mode])
        runs = ", ".join(f"{c:.1f}/{w:.1f}" for c, w in results[mode])
        print(
            f"{label:>22}: median {cpu:.1f} s CPU ({cpu / plain_cpu:.3f}x), {wall:.1f} s wall "
            f"({wall / plain_wall:.3f}x), {(cpu - plain_cpu) / tests * 1e3:+.2f} ms CPU per test"
            f"  [runs cpu/wall: {runs}]"
        )


if __name__ == "__main__":
    main()
