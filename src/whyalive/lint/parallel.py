"""Files linted in worker processes, one per core, for big trees.

Each file is independent (its own parse, scopes and facts), so the work splits by file; the
results come back in the order the files were given. Rules are looked up by code in the
worker: their checks are plain functions and lambdas, which do not pickle.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

__all__ = ["MIN_FILES_PER_WORKER", "available_cores", "map_in_workers", "worker_count"]

T = TypeVar("T")
R = TypeVar("R")

# Below this many files per extra process, starting it costs more than it saves.
MIN_FILES_PER_WORKER = 16


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def worker_count(jobs: int | None, files: int) -> int:
    """How many processes lint ``files`` files: ``jobs`` when given (``0`` or ``None``: one per
    available core), never more than the files can keep busy; 1 means in this process."""
    wanted = available_cores() if not jobs or jobs < 1 else jobs
    return max(1, min(wanted, files // MIN_FILES_PER_WORKER))


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` where it is safe (one thread, POSIX): the workers start with the rules already
    imported. Otherwise ``forkserver`` or ``spawn``, which fork no threads."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def map_in_workers(
    function: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    *,
    cost: Callable[[T], float] | None = None,
) -> list[R]:
    """``[function(item) for item in items]``, computed by ``workers`` processes (in this one
    when ``workers`` is 1, or when a worker dies or none can start: then everything is done
    here). With
    ``cost`` (an estimate per item), the costliest items go first, so no worker is left
    with a big one at the end; the results still come back in ``items``' order."""
    if workers <= 1:
        return [function(item) for item in items]
    order = list(range(len(items)))
    if cost is not None:
        order.sort(key=lambda i: -cost(items[i]))
    try:
        # The collector only costs time in a worker: linting leaves no cyclic garbage
        # (tests/test_lint_rules.py), so everything it makes dies by reference counting,
        # and the parse's allocations no longer set off collections (a tenth of the CPU).
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=_context(), initializer=gc.disable
        ) as pool:
            # Chunks amortise the round trips; small enough that the small items at the
            # end still even out the workers.
            chunk = max(1, min(32, len(items) // (workers * 8)))
            done = list(pool.map(function, [items[i] for i in order], chunksize=chunk))
    except (BrokenProcessPool, OSError):  # a worker died, or no processes can be made here
        return [function(item) for item in items]
    results: list[R | None] = [None] * len(items)
    for index, result in zip(order, done, strict=True):
        results[index] = result
    return results  # type: ignore[return-value]
