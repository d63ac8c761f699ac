"""Cost of the probe for uncollectable loops at the end of ``check_leaks()``, on a torch heap.

The probe (``pipeline.probe_block``) runs after the closing collection, with the
block's baseline frozen. It is timed from inside real ``check_leaks()`` blocks of
several shapes and compared, side by side in one process, with a plain full
``gc.collect()`` of the same heap (unfrozen, as a user's collection is). The heap is
torch's after importing it, plus a few models (about 300,000 objects).

Each probe is timed in wall-clock seconds and in CPU seconds of its thread
(``time.thread_time``), both against a full collection: on a shared, loaded machine
the wall clock of the one stretches differently from the other's; CPU time does not.

Shapes: a block that leaves nothing alive; one that keeps 100 tensors in a global
cache (alive, rooted: the probe must look and find nothing); one that builds a small
model and keeps it; one that leaks one tensor-hook loop; one that leaks 100.

    python benchmarks/bench_uncollectable.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import whyalive
import whyalive.check as check_module
from whyalive.report import pipeline

torch.set_num_threads(1)
MODELS = [nn.Sequential(*(nn.Linear(64, 64) for _ in range(8))) for _ in range(40)]
CACHE: dict[str, Any] = {}
KEPT: list[Any] = []


def nothing_left() -> None:
    x = torch.randn(256, 256, requires_grad=True)
    (x * 2).sum().backward()


def cache_100() -> None:
    CACHE.clear()
    for i in range(100):
        CACHE[f"t{i}"] = torch.randn(64, 64)


def keep_model() -> None:
    KEPT.clear()
    model = nn.Sequential(*(nn.Linear(128, 128) for _ in range(16)))
    model(torch.randn(8, 128)).sum().backward()
    KEPT.append(model)


def hook_loop() -> None:
    x = torch.randn(4096, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda grad: grad * y.sum())
    y.sum().backward()


def hook_loops_100() -> None:
    for _ in range(100):
        hook_loop()


SHAPES: dict[str, Callable[[], None]] = {
    "nothing left alive": nothing_left,
    "100 tensors kept in a global": cache_100,
    "a 16-layer model kept in a global": keep_model,
    "1 tensor-hook loop leaked": hook_loop,
    "100 tensor-hook loops leaked": hook_loops_100,
}


def timed_check(block: Callable[[], None]) -> tuple[float, float, bool, float]:
    """(probe seconds, whole check seconds, whether the report has loops, probe CPU
    seconds of this thread: what a shared machine's load does not stretch)."""
    spent = [0.0, 0.0]
    real = pipeline.probe_block

    def probe(*args: Any, **kwargs: Any) -> Any:
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began
            spent[1] += time.thread_time() - cpu

    check_module.probe_block = probe  # type: ignore[attr-defined]
    try:
        began = time.perf_counter()
        with whyalive.check_leaks(on_leak="ignore") as check:
            block()
        whole = time.perf_counter() - began
    finally:
        check_module.probe_block = real  # type: ignore[attr-defined]
    found = check.report is not None and bool(check.report.uncollectable)
    return spent[0], whole, found, spent[1]


def full_collection() -> tuple[float, float]:
    """(seconds, CPU seconds of this thread) of a full collection."""
    began, cpu = time.perf_counter(), time.thread_time()
    gc.collect()
    return time.perf_counter() - began, time.thread_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    for shape in SHAPES.values():  # warm up: imports, caches, parsed sources
        timed_check(shape)
    gc.collect()
    print(f"heap: {len(gc.get_objects()):,} objects (torch imported)")
    probes: dict[str, list[float]] = {name: [] for name in SHAPES}
    cpus: dict[str, list[float]] = {name: [] for name in SHAPES}
    checks: dict[str, list[float]] = {name: [] for name in SHAPES}
    found: dict[str, bool] = {}
    fulls: list[float] = []
    full_cpus: list[float] = []
    for _ in range(args.repeats):
        for name, shape in SHAPES.items():
            probe, whole, loops, cpu = timed_check(shape)
            probes[name].append(probe)
            cpus[name].append(cpu)
            checks[name].append(whole)
            found[name] = loops
            seconds, cpu = full_collection()
            fulls.append(seconds)
            full_cpus.append(cpu)
    full, full_cpu = statistics.median(fulls), statistics.median(full_cpus)
    print(
        f"full gc.collect() of the heap: median {full * 1e3:.1f} ms "
        f"({full_cpu * 1e3:.1f} ms of CPU)"
    )
    for name in SHAPES:
        probe = statistics.median(probes[name])
        cpu = statistics.median(cpus[name])
        whole = statistics.median(checks[name])
        print(
            f"{name:36s} probe {probe * 1e3:7.2f} ms = {probe / full:5.3f}x a full collection,"
            f" CPU {cpu / full_cpu:5.3f}x (whole check {whole * 1e3:7.2f} ms;"
            f" loops reported: {found[name]})"
        )


if __name__ == "__main__":
    main()
