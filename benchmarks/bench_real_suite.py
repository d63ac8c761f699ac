"""Overhead and outcomes of ``pytest --whyalive`` on real suites nobody here wrote.

Makes a throwaway virtual environment in a temporary directory (never in CI),
installs the suite's requirements, pytest and this checkout of whyalive, and
runs the suite alternately without and with ``--whyalive`` (same options, no
xdist, ``-p no:randomly``). Reports the CPU time of the pytest process (user +
sys, less disturbed than wall time by other work on a shared machine; BLAS
and OpenMP run one thread, see ``SINGLE_THREADED``) and the wall time of each
run, their medians and ratios, the pass/fail/skip counts of both, and every
test whose outcome differs (read from ``--junitxml``). Whole runs differ by
more than the plugin costs when the machine is busy, so the ``--whyalive`` runs
also time the plugin's own work from inside (thread CPU time in its
checkpoints and analyses, see ``TIMER_PLUGIN``).

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


# Loaded into the --whyalive runs with -p: the main thread's CPU time inside the
# plugin's work (a test's bracket, its checkpoints, the analyses run inside the
# test's own collections, failing or listing the findings), and in the session.
TIMER_PLUGIN = """
import os
import time

import whyalive.pytest_plugin as plugin
from whyalive.pytest_plugin.watch import TestWatch

SPENT = [0.0]
STARTED = time.thread_time()


def _timed(function):
    def timed(*args, **kwargs):
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[0] += time.thread_time() - started

    return timed


for name in ("begin", "checkpoint", "_analyze"):
    setattr(TestWatch, name, _timed(getattr(TestWatch, name)))
plugin.act_on_leaks = _timed(plugin.act_on_leaks)


def pytest_unconfigure(config):
    with open(os.environ["WHYALIVE_BENCH_TIMES"], "w") as out:
        out.write(f"{SPENT[0]} {time.thread_time() - STARTED}")
"""


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
    in_plugin: tuple[float, float] | None = None  # (plugin, session) main-thread CPU


def _run(command: list[str], cwd: Path | None = None, **env_more: str) -> str:
    env = {**os.environ, **SINGLE_THREADED, **env_more}
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
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        # pytest may write a second entry for a test (an error in its teardown): a
        # passing entry never hides an earlier failing one.
        outcomes[name] = tags[0] if tags else outcomes.get(name, "passed")
    return outcomes


def _timed(python: Path, source: Path, suite: Suite, checked: bool, scratch: Path) -> Run:
    junit = scratch / f"{'checked' if checked else 'plain'}.xml"
    times = scratch / "times.txt"
    extra = ["--whyalive", "-p", "whyalive_bench_timer"] if checked else []
    (scratch / "whyalive_bench_timer.py").write_text(TIMER_PLUGIN)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    _run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         *suite.pytest_args, f"--junitxml={junit}", *extra, *suite.tests],
        cwd=source, PYTHONPATH=str(scratch), WHYALIVE_BENCH_TIMES=str(times),
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    in_plugin = None
    if checked:
        plugin_cpu, session_cpu = (float(word) for word in times.read_text().split())
        in_plugin = (plugin_cpu, session_cpu)
    return Run(cpu, wall, _outcomes(junit), in_plugin)


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
    inside = [r.in_plugin for r in checked if r.in_plugin is not None]
    plugin_cpu = statistics.median(p for p, _ in inside)
    share = statistics.median(p / (session - p) for p, session in inside)
    print(
        f"inside the plugin (median): {plugin_cpu:.2f} s CPU, {plugin_cpu / tests * 1000:.2f} ms "
        f"per test, {1 + share:.3f}x the rest of the session's main-thread CPU"
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
        _timed(python, source, suite, False, Path(scratch))
        plain: list[Run] = []
        checked: list[Run] = []
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}/{args.rounds}...", file=sys.stderr)
            plain.append(_timed(python, source, suite, False, Path(scratch)))
            checked.append(_timed(python, source, suite, True, Path(scratch)))
    _print_figures(args.suite, plain, checked)


if __name__ == "__main__":
    main()
