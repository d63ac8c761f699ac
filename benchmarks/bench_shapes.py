"""Every garbage shape, side by side with a plain ``gc.collect()`` of the same garbage.

Shapes: a ring, a tree with parent pointers (fan-out 3), a doubly linked list, a dense
random graph (10 references per object) and the many-small-cycles heap of
``bench_analysis.py``. The first four are each one strongly connected component holding
one heavy object; the last is many small cycles. For every shape and size the garbage is
made afresh for each measurement: once freed by a plain collection, once captured,
analysed and freed as ``check_leaks()`` does. Ratios are medians over ``--repeats``.

Then one cycle holding N small arrays in one list (``--arrays``; 100,000 by default): N
heavy objects whose holder paths all leave one list. Then ``check_leaks()`` itself on
ring, tree and list garbage of 20,000 objects holding one tensor, on a torch-sized heap,
against one plain collection of the same garbage there.

    python benchmarks/bench_shapes.py [--sizes 10000 100000 1000000] [--payload numpy|torch]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import bench_analysis
from bench_analysis import load_payload_modules, make_garbage, timed

from whyalive import check_leaks
from whyalive.analysis import AnalysisOptions
from whyalive.capture import GarbageWatch
from whyalive.graph import core as graphcore
from whyalive.pipeline import analyze


def _payload() -> object:
    return bench_analysis._payload()


class Node:
    """Tree node with a parent pointer."""

    def __init__(self, parent: Node | None) -> None:
        self.parent = parent
        self.children: list[Node] = []


class Link:
    """Ring or list element."""


def ring(objects: int) -> None:
    first = current = Link()
    first.payload = _payload()  # type: ignore[attr-defined]
    for _ in range(objects - 1):
        following = Link()
        current.next = following  # type: ignore[attr-defined]
        current = following
    current.next = first  # type: ignore[attr-defined]


def tree(objects: int) -> None:
    # A node and its children list are two objects.
    root = Node(None)
    root.payload = _payload()  # type: ignore[attr-defined]
    nodes = [root]
    for index in range(1, objects // 2):
        parent = nodes[(index - 1) // 3]
        child = Node(parent)
        parent.children.append(child)
        nodes.append(child)


def doubly_linked(objects: int) -> None:
    head = current = Link()
    head.prev = None  # type: ignore[attr-defined]
    head.payload = _payload()  # type: ignore[attr-defined]
    for _ in range(objects - 1):
        following = Link()
        following.prev = current  # type: ignore[attr-defined]
        current.next = following  # type: ignore[attr-defined]
        current = following
    current.next = None  # type: ignore[attr-defined]


def dense_random(objects: int) -> None:
    rng = random.Random(objects)
    lists: list[list[Any]] = [[] for _ in range(objects)]
    picks = rng.choices(lists, k=10 * objects)
    for index, items in enumerate(lists):
        items.extend(picks[10 * index : 10 * index + 10])
        # One ring through all of them keeps the graph strongly connected.
        items.append(lists[(index + 1) % objects])
    lists[0].append(_payload())


def many_small(objects: int) -> None:
    make_garbage(objects, 100)


SHAPES: dict[str, Callable[[int], None]] = {
    "ring": ring,
    "tree (parents)": tree,
    "doubly linked": doubly_linked,
    "dense random": dense_random,
    "many small": many_small,
}


def arrays_in_a_list(objects: int) -> None:
    """One cycle (a dict that holds itself) holding ``objects`` small NumPy arrays in a list:
    every heavy object's holder path leaves the same list."""
    numpy: Any = sys.modules["numpy"]
    holder: dict[str, object] = {"arrays": [numpy.zeros(4) for _ in range(objects)]}
    holder["self"] = holder


def plain_collect(make: Callable[[int], None], size: int) -> float:
    make(size)
    return timed(gc.collect)


def whyalive_analysis(make: Callable[[int], None], size: int) -> tuple[float, int, str]:
    """Capture + graph + SCCs + structure/diagnosis + report + release, as check_leaks does."""
    watch = GarbageWatch()
    watch.begin()
    make(size)
    start = time.perf_counter()
    captured = watch.end()
    count = len(captured.objects)
    report = analyze(captured.objects, AnalysisOptions(progress_after=None))
    captured.release()
    elapsed = time.perf_counter() - start
    watch.finish()
    what = report.cycles[0].pattern if report.cycles else "-"
    return elapsed, count, what


def peak_bytes_per_object(make: Callable[[int], None], size: int) -> float:
    watch = GarbageWatch()
    watch.begin()
    make(size)
    captured = watch.end()
    count = len(captured.objects)
    tracemalloc.start()
    tracemalloc.reset_peak()
    analyze(captured.objects, AnalysisOptions(progress_after=None))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    captured.release()
    watch.finish()
    return peak / max(count, 1)


def check_leaks_on_heap(
    make: Callable[[int], None], size: int, repeats: int
) -> tuple[float, float]:
    """check_leaks() around making the garbage vs one plain collection of it (auto GC on):
    a full ``gc.collect()`` of the heap, and one of the garbage alone (the heap frozen)."""
    plain, alone, ours = [], [], []
    for _ in range(repeats):
        make(size)
        plain.append(timed(gc.collect))
        gc.freeze()
        make(size)
        alone.append(timed(gc.collect))
        gc.unfreeze()
        start = time.perf_counter()
        with check_leaks(on_leak="ignore"):
            stop = time.perf_counter()
            make(size)
            resume = time.perf_counter()
        end = time.perf_counter()
        ours.append((stop - start) + (end - resume))
    spent = statistics.median(ours)
    return spent / statistics.median(plain), spent / statistics.median(alone)


def arrays_row(sizes: list[int], repeats: int) -> None:
    """One cycle holding N small arrays in one list: N heavy objects, N holder paths."""
    load_payload_modules("numpy")
    print("\none cycle holding N small arrays (float64[4]) in a list")
    for size in sizes:
        plain, ours = [], []
        for _ in range(repeats):
            plain.append(plain_collect(arrays_in_a_list, size))
            ours.append(whyalive_analysis(arrays_in_a_list, size)[0])
        p, w = statistics.median(plain), statistics.median(ours)
        print(f"{'arrays in list':<15} {size:>9} {p * 1e3:9.1f}ms {w * 1e3:8.1f}ms {w / p:5.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--payload", choices=("torch", "numpy", "bytes"), default="numpy")
    parser.add_argument("--skip-heap", action="store_true", help="skip the check_leaks() table")
    parser.add_argument(
        "--arrays",
        type=int,
        nargs="*",
        default=[100_000],
        help="sizes of the 'one cycle holding N small arrays in a list' row (none: skip it)",
    )
    args = parser.parse_args(argv)
    load_payload_modules(args.payload)
    print(
        f"python {sys.version.split()[0]}, graph core: {graphcore.IMPLEMENTATION}, "
        f"payload: {type(_payload()).__name__}, median of {args.repeats}"
    )
    print(
        f"{'shape':<15} {'objects':>9} {'gc.collect':>11} {'whyalive':>10} {'ratio':>6} "
        f"{'B/object':>9}  reported as"
    )
    gc.collect()
    gc.disable()
    try:
        for name in args.shapes:
            make = SHAPES[name]
            for size in args.sizes:
                plain, ours = [], []
                for _ in range(args.repeats):
                    plain.append(plain_collect(make, size))
                    elapsed, count, what = whyalive_analysis(make, size)
                    ours.append(elapsed)
                p, w = statistics.median(plain), statistics.median(ours)
                per_object = peak_bytes_per_object(make, size)
                print(
                    f"{name:<15} {count:>9} {p * 1e3:9.1f}ms {w * 1e3:8.1f}ms {w / p:5.2f}x "
                    f"{per_object:9.0f}  {what}",
                    flush=True,
                )
        if args.arrays:
            arrays_row(args.arrays, args.repeats)
    finally:
        gc.enable()
    if args.skip_heap:
        return
    load_payload_modules("torch")
    heap = len(gc.get_objects())
    print(f"\ncheck_leaks() vs one gc.collect() of the same 20,000-object garbage, heap {heap}")
    print(f"{'shape':<15} {'full heap':>9} {'garbage alone':>14}")
    for name in ("ring", "tree (parents)", "doubly linked"):
        full, alone = check_leaks_on_heap(SHAPES[name], 20_000, 5)
        print(f"{name:<15} {full:8.2f}x {alone:13.2f}x", flush=True)


if __name__ == "__main__":
    main()
