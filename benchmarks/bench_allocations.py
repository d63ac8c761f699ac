"""Block overhead of ``check_leaks(record_allocations=...)``: off, on (NumPy), on (torch).

Times a block that allocates arrays/tensors and leaves one cycle, with and
without recording, against the same block under a plain ``check_leaks()``
baseline; prints the per-block cost. Run: ``python benchmarks/bench_allocations.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from whyalive import check_leaks


def numpy_block(numpy: object, count: int) -> Callable[[], None]:
    """Allocate ``count`` arrays and leave them in one cycle."""

    def block() -> None:
        holder: list[object] = [numpy.ones(256) for _ in range(count)]  # type: ignore[attr-defined]
        holder.append(holder)

    return block


def torch_block(torch: object, count: int) -> Callable[[], None]:
    """Run ``count`` small ops and leave their outputs in one cycle."""

    def block() -> None:
        base = torch.randn(64, 64)  # type: ignore[attr-defined]
        holder: list[object] = [base * i for i in range(count)]
        holder.append(holder)

    return block


def plain_block(count: int) -> Callable[[], None]:
    """Allocate without any check (the block's own cost)."""

    def block() -> None:
        holder: list[object] = [bytearray(64) for _ in range(count)]
        holder.append(holder)

    return block


def per_block(fn: Callable[[], None], record: bool | None, repeat: int) -> float:
    """Median seconds of one block; ``record=None`` runs it with no check at all."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        if record is None:
            fn()
        else:
            with check_leaks(on_leak="ignore", record_allocations=record):
                fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print median block times with recording off and on."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200, help="allocations per block")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    rows: list[tuple[str, Callable[[], None]]] = []
    try:
        import numpy

        rows.append((f"numpy: {args.count} arrays", numpy_block(numpy, args.count)))
    except ImportError:
        pass
    try:
        import torch

        rows.append((f"torch: {args.count} ops", torch_block(torch, args.count)))
    except ImportError:
        pass
    print(f"{'block':<22} {'no check':>10} {'rec. off':>10} {'rec. on':>10} {'on - off':>10}")
    for name, fn in rows:
        per_block(fn, True, 2)  # warm-up: imports torch._dynamo once, fills caches
        bare = per_block(fn, None, args.repeat)
        off = per_block(fn, False, args.repeat)
        on = per_block(fn, True, args.repeat)
        print(
            f"{name:<22} {bare * 1e3:>8.2f}ms {off * 1e3:>8.2f}ms {on * 1e3:>8.2f}ms "
            f"{(on - off) * 1e3:>8.2f}ms"
        )


if __name__ == "__main__":
    main()
