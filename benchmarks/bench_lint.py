"""Time `whyalive lint` against ruff and flake8 on the same tree, side by side.

    python benchmarks/bench_lint.py [TREE] [--repeat 3] [--jobs N]

TREE defaults to the installed torch package. Every tool runs as a subprocess at its own
defaults on the machine's cores, without caches (ruff `--no-cache`), in turns: each round
runs all of them once, in a rotating order, so a change in the machine's load hits them
alike; the table gives medians of wall and CPU time and files per second. ruff is timed at
its default rule set and with `--select ALL`; flake8 with its default plugins
(E, F, W, C90). Tools that are not installed are left out. The load average is printed
before and after, since timings on a shared machine are only comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _default_tree() -> str:
    import torch  # only to find its installed sources

    return str(Path(torch.__file__).parent)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its workers) of one run."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, _children_cpu() - cpu


def _tools(tree: str, jobs: int | None) -> dict[str, list[str]]:
    lint = [sys.executable, "-m", "whyalive", "lint", "--isolated", tree]
    if jobs is not None:
        lint[4:4] = ["--jobs", str(jobs)]
    tools = {"whyalive lint": lint}
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if Path(ruff).exists():
        base = [ruff, "check", "--isolated", "--no-cache", "--exit-zero", "-q", tree]
        tools["ruff (defaults)"] = base
        tools["ruff --select ALL"] = [*base[:-1], "--select", "ALL", tree]
    try:
        import flake8  # noqa: F401
    except ImportError:
        pass
    else:
        tools["flake8 (E,F,W,C90)"] = [
            *(sys.executable, "-m", "flake8", "--select", "E,F,W,C90", "--exit-zero", "-q"),
            tree,
        ]
    return tools


def main() -> int:
    """Run every tool ``--repeat`` times in rotating order; print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None, help="passed to `whyalive lint`")
    args = parser.parse_args()
    tree = args.tree or _default_tree()
    files = sum(1 for _ in Path(tree).rglob("*.py"))
    tools = _tools(tree, args.jobs)
    names = list(tools)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    print(f"tree: {tree} ({files} files), {os.cpu_count()} cores")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for round_ in range(args.repeat):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = _time(tools[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ours = statistics.median(walls["whyalive lint"])
    print(f"\n{'tool':22} {'wall s':>8} {'cpu s':>8} {'files/s':>9} {'wall / ours':>12}")
    for name in names:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"{name:22} {wall:8.2f} {cpu:8.2f} {files / wall:9.0f} {wall / ours:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
