"""explain(obj) on a torch-sized heap vs one full gc.collect() and objgraph.find_backref_chain.

Run: ``.venv/bin/python benchmarks/bench_explain.py [--repeat N]``. Imports torch
(about 175k tracked objects) when installed, then times, best of N:

* one full ``gc.collect()`` of that heap (the yardstick of the target <= 3x);
* ``whyalive.explain`` of a tensor held by a module global, by a class
  attribute, and at the end of a 6-deep chain of containers;
* ``objgraph.find_backref_chain`` for the same objects (when objgraph is
  installed), which scans the heap once per visited node.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import types
from collections.abc import Callable

import whyalive


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Build the scenarios, time each tool on them, print one line per scenario."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch

        def make() -> object:
            return torch.ones(256)
    except ImportError:
        torch = None

        def make() -> object:
            return bytearray(1 << 20)

    module = types.ModuleType("bench_holders")
    sys.modules["bench_holders"] = module
    module.CACHE = {"weights": make()}
    holder_class = type("Registry", (), {"table": make()})
    module.Registry = holder_class
    chain: object = make()
    deep = chain
    for _ in range(6):
        chain = [chain]
    module.CHAIN = chain
    scenarios = {
        "module global": lambda: module.CACHE["weights"],
        "class attribute": lambda: holder_class.table,
        "6-deep chain": lambda: deep,
    }
    print(f"python {sys.version.split()[0]}, torch {getattr(torch, '__version__', None)}")
    print(f"tracked objects: {len(gc.get_objects())}")
    collect = best(gc.collect, args.repeat)
    print(f"gc.collect() full: {collect * 1000:.1f} ms")
    try:
        import objgraph
    except ImportError:
        objgraph = None
    for name, target in scenarios.items():
        seconds = best(lambda t=target: whyalive.explain(t()), args.repeat)  # type: ignore[misc]
        line = f"{name:16s} explain {seconds * 1000:7.1f} ms = {seconds / collect:4.2f}x collect"
        if objgraph is not None:

            def backref(t: Callable[[], object] = target) -> object:
                # A module is objgraph's usual root predicate (its is_proper_module).
                return objgraph.find_backref_chain(t(), objgraph.is_proper_module)

            slow = best(backref, 1)
            line += f" | objgraph.find_backref_chain {slow * 1000:8.1f} ms"
        print(line)
    print(str(whyalive.explain(module.CACHE["weights"])))


if __name__ == "__main__":
    main()
