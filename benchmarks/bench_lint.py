"""Time `whyalive lint` against flake8 (default plugins only) on the same tree, side by side.

    python benchmarks/bench_lint.py [TREE]

TREE defaults to the installed torch package. Both run as subprocesses with their default
settings (flake8 uses all cores; whyalive lint uses one), so the ratio is what a user sees.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def _default_tree() -> str:
    import torch  # only to find its installed sources

    return str(Path(torch.__file__).parent)


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    """Run both linters once each and print seconds and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=None)
    tree = parser.parse_args().tree or _default_tree()
    files = sum(1 for _ in Path(tree).rglob("*.py"))
    lint = [
        sys.executable,
        "-c",
        "import sys; from whyalive.lint import command; import argparse;"
        " p = argparse.ArgumentParser(); command.add_arguments(p);"
        " sys.exit(command.run(p.parse_args(sys.argv[1:])))",
        "--select",
        "WAL",
        tree,
    ]
    flake8 = [sys.executable, "-m", "flake8", "--select", "E,F,W,C90", "--exit-zero", "-q", tree]
    whyalive_s = _time(lint)
    flake8_s = _time(flake8)
    print(f"tree: {tree} ({files} files)")
    print(f"whyalive lint  {whyalive_s:8.1f} s")
    print(f"flake8 E,F,W,C90 {flake8_s:6.1f} s")
    print(f"ratio flake8 / whyalive lint: {flake8_s / whyalive_s:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
