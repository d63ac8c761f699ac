"""Pipeline-parallel training on 2 CPU ranks with the whyalive monitor on.

    python examples/pipelining_monitor.py          # torch's pipelining as shipped: no leak
    python examples/pipelining_monitor.py --leak   # with the pre-fix stage_backward patched in

Each rank runs one stage of a ``torch.distributed.pipelining`` GPipe schedule
over gloo on 127.0.0.1. Automatic GC is off and every step ends with
``monitor.step(collect=True)``, the scheduled collection the monitor watches.
Every ``--gather-every`` steps the ranks send what they saw to rank 0, which
prints one table: which ranks leak, how much, through which code. It also
runs under ``torchrun --nproc-per-node 2 examples/pipelining_monitor.py``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import logging
import os
import socket
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
from torch.distributed.pipelining import stage as stage_module

from whyalive.demo import stage_backward as prefix_stage_backward
from whyalive.distributed import rank_tag
from whyalive.monitor import GcMonitor

WIDTH = 256
BATCH = 32
MICROBATCHES = 4


def train(rank: int, world: int, args: argparse.Namespace) -> None:
    """One rank: build its stage, train ``args.steps`` steps under the monitor."""
    os.environ.setdefault("RANK", str(rank))
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    logging.basicConfig(level=logging.INFO, format=f"{rank_tag()}%(name)s: %(message)s")
    torch.set_num_threads(1)
    if args.leak:
        # The pre-fix helper: a nested function that calls itself through its closure.
        stage_module.stage_backward = prefix_stage_backward  # type: ignore[attr-defined,assignment]
    torch.manual_seed(rank)
    module = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())
    stage = PipelineStage(module, rank, world, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01)

    was_enabled = gc.isenabled()
    gc.disable()  # the loop collects on a schedule, once per step
    monitor = GcMonitor(gather_every=args.gather_every, log=args.verbose)
    try:
        with monitor:
            for _ in range(args.steps):
                inputs, target = torch.randn(BATCH, WIDTH), torch.randn(BATCH, WIDTH)
                if rank == 0:
                    schedule.step(inputs)
                elif rank == world - 1:
                    schedule.step(target=target, losses=[])
                else:
                    schedule.step()
                optimizer.step()
                optimizer.zero_grad()
                monitor.step(collect=True)
    finally:
        if was_enabled:
            gc.enable()
    summary: Any = monitor.last_summary
    if summary is not None:  # rank 0 only
        print(summary, end="", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    """Spawn 2 ranks (or run as one rank when torchrun started us)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leak", action="store_true", help="patch in the pre-fix stage_backward")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--gather-every", type=int, default=4)
    parser.add_argument("--verbose", action="store_true", help="log each new cycle per rank")
    args = parser.parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), GLOO_SOCKET_IFNAME="lo"
    )
    mp.spawn(train, args=(2, args), nprocs=2, join=True)  # type: ignore[attr-defined,no-untyped-call]


if __name__ == "__main__":
    main()
