"""Overhead and outcomes of ``pytest --whyalive`` on real suites nobody here wrote.

Makes a throwaway virtual environment in a temporary directory (never in CI),
installs the suite's requirements, pytest and this checkout of whyalive, and
runs the suite alternately without and with ``--whyalive`` (same options, no
xdist, ``-p no:randomly``). Reports the CPU time of the pytest process (user +
sys, less disturbed than wall time by other work on a shared machine; BLAS
and OpenMP run one thread, see ``SINGLE_THREADED``) and the wall time of each
run, their medians and ratios, the pass/fail/skip counts of both, and every
test whose outcome differs (read from ``--junitxml``).

Suites:

* ``opt_einsum``: ``opt_einsum==3.4.0`` and NumPy; the tests ship in its sdist.
* ``kornia``: the subset tests/color, tests/filters, tests/losses with
  ``torch==2.13.0``. kornia's sdist and wheel ship no tests, so ``--source``
  names a checkout of its repository; the checkout is copied and its kornia is
  imported from the copy (its conftest sits at the root).

Usage: ``python benchmarks/bench_real_suite.py [--suite opt_einsum|kornia]
[--source DIR] [--rounds 3] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Idle BLAS and OpenMP worker threads spin-wait for work, burning CPU in
# proportion to how busy the rest of the machine is; one thread each keeps the
# CPU figures about the suite and the plugin, not the load of the machine.
SINGLE_THREADED = dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "1")


@dataclass(frozen=True)
class Suite:
    """What to install for a suite, and which tests of it to run."""

    requirements: tuple[str, ...]
    tests: tuple[str, ...]
    sdist: str | None = None  # where the tests come from when no --source is given
    pytest_args: tuple[str, ...] = ()


SUITES = {
    "opt_einsum": Suite(
        requirements=("numpy", "opt_einsum==3.4.0"),
        tests=("opt_einsum/tests",),
        sdist="opt_einsum==3.4.0",
    ),
    "kornia": Suite(
        requirements=("torch==2.13.0", "numpy", "packaging", "kornia_rs"),
        tests=("tests/color", "tests/filters", "tests/losses"),
        pytest_args=("-o", "addopts="),  # its ini adds -v and colour
    ),
}


@dataclass(frozen=True)
class Run:
    """One run of a suite: its times and each test's outcome."""

    cpu: float
    wall: float
    outcomes: dict[str, str]


def _run(command: list[str], cwd: Path | None = None) -> str:
    env = {**os.environ, **SINGLE_THREADED}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout}{done.stderr}")
    return done.stdout


def _setup(work: Path, suite: Suite, source: Path | None) -> tuple[Path, Path]:
    print(f"setting up a throwaway environment in {work} (minutes)...", file=sys.stderr)
    _run([sys.executable, "-m", "venv", str(work / "venv")])
    python = work / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q"]
    _run([*pip, "pytest", *suite.requirements])
    _run([*pip, "--no-deps", str(REPO)])
    if source is not None:
        shutil.copytree(source, work / "src" / source.name, ignore=shutil.ignore_patterns(".git"))
    else:
        assert suite.sdist is not None
        _run(
            [str(python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             suite.sdist, "-d", str(work / "sdist")]
        )  # fmt: skip
        (archive,) = (work / "sdist").glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work / "src", filter="data")
    (unpacked,) = (work / "src").iterdir()
    return python, unpacked


def _outcomes(junit: Path) -> dict[str, str]:
    """Each test's outcome (passed, failure, error, skipped) from a JUnit XML file."""
    outcomes = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        # A test failing in call and erroring in teardown has two entries: keep the worst.
        outcomes[name] = tags[0] if tags else outcomes.get(name, "passed")
    return outcomes


def _timed(python: Path, source: Path, suite: Suite, extra: list[str], junit: Path) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    _run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         *suite.pytest_args, f"--junitxml={junit}", *extra, *suite.tests],
        cwd=source,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(cpu, wall, _outcomes(junit))


def _counts(run: Run) -> str:
    counts = Counter(run.outcomes.values())
    return ", ".join(f"{counts[kind]} {kind}" for kind in ("passed", "failure", "error", "skipped"))


def _print_figures(name: str, plain: list[Run], checked: list[Run]) -> None:
    for label, runs in (("plain", plain), ("--whyalive", checked)):
        cells = ", ".join(f"{r.cpu:.1f} s cpu / {r.wall:.1f} s wall" for r in runs)
        print(f"{label:>11}: {cells}")
    for number, (p, c) in enumerate(zip(plain, checked, strict=True), start=1):
        print(f"     pair {number}: cpu {c.cpu / p.cpu:.2f}x, wall {c.wall / p.wall:.2f}x")
    tests = len(plain[0].outcomes)
    print(f"{name}: {tests} tests; without: {_counts(plain[0])}; with: {_counts(checked[0])}")
    differing = sorted(
        test
        for runs in zip(plain, checked, strict=True)
        for test in runs[0].outcomes
        if runs[0].outcomes[test] != runs[1].outcomes.get(test)
    )
    for test in dict.fromkeys(differing):
        print(f"  outcome differs: {test}")
    cpu_plain = statistics.median(r.cpu for r in plain)
    cpu_checked = statistics.median(r.cpu for r in checked)
    wall_plain = statistics.median(r.wall for r in plain)
    wall_checked = statistics.median(r.wall for r in checked)
    print(
        f"median CPU {cpu_plain:.1f} s -> {cpu_checked:.1f} s ({cpu_checked / cpu_plain:.2f}x), "
        f"{(cpu_checked - cpu_plain) / tests * 1000:.2f} ms per test"
    )
    print(
        f"median wall {wall_plain:.1f} s -> {wall_checked:.1f} s ({wall_checked / wall_plain:.2f}x)"
    )


def main() -> None:
    """Set up, run the rounds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="opt_einsum")
    parser.add_argument("--source", type=Path, help="a checkout of the suite's repository")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="set up in (and reuse) this directory")
    args = parser.parse_args()
    suite = SUITES[args.suite]
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        if (work / "venv").exists() and (work / "src").exists():
            python, source = work / "venv" / "bin" / "python", next((work / "src").iterdir())
        elif suite.sdist is None and args.source is None:
            parser.error(f"--suite {args.suite} needs --source (its PyPI packages ship no tests)")
        else:
            python, source = _setup(work, suite, args.source)
        # One unmeasured run first: compiling bytecode and warming caches would
        # otherwise be charged to whichever run comes first.
        print("warm-up run...", file=sys.stderr)
        _timed(python, source, suite, [], Path(scratch) / "warm.xml")
        plain: list[Run] = []
        checked: list[Run] = []
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}/{args.rounds}...", file=sys.stderr)
            plain.append(_timed(python, source, suite, [], Path(scratch) / "plain.xml"))
            checked.append(
                _timed(python, source, suite, ["--whyalive"], Path(scratch) / "checked.xml")
            )
    _print_figures(args.suite, plain, checked)


if __name__ == "__main__":
    main()
