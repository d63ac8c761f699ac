"""Files linted in worker processes give what one process gives, in the same order."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

import pytest

from whyalive.lint import command, lint_paths
from whyalive.lint.parallel import MIN_FILES_PER_WORKER, map_in_workers, worker_count

CASES = Path(__file__).parent / "lint_cases"


def _tree(root: Path) -> Path:
    """Forty files: every eval case, some twice, one that does not parse, one big."""
    sources = sorted(p for p in CASES.glob("*.py"))
    for index in range(40):
        source = sources[index % len(sources)].read_text(encoding="utf-8")
        (root / f"m{index:02d}.py").write_text(source, encoding="utf-8")
    (root / "m40_broken.py").write_text("def f(:\n", encoding="utf-8")
    (root / "m41_big.py").write_text(sources[0].read_text(encoding="utf-8") * 20)
    return root


def test_workers_give_the_same_findings(tmp_path: Path) -> None:
    """Two processes and one give identical findings (text, captures, fixes, advice)."""
    root = _tree(tmp_path)
    sources_one: dict[str, str] = {}
    sources_two: dict[str, str] = {}
    one = lint_paths([root], select="WAL,WAL9", jobs=1, sources=sources_one)
    two = lint_paths([root], select="WAL,WAL9", jobs=2, sources=sources_two)
    assert one == two
    assert [f.captures for f in one] == [f.captures for f in two]
    assert [f.edits for f in one] == [f.edits for f in two]
    assert [f.advice for f in one] == [f.advice for f in two]
    assert sources_one == sources_two
    assert any(f.code == "WAL003" for f in two)
    assert len({f.path for f in two}) > 30


def test_worker_count() -> None:
    """One process for small trees; never more processes than files can keep busy."""
    assert worker_count(None, MIN_FILES_PER_WORKER - 1) == 1
    assert worker_count(1, 10_000) == 1
    assert worker_count(3, 3 * MIN_FILES_PER_WORKER) == 3
    assert worker_count(8, 2 * MIN_FILES_PER_WORKER) == 2


def test_map_keeps_order_with_costs() -> None:
    """The costliest items go first, the results come back in the items' order."""
    items = list(range(50))
    assert map_in_workers(abs, items, 2, cost=lambda i: i % 7) == items


@pytest.mark.parametrize("value", ["-1", "two"])
def test_bad_jobs_is_a_usage_error(value: str) -> None:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    with pytest.raises(SystemExit) as raised:
        parser.parse_args(["--jobs", value, "x.py"])
    assert raised.value.code == 2


def _collector_enabled(_item: int) -> bool:
    return gc.isenabled()


def test_workers_lint_without_the_collector() -> None:
    """Workers turn the cyclic collector off (the lint makes no cyclic garbage, see
    test_lint_rules.py); this process keeps its own gc state."""
    before = gc.isenabled()
    assert map_in_workers(_collector_enabled, list(range(8)), 2) == [False] * 8
    assert gc.isenabled() == before
