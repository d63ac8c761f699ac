"""One rank of a real torch.distributed.pipelining job, run by tests/test_distributed.py.

Run as a script, one process per rank, with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set. For each scenario it runs one warm-up step, then one step
inside ``check_leaks(gather=True)``, and pickles every rank's report, the
bytes the leaky code captured, and (on rank 0) the gathered summary to
``--out``. Scenario names are ``<schedule>:<variant>``; the variant ``prefix``
patches torch's stage module with the pre-fix ``stage_backward``;
``prefix-split`` with the pre-fix split (zero-bubble) input and weight backward. The scenario
``missing`` makes the last rank exit before gathering; ``subgroup`` gathers on a
group of the last two ranks.
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
from torch.autograd.graph import GradientEdge
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    _backward,
)
from torch.distributed.pipelining import stage as stage_module

from whyalive import check_leaks
from whyalive.demo import run_demo
from whyalive.distributed import gather_summary

WIDTH = 64
BATCH = 8
MICROBATCHES = 4
# Every tensor the pre-fix helper captured this step, weakly, with its storage's bytes.
CAPTURED: list[tuple[weakref.ref[torch.Tensor], int, int, bool]] = []
# Which functions of torch's stage module each variant replaces with its pre-fix version.
PATCHES: dict[str, tuple[str, ...]] = {
    "shipped": (),
    "prefix": ("stage_backward",),
    "prefix-split": ("stage_backward_input", "stage_backward_weight"),
}


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


def stage_backward_input(
    stage_outputs_or_loss: list[torch.Tensor],
    output_grads: list[torch.Tensor] | None,
    input_values: list[Any],
    weights: Any,
) -> tuple[tuple[torch.Tensor | None, ...], list[dict[str, Any]]]:
    """torch's split (zero-bubble) input backward before the fix: its hooks are never removed.

    Each hook's closure holds its parameter group, whose ``"intermediates"``
    hold the autograd nodes the hook is registered on: a cycle through the
    nodes that keeps the group's saved ``"grads"`` alive.
    """
    valid_outputs = [o for o in stage_outputs_or_loss if o.requires_grad or o.grad_fn is not None]
    valid_grads = [
        torch.ones_like(o) if output_grads is None else output_grads[i]
        for i, o in enumerate(stage_outputs_or_loss)
        if o.requires_grad or o.grad_fn is not None
    ]
    output_fns = list(filter(None, map(_backward._get_grad_fn_or_grad_acc, valid_outputs)))
    tensors = [i for i in input_values if isinstance(i, torch.Tensor)]
    input_fns = list(filter(None, map(_backward._get_grad_fn_or_grad_acc, tensors)))
    weight_fns = list(filter(None, map(_backward._get_grad_fn_or_grad_acc, weights)))
    reverse_edges = _backward.construct_reverse_graph(output_fns)
    param_groups = _backward.get_param_groups(input_fns, weight_fns, reverse_edges)
    for param_group in param_groups:
        intermediates = list(param_group["intermediates"])
        param_group["intermediates"] = intermediates
        for i, intermediate in enumerate(intermediates):

            def get_hook(param_group: dict[str, Any], i: int) -> Any:
                def hook(grad_inputs: Any) -> None:
                    if param_group.get("grads") is None:
                        param_group["grads"] = [None] * len(param_group["intermediates"])
                    param_group["grads"][i] = grad_inputs

                return hook

            intermediate.register_prehook(get_hook(param_group, i))
    dinputs = _backward._autograd_grad_for_inputs(
        valid_outputs, input_values, valid_grads, retain_graph=True, allow_unused=True
    )
    for inp, dinput in zip(input_values, dinputs, strict=True):
        if isinstance(inp, torch.Tensor) and dinput is not None:
            inp.grad = dinput if inp.grad is None else inp.grad + dinput
    for t in stage_outputs_or_loss:
        t.detach_()
    return dinputs, param_groups


def stage_backward_weight(
    weights: Any, param_groups: list[dict[str, Any]], retain_graph: bool = False
) -> tuple[torch.Tensor | None, ...]:
    """torch's weight backward before the fix: it keeps ``"intermediates"`` and ``"grads"``."""
    grad_acc_to_weight = {}
    weight_grads: list[torch.Tensor | None] = []
    for index, weight in enumerate(weights):
        grad_acc_to_weight[_backward._get_grad_fn_or_grad_acc(weight)] = weight, index
        weight_grads.append(weight.grad)
    for param_group in param_groups:
        edges, grads = [], []
        for grads_tuple, intermediate in zip(
            param_group["grads"], param_group["intermediates"], strict=True
        ):
            for i, grad in enumerate(grads_tuple):
                if grad is not None:
                    edges.append(GradientEdge(intermediate, i))
                    grads.append(grad)
                    storage = grad.untyped_storage()
                    CAPTURED.append((weakref.ref(grad), storage.data_ptr(), storage.nbytes(), True))
        if edges:
            weights_edges = tuple(GradientEdge(w, 0) for w in param_group["params"])
            dweights = torch.autograd.grad(
                edges, weights_edges, grad_outputs=grads, retain_graph=retain_graph
            )
            for grad_acc, dw in zip(param_group["params"], dweights, strict=True):
                weight, index = grad_acc_to_weight[grad_acc]
                weight.grad = dw if weight.grad is None else weight.grad + dw
    return tuple(weight_grads)


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
    originals = {name: getattr(stage_module, name) for name in PATCHES[variant]}
    for name in PATCHES[variant]:
        setattr(stage_module, name, globals()[name])
    try:
        built, indices, num_stages = _build(schedule, rank, world)
        _step(built, indices, num_stages)  # shape inference and lazy buffers happen here
        CAPTURED.clear()
        check = check_leaks(on_leak="ignore", gather=True)
        with check:
            _step(built, indices, num_stages)
    finally:
        for name, function in originals.items():
            setattr(stage_module, name, function)
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


def run_subgroup(rank: int, world: int) -> dict[str, Any]:
    """The last two ranks gather on their own group: its first rank gets their summary."""
    members = [world - 2, world - 1]
    group = dist.new_group(members)  # every rank takes part in creating a group
    if rank not in members:
        return {"summary": None}
    _, report = run_demo()  # the seed's leak, re-created: one cycle on each member
    summary = gather_summary(report, group=group, timeout=30.0)
    return {"summary": summary, "report": report.to_dict()}


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
            if name == "subgroup":
                results[name] = run_subgroup(rank, world)
                continue
            results[name] = run_scenario(name, rank, world)
    except BaseException:
        traceback.print_exc()
        code = 1
    _write(args.out, rank, results)
    _wait_for_peers(rank, world, args.scenarios)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip process-group teardown: with a crashed peer it can block, and the parent waits.
    os._exit(code)


def _wait_for_peers(rank: int, world: int, scenarios: list[str]) -> None:
    """Rank 0 hosts the store: it stays until the others are done (a crashed rank never is)."""
    if not dist.is_initialized():
        return
    from torch.distributed import distributed_c10d as c10d

    store = c10d._get_default_store()
    try:
        store.set(f"worker/done/{rank}", "1")
        if rank == 0:
            alive = range(world - 1 if "missing" in scenarios else world)
            store.wait([f"worker/done/{r}" for r in alive], datetime.timedelta(seconds=60))
    except Exception:
        traceback.print_exc()


def _write(out: str, rank: int, results: dict[str, Any]) -> None:
    with open(os.path.join(out, f"rank{rank}.pickle"), "wb") as handle:
        pickle.dump(results, handle)


if __name__ == "__main__":
    main()
