"""Full analysis vs a plain ``gc.collect()`` of the same garbage, side by side in one process.

Garbage shape: the seed's closure cycle (a nested function that calls itself, its cell,
and a captured list) plus filler cycles (two dicts that refer to each other). One seed
cycle in every ``--heavy-every`` holds a small tensor (or NumPy array without torch),
the rest hold light lists: most garbage in a real job is not tensors, and the analysis
still has to build the graph and find the cycles of all of it.

Also: ``check_leaks()`` with an empty body on a torch-sized heap vs one full collection,
and, when installed, ``torch.utils.viz._cycles.create_graph`` and ``refcycle``.

    python benchmarks/bench_analysis.py [--payload numpy|torch|bytes] [--sizes 10000 100000 1000000]

With ``--payload numpy`` (default) the process heap is small, so a plain collection
costs about what the garbage costs: the strict comparison. ``--payload torch`` imports
torch (a heap of ~170k objects), as in a real job.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from whyalive import check_leaks
from whyalive.capture import GarbageWatch
from whyalive.report.pipeline import analyze

torch: Any = None
numpy: Any = None


def _payload() -> object:
    if torch is not None:
        return torch.zeros(64)
    if numpy is not None:
        return numpy.zeros(64)
    return bytearray(1 << 20)


def load_payload_modules(payload: str) -> None:
    """Import only what the payload needs: torch makes the heap ~170k objects bigger."""
    global torch, numpy
    if payload == "torch":
        import torch as torch_module

        torch = torch_module
    if payload in ("torch", "numpy"):
        import numpy as numpy_module

        numpy = numpy_module


def make_seed_cycle(data: list[Any]) -> None:
    def extract(value: Any) -> Any:
        if isinstance(value, list) and value:
            return extract(value[0])
        return data

    extract(data)


def make_garbage(objects: int, heavy_every: int) -> int:
    """About ``objects`` garbage objects; returns how many seed cycles hold a heavy object."""
    made = 0
    heavy = 0
    index = 0
    while made < objects:
        if index % 2 == 0:
            holds_heavy = (index // 2) % heavy_every == 0
            make_seed_cycle([_payload()] if holds_heavy else [index])
            heavy += holds_heavy
            made += 4 + holds_heavy  # function, closure tuple, 2 cells... and the list
        else:
            a: dict[str, Any] = {}
            b = {"a": a}
            a["b"] = b
            made += 2
        index += 1
    return heavy


# What the benchmarks time with: wall-clock time, or this thread's CPU time (``--cpu``),
# which other jobs on a shared machine disturb far less.
clock: Callable[[], float] = time.perf_counter


def use_cpu_time() -> None:
    """Time everything with this thread's CPU time from now on."""
    global clock
    clock = time.thread_time


def now() -> float:
    return clock()


def timed(fn: Callable[[], object]) -> float:
    start = now()
    fn()
    return now() - start


def make_all_garbage(size: int, heavy_every: int) -> None:
    """Make the garbage; main() keeps automatic GC off so none of it is collected early."""
    assert not gc.isenabled(), "an automatic collection would free the garbage untimed"
    make_garbage(size, heavy_every)


def plain_collect(size: int, heavy_every: int) -> float:
    make_all_garbage(size, heavy_every)
    return timed(gc.collect)


def whyalive_analysis(size: int, heavy_every: int) -> tuple[float, int, int]:
    """Capture + graph + SCCs + diagnosis + report + release, as check_leaks does it."""
    watch = GarbageWatch()
    watch.begin()
    make_all_garbage(size, heavy_every)
    start = now()
    captured = watch.end()
    count = len(captured.objects)
    report = analyze(captured.objects)
    captured.release()
    elapsed = now() - start
    watch.finish()
    return elapsed, count, report.cycles[0].occurrences if report.cycles else 0


def peak_bytes_per_object(size: int, heavy_every: int) -> float:
    """Extra Python-heap memory of the analysis per garbage object (tracemalloc peak)."""
    watch = GarbageWatch()
    watch.begin()
    make_all_garbage(size, heavy_every)
    captured = watch.end()
    count = len(captured.objects)
    tracemalloc.start()
    tracemalloc.reset_peak()
    analyze(captured.objects)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    captured.release()
    watch.finish()
    return peak / max(count, 1)


def torch_create_graph(size: int, heavy_every: int) -> float | None:
    if torch is None:
        return None
    try:
        from torch.utils.viz._cycles import create_graph
    except ImportError:
        return None
    old = gc.get_debug()
    make_all_garbage(size, heavy_every)
    start = now()
    gc.set_debug(old | gc.DEBUG_SAVEALL)
    gc.collect()
    gc.set_debug(old)
    objects = gc.garbage[:]
    del gc.garbage[:]
    # A CPU build has no CUDA snapshot: give it a context and tensor filter of our own.
    create_graph(objects, context=lambda obj: None, filter=lambda obj: torch.is_tensor(obj))
    del objects
    gc.collect()
    return now() - start


def refcycle_garbage(size: int, heavy_every: int) -> float | None:
    try:
        import refcycle
    except ImportError:
        return None
    make_all_garbage(size, heavy_every)
    start = now()
    graph = refcycle.garbage()
    graph.strongly_connected_components()
    del graph
    gc.collect()
    return now() - start


def empty_check_on_big_heap(repeats: int) -> tuple[float, float, int]:
    """check_leaks() with an empty body vs one full gc.collect() on the current heap."""
    gc.collect()
    collects = [timed(gc.collect) for _ in range(repeats)]

    def empty() -> None:
        with check_leaks():
            pass

    checks = [timed(empty) for _ in range(repeats)]
    return statistics.median(checks), statistics.median(collects), len(gc.get_objects())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--heavy-every", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-others", action="store_true", help="skip torch/refcycle")
    parser.add_argument(
        "--payload",
        choices=("torch", "numpy", "bytes"),
        default="numpy",
        help="heavy object in the leaking cycles (torch also imports torch: a bigger heap)",
    )
    args = parser.parse_args(argv)
    load_payload_modules(args.payload)
    gc.disable()
    try:
        run(args)
    finally:
        gc.enable()


def run(args: argparse.Namespace) -> None:
    """Print the table: every tool measured on the same garbage, automatic GC off."""
    from whyalive.graph import core as graphcore

    print(
        f"python {sys.version.split()[0]}, graph core: {graphcore.IMPLEMENTATION}, "
        f"payload: {type(_payload()).__name__}, 1 heavy seed cycle in {args.heavy_every}"
    )
    print(
        f"{'objects':>9} {'gc.collect':>11} {'whyalive':>9} {'ratio':>6} "
        f"{'create_graph':>13} {'refcycle':>9} {'B/object':>9}"
    )
    gc.collect()
    for size in args.sizes:
        plain, ours = [], []
        for _ in range(args.repeats):
            plain.append(plain_collect(size, args.heavy_every))
            elapsed, count, found = whyalive_analysis(size, args.heavy_every)
            ours.append(elapsed)
        p, w = statistics.median(plain), statistics.median(ours)
        others = []
        for fn in (torch_create_graph, refcycle_garbage):
            # The others take tens of seconds at 10^6: measured up to 10^5.
            value = None if args.skip_others or size > 100_000 else fn(size, args.heavy_every)
            others.append(f"{value / p:12.1f}x" if value else f"{'-':>13}")
        per_object = peak_bytes_per_object(size, args.heavy_every)
        print(
            f"{count:>9} {p * 1e3:9.1f}ms {w * 1e3:7.1f}ms {w / p:5.2f}x "
            f"{others[0]} {others[1]:>9} {per_object:9.0f}   ({found} leaking cycles grouped)"
        )
    gc.enable()
    check, collect, heap = empty_check_on_big_heap(5)
    print(
        f"empty check_leaks() on a heap of {heap} objects: {check * 1e3:.2f}ms vs one "
        f"gc.collect() {collect * 1e3:.2f}ms = {check / collect:.3f}x"
    )


if __name__ == "__main__":
    main()
