"""One rank of a real torch.distributed.pipelining job, run by tests/test_distributed.py.

Run as a script, one process per rank, with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set. For each scenario it runs one warm-up step, then one step
inside ``check_leaks(gather=True)``, and pickles every rank's report, the
bytes the leaky code captured, and (on rank 0) the gathered summary to
``--out``. Scenario names are ``<schedule>:<variant>``; the variant ``prefix``
patches torch's stage module with the pre-fix ``stage_backward``. The scenario
``missing`` makes the last rank exit before gathering.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pickle
import sys
import traceback
import weakref
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
)
from torch.distributed.pipelining import stage as stage_module

from whyalive import check_leaks
from whyalive.distributed import gather_summary

WIDTH = 64
BATCH = 8
MICROBATCHES = 4
# Every tensor the pre-fix helper captured this step, weakly, with its storage's bytes.
CAPTURED: list[tuple[weakref.ref[torch.Tensor], int, int, bool]] = []


def stage_backward(
    stage_output: Any,
    output_grads: Any,
    input_values: Any,
    outputs_with_grads_idxs: list[int] | None = None,
) -> tuple[torch.Tensor | None, ...]:
    """torch's stage_backward before the fix: the nested helper calls itself through its cell."""
    if outputs_with_grads_idxs is not None:
        stage_output = [stage_output[i] for i in outputs_with_grads_idxs]
        output_grads = [output_grads[i] for i in outputs_with_grads_idxs]
    stage_output_tensors: list[torch.Tensor] = []
    output_grad_tensors: list[torch.Tensor | None] = []

    def extract_tensors_with_grads(output_val: Any, grad_val: Any) -> None:
        if isinstance(output_val, torch.Tensor):
            if not output_val.requires_grad and output_val.grad_fn is None:
                return
            stage_output_tensors.append(output_val)
            output_grad_tensors.append(grad_val)
        elif isinstance(output_val, (tuple, list)):
            if grad_val is None:
                return
            for ov, gv in zip(output_val, grad_val, strict=True):
                extract_tensors_with_grads(ov, gv)
        elif isinstance(output_val, dict):
            if grad_val is None:
                return
            for k in output_val:
                extract_tensors_with_grads(output_val[k], grad_val[k])

    extract_tensors_with_grads(stage_output, output_grads)
    for tensors, activation in ((stage_output_tensors, True), (output_grad_tensors, False)):
        for tensor in tensors:
            if tensor is not None:
                storage = tensor.untyped_storage()
                CAPTURED.append(
                    (weakref.ref(tensor), storage.data_ptr(), storage.nbytes(), activation)
                )
    torch.autograd.backward(stage_output_tensors, grad_tensors=output_grad_tensors)  # type: ignore[arg-type]
    grad_inputs: list[torch.Tensor | None] = []
    for val in input_values:
        if isinstance(val, torch.Tensor):
            grad_inputs.append(val.grad)
            val.grad = None
        else:
            grad_inputs.append(None)
    return tuple(grad_inputs)


def _stage_indices(schedule: str, rank: int, world: int) -> list[int]:
    if schedule in ("gpipe", "1f1b"):
        return [rank]
    return [rank, rank + world]  # looped placement: two stages per rank


def _build(schedule: str, rank: int, world: int) -> tuple[Any, list[int], int]:
    indices = _stage_indices(schedule, rank, world)
    num_stages = world * len(indices)
    stages = []
    for index in indices:
        torch.manual_seed(index)
        module = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())
        stages.append(PipelineStage(module, index, num_stages, torch.device("cpu")))

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(output, target)

    if schedule == "gpipe":
        built: Any = ScheduleGPipe(stages[0], MICROBATCHES, loss_fn=loss_fn)
    elif schedule == "1f1b":
        built = Schedule1F1B(stages[0], MICROBATCHES, loss_fn=loss_fn)
    elif schedule == "interleaved":
        built = ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=loss_fn)
    elif schedule == "zerobubble":
        built = ScheduleInterleavedZeroBubble(stages, MICROBATCHES, loss_fn=loss_fn)
    else:
        raise SystemExit(f"unknown schedule {schedule!r}")
    return built, indices, num_stages


def _step(built: Any, indices: list[int], num_stages: int) -> None:
    torch.manual_seed(1234)
    inputs = torch.randn(BATCH, WIDTH)
    target = torch.randn(BATCH, WIDTH)
    first, last = 0 in indices, num_stages - 1 in indices
    kwargs: dict[str, Any] = {}
    if last:
        kwargs["target"] = target
        kwargs["losses"] = []
    if first:
        built.step(inputs, **kwargs)
    else:
        built.step(**kwargs)


def run_scenario(name: str, rank: int, world: int) -> dict[str, Any]:
    """Warm up, then check one step; return what the parent test asserts on."""
    schedule, _, variant = name.partition(":")
    original = stage_module.stage_backward
    if variant == "prefix":
        stage_module.stage_backward = stage_backward  # type: ignore[assignment]
    try:
        built, indices, num_stages = _build(schedule, rank, world)
        _step(built, indices, num_stages)  # shape inference and lazy buffers happen here
        CAPTURED.clear()
        check = check_leaks(on_leak="ignore", gather=True)
        with check:
            _step(built, indices, num_stages)
    finally:
        stage_module.stage_backward = original
    assert check.report is not None
    summary = check.summary
    # What collecting the garbage freed: captured tensors that nothing else kept alive.
    freed = {ptr: nbytes for ref, ptr, nbytes, _ in CAPTURED if ref() is None}
    activations = {ptr: nbytes for _, ptr, nbytes, activation in CAPTURED if activation}
    CAPTURED.clear()
    return {
        "report": check.report.to_dict(),
        "freed_bytes": sum(freed.values()),
        "activation_bytes": sum(activations.values()),
        "activations_freed": set(activations) <= set(freed),
        "summary": summary,
        "summary_text": str(summary) if summary is not None else None,
    }


def main() -> int:
    """Join the group, run the scenarios in order, write results; exit without teardown."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    code = 0
    try:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        for name in args.scenarios:
            if name == "missing":
                if rank == world - 1:
                    _write(args.out, rank, results)
                    os._exit(3)  # a crash: no gather, no teardown
                with check_leaks(on_leak="ignore") as check:
                    pass
                summary = gather_summary(check, timeout=3.0)
                results[name] = {"summary": summary, "summary_text": str(summary)}
                continue
            results[name] = run_scenario(name, rank, world)
    except BaseException:
        traceback.print_exc()
        code = 1
    _write(args.out, rank, results)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip process-group teardown: with a crashed peer it can block, and the parent waits.
    os._exit(code)


def _write(out: str, rank: int, results: dict[str, Any]) -> None:
    with open(os.path.join(out, f"rank{rank}.pickle"), "wb") as handle:
        pickle.dump(results, handle)


if __name__ == "__main__":
    main()
