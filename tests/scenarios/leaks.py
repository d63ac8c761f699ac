"""The leak scenarios: each function or class, called, leaves one known cycle behind."""

from __future__ import annotations

from typing import Any


def heavy(*shape: int) -> Any:
    """A float32 NumPy array, 4 KiB unless ``shape`` says otherwise: the heavy payload
    (tracked by ``scenarios.payload``, so a fix-proof test can tell it was freed). Where
    NumPy is missing, a bytearray of 1 MiB or more instead."""
    from scenarios.payload import float32s_nbytes, numpy_or_none, track

    # Made here: a recorded allocation site is this function, and the scenarios that call
    # it in this file are where the source search looks next.
    numpy = numpy_or_none()
    if numpy is None:
        return track(bytearray(float32s_nbytes(*(shape or (1024,)))))
    return track(numpy.zeros(shape or (1024,), dtype=numpy.float32))


def heavy_bytes(*shape: int) -> int:
    """The bytes :func:`heavy` of ``shape`` holds, here (NumPy's or the bytearray's)."""
    from scenarios.payload import float32s_nbytes

    return float32s_nbytes(*(shape or (1024,)))


def stage_backward(outputs: list[Any]) -> None:
    """The seed's helper as it was before the fix: a nested function that calls itself by
    name lives in its own closure cell and keeps ``stage_output_tensors`` (the outputs) in a
    cycle."""
    stage_output_tensors: list[Any] = []

    def extract_tensors_with_grads(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                extract_tensors_with_grads(item)
        else:
            stage_output_tensors.append(value)

    extract_tensors_with_grads(outputs)


def stage_backward_fixed(outputs: list[Any]) -> None:
    """:func:`stage_backward` with the shipped fix: ``del extract_tensors_with_grads``."""
    stage_output_tensors: list[Any] = []

    def extract_tensors_with_grads(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                extract_tensors_with_grads(item)  # noqa: F821 - bound until the del
        else:
            stage_output_tensors.append(value)

    extract_tensors_with_grads(outputs)
    del extract_tensors_with_grads


def stage_backward_with_grads(outputs: list[Any], grads: list[Any]) -> None:
    """torch.distributed.pipelining's ``stage_backward`` before the fix: the closure keeps
    the outputs and their gradients."""
    stage_output_tensors: list[Any] = []
    output_grad_tensors: list[Any] = []

    def extract_tensors_with_grads(output_val: Any, grad_val: Any) -> None:
        if isinstance(output_val, list):
            for ov, gv in zip(output_val, grad_val, strict=True):
                extract_tensors_with_grads(ov, gv)
        else:
            stage_output_tensors.append(output_val)
            output_grad_tensors.append(grad_val)

    extract_tensors_with_grads(outputs, grads)


def pipeline_step() -> None:
    """One pipelining step that leaks: four 16 KiB outputs and their gradients."""
    outputs = [heavy(16, 256) for _ in range(4)]
    stage_backward_with_grads(outputs, [heavy(16, 256) for _ in outputs])


class Trainer:
    """Stores its own bound method, ``self.callback = self.on_step`` (unless ``cycle=False``)."""

    def __init__(self, *, cycle: bool = True) -> None:
        self.activations = heavy()
        if cycle:
            self.callback = self.on_step

    def on_step(self) -> None:
        """Nothing: only the reference to it matters."""


def self_loop(size: int) -> None:
    """A list that contains itself and an array of ``size`` float32s."""
    box: list[Any] = [heavy(size)]
    box.append(box)


class Ring:
    """A link of a ring of objects, each holding an array of ``size`` float32s."""

    def __init__(self, size: int) -> None:
        self.next: Ring | None = None
        self.payload = heavy(size)


def ring(count: int = 50, size: int = 256) -> None:
    """A cycle of ``count`` :class:`Ring` links."""
    first = last = Ring(size)
    for _ in range(count - 1):
        link = Ring(size)
        last.next = link
        last = link
    last.next = first


class Model:
    """A traced model's pieces: three different cycles that all reach the same parameters."""

    def __init__(self, parameters: list[Any]) -> None:
        self.parameters = parameters
        self.forward_hook = self.forward  # a bound method on its own instance

    def forward(self) -> None:
        """Nothing: only the reference to it matters."""


def shared_parameters(count: int = 14) -> None:
    """Three cycles of three patterns share one list of ``count`` 4 KiB arrays."""
    parameters = [heavy() for _ in range(count)]
    Model(parameters)
    state: dict[str, Any] = {"parameters": parameters}
    state["self"] = state
    stage_backward([parameters])


def nothing() -> None:
    """No garbage at all."""
