"""Per-test overhead of ``pytest --whyalive`` on a real suite nobody here wrote: opt_einsum's.

Makes a throwaway virtual environment in a temporary directory (never in CI),
installs ``opt_einsum==3.4.0``, NumPy, pytest and this checkout of whyalive,
unpacks opt_einsum's sdist (its tests ship inside the package) and runs the
suite alternately without and with ``--whyalive``. Reports the CPU time
(user + sys, less disturbed than wall time by other work on a shared machine)
and wall time of each run, their medians, the ratio and the overhead per test.

Usage: ``python benchmarks/bench_real_suite.py [--rounds 3] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE = "opt_einsum==3.4.0"
REPO = Path(__file__).resolve().parent.parent


def _run(command: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout}{done.stderr}")
    return done.stdout


def _setup(work: Path) -> tuple[Path, Path]:
    print(f"setting up a throwaway environment in {work} (a minute)...", file=sys.stderr)
    _run([sys.executable, "-m", "venv", str(work / "venv")])
    python = work / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "numpy", "pytest", PACKAGE, str(REPO)])
    _run(
        [str(python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         PACKAGE, "-d", str(work / "sdist")]
    )  # fmt: skip
    (archive,) = (work / "sdist").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(work / "src", filter="data")
    (source,) = (work / "src").iterdir()
    return python, source


def _timed(python: Path, source: Path, extra: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, tests run) of one run of the suite."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = _run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "opt_einsum/tests"],
        cwd=source,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    counts = [int(n) for n in re.findall(r"(\d+) (?:passed|skipped|failed)", out)]
    return cpu, wall, sum(counts)


def main() -> None:
    """Set up, run the rounds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="set up in (and reuse) this directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        if (work / "venv").exists() and (work / "src").exists():
            python, source = work / "venv" / "bin" / "python", next((work / "src").iterdir())
        else:
            python, source = _setup(work)
        plain: list[tuple[float, float, int]] = []
        checked: list[tuple[float, float, int]] = []
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}/{args.rounds}...", file=sys.stderr)
            plain.append(_timed(python, source, []))
            checked.append(_timed(python, source, ["--whyalive"]))
    tests = plain[0][2]
    for name, runs in (("plain", plain), ("--whyalive", checked)):
        cells = ", ".join(f"{cpu:.1f} s cpu / {wall:.1f} s wall" for cpu, wall, _ in runs)
        print(f"{name:>11}: {cells}")
    cpu_plain = statistics.median(r[0] for r in plain)
    cpu_checked = statistics.median(r[0] for r in checked)
    wall_plain = statistics.median(r[1] for r in plain)
    wall_checked = statistics.median(r[1] for r in checked)
    print(f"{PACKAGE}: {tests} tests")
    print(
        f"median CPU {cpu_plain:.1f} s -> {cpu_checked:.1f} s ({cpu_checked / cpu_plain:.2f}x), "
        f"{(cpu_checked - cpu_plain) / tests * 1000:.2f} ms per test"
    )
    print(
        f"median wall {wall_plain:.1f} s -> {wall_checked:.1f} s ({wall_checked / wall_plain:.2f}x)"
    )


if __name__ == "__main__":
    main()
