"""explain(obj) on a torch-sized heap vs one full gc.collect() and objgraph.find_backref_chain.

Run: ``.venv/bin/python benchmarks/bench_explain.py [--repeat N] [--heap 500000]``.
Imports torch when installed (about 175k tracked objects), builds a small model, and
pads the heap with live objects up to ``--heap`` tracked objects (a training job's heap
of ~500k: parameters, optimizer state, data, configs). Then, in interleaved rounds:

* one full ``gc.collect()`` of that heap (the yardstick);
* ``whyalive.explain`` of a model parameter, a tensor held by a module global, by a
  class attribute, and at the end of a 6-deep chain of containers;

and prints the median of each, its ratio to the median collection and the range of the
rounds' own ratios. Last, ``objgraph.find_backref_chain`` for the same objects (when
objgraph is installed, once), which scans the heap once per visited node.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import types
from collections.abc import Callable

import whyalive


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Build the scenarios, time each tool on them, print one line per scenario."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--heap", type=int, default=500_000, help="tracked objects to reach")
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
    scenarios: dict[str, Callable[[], object]] = {}
    if torch is not None:
        model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(8)))
        module.MODEL = model
        scenarios["model parameter"] = lambda: model[3].weight
    scenarios.update(
        {
            "module global": lambda: module.CACHE["weights"],
            "class attribute": lambda: holder_class.table,
            "6-deep chain": lambda: deep,
        }
    )
    # Live padding: records of a job (dicts of lists), held by a module global.
    padding = max(args.heap - len(gc.get_objects()), 0)
    module.RECORDS = [{"id": i, "tags": [i]} for i in range(padding // 2)]
    gc.collect()
    print(f"python {sys.version.split()[0]}, torch {getattr(torch, '__version__', None)}")
    print(f"tracked objects: {len(gc.get_objects())}, load {os.getloadavg()[0]:.1f}")
    collects: list[float] = []
    times: dict[str, list[float]] = {name: [] for name in scenarios}
    for _ in range(args.repeat):
        collects.append(timed(gc.collect))
        for name, target in scenarios.items():
            times[name].append(timed(lambda t=target: whyalive.explain(t())))  # type: ignore[misc]
    collect = statistics.median(collects)
    print(f"gc.collect() full: {collect * 1000:.1f} ms (median of {args.repeat})")
    try:
        import objgraph
    except ImportError:
        objgraph = None
    for name, target in scenarios.items():
        seconds = statistics.median(times[name])
        rounds = [t / c for t, c in zip(times[name], collects, strict=True)]
        line = (
            f"{name:16s} explain {seconds * 1000:7.1f} ms = {seconds / collect:4.2f}x collect "
            f"[{min(rounds):.2f}-{max(rounds):.2f}]"
        )
        if objgraph is not None:

            def backref(t: Callable[[], object] = target) -> object:
                # A module is objgraph's usual root predicate (its is_proper_module).
                return objgraph.find_backref_chain(t(), objgraph.is_proper_module)

            slow = timed(backref)
            line += f" | objgraph.find_backref_chain {slow * 1000:8.1f} ms"
        print(line, flush=True)
    print(str(whyalive.explain(module.CACHE["weights"])))


if __name__ == "__main__":
    main()
