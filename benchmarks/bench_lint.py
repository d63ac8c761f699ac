"""Time `whyalive lint` against ruff and flake8 on the same tree, side by side.

    python benchmarks/bench_lint.py [TREE] [--repeat 3] [--jobs N] [--without flake8]

TREE defaults to the installed torch package. Every tool runs as a subprocess at its own
defaults on the machine's cores, in turns: each round runs all of them once, in a rotating
order, so a change in the machine's load hits them alike; the table gives medians (and the
range) of wall and CPU time, files per second, and each tool's wall time over ruff's.
`whyalive lint` runs as shipped (it parses only files whose text could hold a finding) and
with `--check-syntax` (every file parsed). ruff runs at its defaults without a cache
(`--no-cache`, the work a first run does), with its cache filled by an untimed run before
(what it does on a second run over unchanged files), and with `--select ALL` (no cache);
flake8 with its default plugins (E, F, W, C90). Tools that are not installed, or named with
`--without`, are left out. The load average is printed before and after, since timings on a
shared machine are only comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def _tools(tree: str, jobs: int | None, cache: str) -> dict[str, list[str]]:
    lint = [sys.executable, "-m", "whyalive", "lint", "--isolated", tree]
    if jobs is not None:
        lint[4:4] = ["--jobs", str(jobs)]
    tools = {"whyalive lint": lint, "whyalive lint --check-syntax": [*lint, "--check-syntax"]}
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if Path(ruff).exists():
        base = [ruff, "check", "--isolated", "--exit-zero", "-q"]
        tools["ruff, no cache"] = [*base, "--no-cache", tree]
        tools["ruff, its cache"] = [*base, "--cache-dir", cache, tree]
        tools["ruff --select ALL"] = [*base, "--no-cache", "--select", "ALL", tree]
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
    parser.add_argument(
        "--without", action="append", default=[], help="leave out tools whose name starts so"
    )
    args = parser.parse_args()
    tree = args.tree or _default_tree()
    files = sum(1 for _ in Path(tree).rglob("*.py"))
    with tempfile.TemporaryDirectory() as cache:
        tools = {
            name: argv
            for name, argv in _tools(tree, args.jobs, cache).items()
            if not any(name.startswith(prefix) for prefix in args.without)
        }
        if "ruff, its cache" in tools:
            _time(tools["ruff, its cache"])  # fills the cache
        walls, cpus = _rounds(tools, args.repeat, tree, files)
    ours = statistics.median(walls["whyalive lint"])
    ruff = statistics.median(walls["ruff, no cache"]) if "ruff, no cache" in walls else None
    print(f"\n{'tool':30} {'wall s':>16} {'cpu s':>8} {'files/s':>8} {'/ ours':>7} {'/ ruff':>7}")
    for name in tools:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        spread = f"{wall:.2f} ({min(walls[name]):.2f}-{max(walls[name]):.2f})"
        over_ruff = f"{wall / ruff:7.2f}" if ruff else ""
        print(
            f"{name:30} {spread:>16} {cpu:8.2f} {files / wall:8.0f} {wall / ours:7.2f} {over_ruff}"
        )
    return 0


def _rounds(
    tools: dict[str, list[str]], repeat: int, tree: str, files: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each tool, ``repeat`` rounds in rotating order."""
    names = list(tools)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    print(f"tree: {tree} ({files} files), {os.cpu_count()} cores")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for round_ in range(repeat):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = _time(tools[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return walls, cpus


if __name__ == "__main__":
    raise SystemExit(main())
