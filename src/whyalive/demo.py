"""The scenarios behind ``whyalive demo``: the pipelining ``stage_backward`` leak, re-created.

PyTorch's pipelining ``stage_backward`` once defined ``extract_tensors_with_grads``
as a nested function that calls itself; its closure cell held the function, the
function held the cell, and the closure also held the lists of stage outputs
and output gradients, so every step's activations waited for the cyclic GC.
With torch installed the demo runs that code on real tensors; otherwise it runs
the same shape on NumPy arrays or on plain buffers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from whyalive.check import find_leaks
from whyalive.errors import UsageError
from whyalive.report import Report


def _load(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def stage_backward(
    stage_output: Any, output_grads: Any, input_values: list[Any], *, fixed: bool = False
) -> list[Any]:
    """The pre-fix ``stage_backward`` (``fixed=True``: the shipped fix, ``del`` the helper)."""
    torch = _load("torch")
    stage_output_tensors: list[Any] = []
    output_grad_tensors: list[Any] = []

    def extract_tensors_with_grads(output_val: Any, grad_val: Any) -> None:
        if isinstance(output_val, (tuple, list)):
            for ov, gv in zip(output_val, grad_val):  # noqa: B905 - as in the original code
                extract_tensors_with_grads(ov, gv)
        elif isinstance(output_val, dict):
            for key in output_val:
                extract_tensors_with_grads(output_val[key], grad_val[key])
        else:
            stage_output_tensors.append(output_val)
            output_grad_tensors.append(grad_val)

    try:
        extract_tensors_with_grads(stage_output, output_grads)
        if (
            torch is not None
            and stage_output_tensors
            and isinstance(stage_output_tensors[0], torch.Tensor)
        ):
            torch.autograd.backward(stage_output_tensors, grad_tensors=output_grad_tensors)
            return [value.grad for value in input_values]
        return list(input_values)
    finally:
        if fixed:
            del extract_tensors_with_grads


def _torch_step(fixed: bool, device: str | None = None) -> None:
    torch = _load("torch")
    inputs = torch.randn(16, 256, requires_grad=True, device=device)
    weight = torch.randn(256, 256, requires_grad=True, device=device)
    outputs = [inputs @ weight for _ in range(4)]
    grads = [torch.ones(16, 256, device=device) for _ in outputs]
    stage_backward(outputs, grads, [inputs], fixed=fixed)


def _numpy_step(fixed: bool) -> None:
    numpy = _load("numpy")
    outputs = [numpy.ones((16, 256), dtype=numpy.float32) for _ in range(4)]
    grads = [numpy.ones((16, 256), dtype=numpy.float32) for _ in outputs]
    stage_backward(outputs, grads, [], fixed=fixed)


def _bytes_step(fixed: bool) -> None:
    outputs = [bytearray(1 << 20) for _ in range(4)]
    grads = [bytearray(1 << 20) for _ in outputs]
    stage_backward(outputs, grads, [], fixed=fixed)


def backend() -> tuple[str, Callable[[bool], None]]:
    """The richest backend available here: torch, else NumPy, else plain buffers."""
    if _load("torch") is not None:
        return "torch", _torch_step
    if _load("numpy") is not None:
        return "numpy", _numpy_step
    return "bytes", _bytes_step


def torch_device(device: str) -> str:
    """Check that torch can put tensors on *device* here; return its canonical name.

    Raises UsageError (one line) when torch is missing or the device is unusable, so
    ``whyalive demo --device cuda`` on a machine without a GPU says so instead of
    failing inside the leak it is meant to show.
    """
    torch = _load("torch")
    if torch is None:
        raise UsageError(f"--device {device} needs torch, which is not installed here")
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f"--device {device}: torch cannot use it here ({reason})") from None
    return str(torch.device(device))


def run_demo(*, fixed: bool = False, device: str | None = None) -> tuple[str, Report]:
    """Run one pipelining backward step and return (backend name, report).

    *device* (torch only, e.g. ``"cuda"``) puts the step's tensors there.
    """
    if device is not None:
        device = torch_device(device)
        return f"torch on {device}", find_leaks(_torch_step, fixed, device)
    name, step = backend()
    return name, find_leaks(step, fixed)
