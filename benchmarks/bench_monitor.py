"""Step time of a CPU MLP training loop with and without the garbage monitor, in one process.

Each step: forward, backward and SGD on a small MLP, then realistic Python churn
(a metrics dict, a list of per-sample records, formatted strings). The leaking
variants also call the seed's recursive closure once per step, holding the step's
detached outputs ("leak") or the outputs and the loss themselves, with the autograd
graph that backward() already consumed ("leak with graph"). Configurations are
interleaved and repeated; the fastest and the median run of each are reported; ratios
are of the medians, with the range of the rounds' own ratios (each round runs every
configuration once, one after the other, so a shared machine's load hits them alike).
Beside each monitored run: the monitor's own time in its analyses and freeing per step
(its clock), and that as a share of the baseline's step; it moves far less than the
whole loop's ratio. Also: ``torch.utils.viz._cycles.observe_garbage`` on the same loop,
automatic GC off with a scheduled collection each step, and the probe for uncollectable
loops every 500 steps (the default), every 10, and never (``probe_every``).

``--batch N`` adds the figure that moves least with a shared machine: the analysis of one
batch of N cycles of the leak with its graph (a young collection's worth in the loop
above is ~83), as the monitor runs it once their signature is known (counts only), per
batch and per cycle, best and median over ``--repeats`` fresh batches (analysis only:
no collection, no freeing).

    python benchmarks/bench_monitor.py [--steps 300] [--repeats 3] [--cpu] [--batch 83]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import whyalive

torch.set_num_threads(1)
torch.manual_seed(0)
MODEL = nn.Sequential(
    nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
)
OPT = torch.optim.SGD(MODEL.parameters(), lr=0.01)
LOSS = nn.CrossEntropyLoss()
X = torch.randn(32, 64)
Y = torch.randint(0, 10, (32,))


def stage_backward(outputs: list[Any]) -> None:
    """The seed's leak: a recursive closure whose cell keeps the outputs in a cycle."""
    stage_output_tensors: list[Any] = []

    def extract_tensors_with_grads(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                extract_tensors_with_grads(item)
        else:
            stage_output_tensors.append(value)

    extract_tensors_with_grads(outputs)


def train_step(i: int, leak: bool | str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    OPT.zero_grad()
    out = MODEL(X)
    loss = LOSS(out, Y)
    loss.backward()
    OPT.step()
    value = float(loss.detach())
    metrics = {"step": i, "loss": value, "lr": 0.01, "tag": f"step-{i}-{value:.4f}"}
    records = [{"i": j, "pair": (j, j + 1), "name": f"s{j}"} for j in range(32)]
    if leak == "graph":
        stage_backward([out, [loss]])
    elif leak:
        stage_backward([out.detach(), [loss.detach()]])
    return metrics, records


# Wall-clock time, or this thread's CPU time with --cpu (a shared machine disturbs it less).
clock = time.perf_counter


def run(steps: int, leak: bool | str, after_step: Callable[[], None]) -> float:
    """Mean step time in seconds over ``steps`` steps."""
    began = clock()
    for i in range(steps):
        train_step(i, leak)
        after_step()
    return (clock() - began) / steps


def nothing() -> None:
    pass


def baseline(steps: int, leak: bool | str) -> dict[str, Any]:
    return {"step": run(steps, leak, nothing)}


def monitored(steps: int, leak: bool | str, **options: Any) -> dict[str, Any]:
    mon = whyalive.monitor(log=False, **options)
    with mon:
        seconds = run(steps, leak, mon.step)
    found = sum(c.occurrences for r in mon.summary_reports() for c in r.cycles)
    # The monitor's own clock (analyses and freeing): it moves with the machine far less
    # than a whole step does.
    return {"step": seconds, "found": found, "own": mon.stats.seconds / steps, "stats": mon.stats}


def observed(steps: int, leak: bool) -> dict[str, Any]:
    from torch.utils.viz._cycles import observe_garbage

    found = [0]

    def observer(garbage: list[Any]) -> None:
        found[0] += sum(
            1 for o in garbage if getattr(o, "__name__", None) == "extract_tensors_with_grads"
        )

    debug = gc.get_debug()
    remove = observe_garbage(observer)
    try:
        seconds = run(steps, leak, nothing)
    finally:
        remove()
        gc.set_debug(debug)  # observe_garbage sets the flags to 0 or SAVEALL, never back
    return {"step": seconds, "found": found[0]}


def scheduled(steps: int, leak: bool, use_monitor: bool, generation: int) -> dict[str, Any]:
    full = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full[0] += 1

    gc.disable()
    gc.callbacks.append(count)
    try:
        if use_monitor:
            mon = whyalive.monitor(log=False, collect_generation=generation)
            with mon:
                seconds = run(steps, leak, lambda: mon.step(collect=True))
                fulls = full[0]
            found = sum(c.occurrences for r in mon.summary_reports() for c in r.cycles)
            return {"step": seconds, "found": found, "full": fulls}
        seconds = run(steps, leak, lambda: gc.collect(generation))
        return {"step": seconds, "full": full[0]}
    finally:
        gc.callbacks.remove(count)
        gc.enable()


def batch_analysis(cycles: int, repeats: int) -> None:
    """Time ``analyze()`` of fresh batches of ``cycles`` leaked cycles, as the monitor would."""
    from whyalive.monitor.signature_log import analysis_options
    from whyalive.report.pipeline import analyze

    def batch() -> list[object]:
        gc.collect()
        gc.disable()
        debug = gc.get_debug()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for i in range(cycles):
                train_step(i, "graph")
            gc.collect()
            saved = gc.garbage[:]
            gc.garbage.clear()
        finally:
            gc.set_debug(debug)
            gc.enable()
        return saved

    options = analysis_options(0, False, ())
    analyze(batch(), options, words_for=lambda _: True)  # the first sighting, in words
    times = []
    for _ in range(max(repeats, 3)):
        objects = batch()
        began = clock()
        analyze(objects, options, words_for=lambda _: False)
        times.append(clock() - began)
        objects.clear()
    best, median = min(times), statistics.median(times)
    print(
        f"analysis of a batch of {cycles} cycles of the leak with graph: best {best * 1e6:.0f} us "
        f"({best * 1e6 / cycles:.1f} us a cycle), median {median * 1e6:.0f} us "
        f"({median * 1e6 / cycles:.1f} us a cycle)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--only", nargs="+", metavar="PREFIX", help="only the configurations named so"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="time with this thread's CPU time, not wall-clock time"
    )
    parser.add_argument(
        "--batch", type=int, metavar="N", help="also time the analysis of a batch of N cycles"
    )
    args = parser.parse_args()
    if args.cpu:
        global clock
        clock = time.thread_time
    logging.basicConfig(level=logging.ERROR)
    for i in range(50):  # warm up the allocator, autograd and the model
        train_step(i, False)
    gc.collect()
    configs: dict[str, Callable[[], dict[str, Any]]] = {
        "no leak, baseline": lambda: baseline(args.steps, False),
        "no leak, monitor": lambda: monitored(args.steps, False),
        "no leak, monitor probe_every=None": lambda: monitored(args.steps, False, probe_every=None),
        "no leak, monitor probe_every=10": lambda: monitored(args.steps, False, probe_every=10),
        "leak, baseline": lambda: baseline(args.steps, True),
        "leak, monitor": lambda: monitored(args.steps, True),
        "leak with graph, baseline": lambda: baseline(args.steps, "graph"),
        "leak with graph, monitor": lambda: monitored(args.steps, "graph"),
        "leak, monitor freeze=False": lambda: monitored(args.steps, True, freeze=False),
        "leak, observe_garbage": lambda: observed(args.steps, True),
        "gc off, leak, gc.collect(1) per step": lambda: scheduled(args.steps, True, False, 1),
        "gc off, leak, monitor.step(collect=True) gen 1": lambda: scheduled(
            args.steps, True, True, 1
        ),
    }
    if args.only:
        configs = {k: v for k, v in configs.items() if k.startswith(tuple(args.only))}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    for _ in range(args.repeats):
        for name, config in configs.items():
            try:
                results[name].append(config())
            except Exception as error:  # observe_garbage may refuse a CPU build
                results[name].append({"error": f"{type(error).__name__}: {error}"})
            gc.collect()
    best: dict[str, float] = {}
    for name, runs in results.items():
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            print(f"{name:48s} raised {errors[0]}")
            continue
        best[name] = min(r["step"] for r in runs)
        median = statistics.median(r["step"] for r in runs)
        extra = ""
        if "found" in runs[0]:
            extra += f"  found {[r['found'] for r in runs]} of {args.steps}"
        if "full" in runs[0]:
            extra += f"  full collections {[r['full'] for r in runs]}"
        if "own" in runs[0]:
            extra += f"  analyses {statistics.median(r['own'] for r in runs) * 1e6:.1f} us/step"
        print(f"{name:48s} {best[name] * 1e3:7.3f} ms/step (median {median * 1e3:.3f}){extra}")
    pairs = [
        ("no leak, monitor", "no leak, baseline"),
        ("no leak, monitor", "no leak, monitor probe_every=None"),
        ("no leak, monitor probe_every=10", "no leak, monitor probe_every=None"),
        ("leak, monitor", "leak, baseline"),
        ("leak with graph, monitor", "leak with graph, baseline"),
        ("leak, monitor freeze=False", "leak, baseline"),
        ("leak, observe_garbage", "leak, baseline"),
        ("gc off, leak, monitor.step(collect=True) gen 1", "gc off, leak, gc.collect(1) per step"),
    ]
    print(
        f"ratios of the medians [range over rounds] (fastest runs), load {os.getloadavg()[0]:.1f}, "
        f"{'CPU' if args.cpu else 'wall-clock'} time"
    )
    for with_, without in pairs:
        if with_ in best and without in best:
            ours = [r["step"] for r in results[with_]]
            base = [r["step"] for r in results[without]]
            rounds = [o / b for o, b in zip(ours, base, strict=True)]
            median = statistics.median(ours) / statistics.median(base)
            own = ""
            if "own" in results[with_][0]:
                analyses = statistics.median(r["own"] for r in results[with_])
                own = f"; analyses {analyses / statistics.median(base):.1%} of the step"
            print(
                f"{with_} / {without}: {median:.3f} [{min(rounds):.3f}-{max(rounds):.3f}] "
                f"({best[with_] / best[without]:.3f}){own}"
            )
    if args.batch:
        batch_analysis(args.batch, args.repeats)


if __name__ == "__main__":
    main()
