"""Every garbage shape: ``check_leaks()`` against a collection of the same garbage alone.

Shapes: a ring, a tree with parent pointers (fan-out 3), a doubly linked list, a dense
random graph (10 references per object), the many-small-cycles heap of
``bench_analysis.py``, and one small cycle holding a list of small NumPy arrays (one
array per ten objects of the size: 10^5 arrays at 10^6). The first four are each one
strongly connected component holding one heavy object.

For every shape and size the garbage is made afresh for each measurement, and each round
measures, one after the other (rounds interleave the contenders, so load on a shared
machine hits all of them alike):

* the main figure: the whole ``check_leaks()`` around making the garbage (``begin``,
  capture, analysis, report, release), against ``gc.collect()`` of the same garbage with
  the rest of the heap frozen, i.e. what collecting that garbage alone costs;
* the earlier figure: capture, analysis and release without ``begin`` (as ``GarbageWatch``
  does it), against a plain ``gc.collect()`` of the whole heap; at small sizes that
  baseline mostly collects the heap, not the garbage, and flatters the ratio.

Ratios are medians over ``--repeats`` rounds, with the range over the rounds. Beside
them, the part of each median spent in the kernel (``kernel: ck/alone``, Linux): the
check's fresh scratch memory is faulted in and zeroed there (a collection has none),
and that part grows when the kernel has no huge pages to give. B/object is
the analysis's peak extra memory (tracemalloc, which also sees the C core's big arrays)
per captured object (per array too, for the arrays, which are no garbage themselves).

The main table runs with automatic collection off, so each shape is one collection. With
it on (``--automatic``), a block that makes many small cycles has them collected while it
runs, each collection analysed where it runs and the reports merged at the end: that
table times the block with ``check_leaks()`` around it against the same block without
(making the garbage included on both sides, as a user's run would see it).

Then ``check_leaks()`` itself on ring, tree and list garbage of 20,000 objects holding one
tensor, on a torch-sized heap, against one plain collection of the same garbage there.

    python benchmarks/bench_shapes.py [--sizes 10000 100000 1000000] [--payload numpy|torch] [--cpu]
                                      [--automatic]

``--cpu`` times with this thread's CPU time instead of wall-clock time: on a machine shared
with other jobs a collection's wall-clock time moves by half, its CPU time far less.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

# Before NumPy loads: idle OpenBLAS threads spin on the second of two cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import bench_analysis
from bench_analysis import load_payload_modules, make_garbage, now, timed, use_cpu_time

from whyalive import check_leaks
from whyalive.analysis import AnalysisOptions
from whyalive.capture import GarbageWatch
from whyalive.graph import core as graphcore
from whyalive.report.pipeline import analyze


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


class Holder:
    """Owner of a list of arrays, in a cycle with itself."""


def small_arrays(objects: int) -> None:
    holder = Holder()
    holder.me = holder  # type: ignore[attr-defined]
    numpy = bench_analysis.numpy
    make = numpy.zeros if numpy is not None else bytearray
    holder.arrays = [make(4) for _ in range(max(objects // 10, 1))]  # type: ignore[attr-defined]


SHAPES: dict[str, Callable[[int], None]] = {
    "ring": ring,
    "tree (parents)": tree,
    "doubly linked": doubly_linked,
    "dense random": dense_random,
    "many small": many_small,
    "small arrays": small_arrays,
}


def plain_collect(make: Callable[[int], None], size: int) -> float:
    make(size)
    return timed(gc.collect)


def kernel_time() -> float:
    """This thread's CPU time in the kernel (page faults, zeroing fresh memory); 0 where
    the platform does not tell it per thread."""
    thread = getattr(resource, "RUSAGE_THREAD", None) if resource is not None else None
    return resource.getrusage(thread).ru_stime if thread is not None else 0.0


def collect_alone(make: Callable[[int], None], size: int) -> tuple[float, float]:
    """A collection of the garbage alone (the rest of the heap frozen): its time, and the
    part of it in the kernel."""
    gc.freeze()
    try:
        make(size)
        kernel = kernel_time()
        elapsed = timed(gc.collect)
        return elapsed, kernel_time() - kernel
    finally:
        gc.unfreeze()


def whole_check(make: Callable[[int], None], size: int) -> tuple[float, float]:
    """``check_leaks()`` around making the garbage, everything but making it: its time,
    and the part of it in the kernel."""
    start, kernel = now(), kernel_time()
    with check_leaks(on_leak="ignore"):
        stop, paused = now(), kernel_time()
        make(size)
        resume, resumed = now(), kernel_time()
    return (stop - start) + (now() - resume), (paused - kernel) + (kernel_time() - resumed)


def whyalive_analysis(make: Callable[[int], None], size: int) -> tuple[float, int, str]:
    """Capture + graph + SCCs + structure/diagnosis + report + release, as check_leaks does."""
    watch = GarbageWatch()
    watch.begin()
    make(size)
    start = now()
    captured = watch.end()
    count = len(captured.objects)
    report = analyze(captured.objects, AnalysisOptions(progress_after=None))
    captured.release()
    elapsed = now() - start
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


def block_with_collection_on(make: Callable[[int], None], size: int, checked: bool) -> float:
    """The block that makes the garbage, automatic collection on, then one collection (what
    ``check_leaks()`` ends with), with or without ``check_leaks()`` around it."""
    gc.enable()
    try:
        start = now()
        if checked:
            with check_leaks(on_leak="ignore"):
                make(size)
        else:
            make(size)
            gc.collect()
        return now() - start
    finally:
        gc.disable()


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
        start = now()
        with check_leaks(on_leak="ignore"):
            stop = now()
            make(size)
            resume = now()
        end = now()
        ours.append((stop - start) + (end - resume))
    spent = statistics.median(ours)
    return spent / statistics.median(plain), spent / statistics.median(alone)


def _ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1e3:7.1f}ms"


def _ratio(ours: list[float], base: list[float]) -> str:
    """Median ratio of the medians, and the range of the rounds' own ratios."""
    rounds = [o / b for o, b in zip(ours, base, strict=True)]
    median = statistics.median(ours) / statistics.median(base)
    return f"{median:5.2f}x [{min(rounds):4.2f}-{max(rounds):4.2f}]"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--payload", choices=("torch", "numpy", "bytes"), default="numpy")
    parser.add_argument("--skip-heap", action="store_true", help="skip the check_leaks() table")
    parser.add_argument(
        "--automatic",
        action="store_true",
        help="also time blocks with automatic collection on (many collections per check)",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="time with this thread's CPU time, not wall-clock time"
    )
    args = parser.parse_args(argv)
    load_payload_modules(args.payload)
    if args.cpu:
        use_cpu_time()
    print(
        f"python {sys.version.split()[0]}, graph core: {graphcore.IMPLEMENTATION}, "
        f"payload: {type(_payload()).__name__}, median of {args.repeats} [range], "
        f"load {os.getloadavg()[0]:.1f}, {'CPU' if args.cpu else 'wall-clock'} time"
    )
    print(
        f"{'':<15} {'':>9} {'check_leaks() / garbage alone':^52} "
        f"{'earlier: analysis / full gc.collect':^36}"
    )
    print(
        f"{'shape':<15} {'objects':>9} {'alone':>9} {'check':>9} {'ratio':>16} "
        f"{'kernel: ck/alone':>15} {'collect':>9} {'whyalive':>9} {'ratio':>16} "
        f"{'B/object':>9}  reported as"
    )
    gc.collect()
    gc.disable()
    try:
        for name in args.shapes:
            make = SHAPES[name]
            for size in args.sizes:
                alone, check, plain, ours = [], [], [], []
                kernel_alone, kernel_check = [], []
                for _ in range(args.repeats):
                    elapsed, kernel = collect_alone(make, size)
                    alone.append(elapsed)
                    kernel_alone.append(kernel)
                    elapsed, kernel = whole_check(make, size)
                    check.append(elapsed)
                    kernel_check.append(kernel)
                    plain.append(plain_collect(make, size))
                    elapsed, count, what = whyalive_analysis(make, size)
                    ours.append(elapsed)
                per_object = peak_bytes_per_object(make, size)
                if make is small_arrays:  # the arrays are objects of the graph too
                    per_object, count = (
                        per_object * count / (count + size // 10),
                        count + size // 10,
                    )
                kernel = f"{_ms(kernel_check).strip()}/{_ms(kernel_alone).strip()}"
                print(
                    f"{name:<15} {count:>9} {_ms(alone)} {_ms(check)} {_ratio(check, alone)} "
                    f"{kernel:>15} {_ms(plain)} {_ms(ours)} {_ratio(ours, plain)} "
                    f"{per_object:9.0f}  {what}",
                    flush=True,
                )
        if args.automatic:
            print("\nautomatic collection on: block with check_leaks() / the block alone")
            for name in args.shapes:
                for size in args.sizes:
                    alone, check = [], []
                    for _ in range(args.repeats):
                        alone.append(block_with_collection_on(SHAPES[name], size, False))
                        check.append(block_with_collection_on(SHAPES[name], size, True))
                    print(
                        f"{name:<15} {size:>9} {_ms(alone)} {_ms(check)} {_ratio(check, alone)}",
                        flush=True,
                    )
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
