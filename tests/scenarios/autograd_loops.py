"""Loops through the autograd graph (C++), each leaky and fixed the way its report says.

Each leaky function, called, leaves a payload alive that a loop through autograd holds:
the collector never frees it (``tensor_hook``, ``hook_on_owner``, ``grad_cam``,
``prehook_holding_output``, ``node_metadata``) or frees it only at its next run,
because nothing but the loop held the node (``prehook_on_node``, ``stage_prehook``,
``stage_prehook_logged``, ``ctx_attribute``): then what the node holds in C++ (saved
tensors, leaves, their gradients) is in no list of garbage, and is counted through the
node.
Its ``_fixed`` twin applies the fix the report prints (its ``fix_edit`` where it has
one, which the fix-proof suite also applies to this file) and leaves nothing behind.
Payloads are ``PAYLOAD_BYTES`` of float32, tracked by :mod:`scenarios.payload`; the
scenarios import torch when called. The shapes come from the issue that asked for
them (whyalive #25) and from PyTorch's zero-bubble pipeline schedule
(``torch/distributed/pipelining/_backward.py``, ``stage_backward_input``).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from scenarios.payload import track

PAYLOAD = 64 * 1024
"""float32 elements of one payload tensor."""
PAYLOAD_BYTES = PAYLOAD * 4


def _torch() -> Any:
    import torch

    return torch


def tensor_hook() -> None:
    """``y.register_hook`` with a hook that refers to ``y``; ``exp`` saves its result."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = track(x.exp())
    y.register_hook(lambda grad: grad * y.sum())
    y.sum().backward()


def tensor_hook_fixed() -> None:
    """:func:`tensor_hook` with its report's edit: the hook holds ``y`` weakly."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = track(x.exp())
    y.register_hook(lambda grad, *, y=weakref.proxy(y): grad * y.sum())  # noqa: B008
    y.sum().backward()


class Recorder:
    """Keeps an activation and a hook on it that calls back into the recorder."""

    def __init__(self, x: Any) -> None:
        self.out = x.tanh()
        self.norms: list[float] = []
        self.out.register_hook(lambda grad: self.record(grad))

    def record(self, grad: Any) -> None:
        """Remembers the gradient's norm."""
        self.norms.append(float(grad.norm()))


def hook_on_owner() -> None:
    """A hook that captures the object (``self``) which holds the tensor."""
    torch = _torch()
    recorder = Recorder(track(torch.randn(PAYLOAD, requires_grad=True)))
    recorder.out.sum().backward()


class WeakRecorder:
    """:class:`Recorder` with its report's edit: the hook holds the recorder weakly."""

    def __init__(self, x: Any) -> None:
        self.out = x.tanh()
        self.norms: list[float] = []
        self.out.register_hook(
            lambda grad, *, self=weakref.proxy(self): self.record(grad)  # noqa: B008
        )

    def record(self, grad: Any) -> None:
        """Remembers the gradient's norm."""
        self.norms.append(float(grad.norm()))


def hook_on_owner_fixed() -> None:
    """:func:`hook_on_owner` with :class:`WeakRecorder`."""
    torch = _torch()
    recorder = WeakRecorder(track(torch.randn(PAYLOAD, requires_grad=True)))
    recorder.out.sum().backward()


class GradCam:
    """Grad-CAM: its own bound methods are a forward and a full backward hook of a layer."""

    def __init__(self, model: Any, layer: Any) -> None:
        self.model = model
        self.activations: Any = None
        self.gradients: Any = None
        layer.register_forward_hook(self.save_activation)
        layer.register_full_backward_hook(self.save_gradient)

    def save_activation(self, module: Any, inputs: Any, output: Any) -> None:
        """Keeps the layer's output."""
        self.activations = output

    def save_gradient(self, module: Any, grad_input: Any, grad_output: Any) -> None:
        """Keeps the gradient of the layer's output."""
        self.gradients = grad_output[0]

    def __call__(self, x: Any) -> Any:
        self.model(x).sum().backward()
        return (self.activations * self.gradients).sum(dim=1)


def _model() -> Any:
    nn = _torch().nn
    return nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())


def grad_cam() -> None:
    """Grad-CAM on the model's second layer (its input carries a graph)."""
    torch = _torch()
    model = _model()
    cam = GradCam(model, model[2])
    cam(track(torch.randn(PAYLOAD // 256, 256)))


class GradCamFixed:
    """:class:`GradCam` with the fix: outputs kept without their graph, hooks removed."""

    def __init__(self, model: Any, layer: Any) -> None:
        self.model = model
        self.activations: Any = None
        self.gradients: Any = None
        self.handles = [
            layer.register_forward_hook(self.save_activation),
            layer.register_full_backward_hook(self.save_gradient),
        ]

    def save_activation(self, module: Any, inputs: Any, output: Any) -> None:
        """Keeps the layer's output, without its graph."""
        self.activations = output.detach()

    def save_gradient(self, module: Any, grad_input: Any, grad_output: Any) -> None:
        """Keeps the gradient of the layer's output, without its graph."""
        self.gradients = grad_output[0].detach()

    def __call__(self, x: Any) -> Any:
        self.model(x).sum().backward()
        return (self.activations * self.gradients).sum(dim=1)

    def close(self) -> None:
        """Removes the hooks."""
        for handle in self.handles:
            handle.remove()


def grad_cam_fixed() -> None:
    """:func:`grad_cam` with :class:`GradCamFixed`, closed after use."""
    torch = _torch()
    model = _model()
    cam = GradCamFixed(model, model[2])
    cam(track(torch.randn(PAYLOAD // 256, 256)))
    cam.close()


def _get_hook(param_group: dict[str, Any], index: int) -> Any:
    def hook(grad_inputs: Any) -> None:
        if param_group.get("grads") is None:
            param_group["grads"] = [None] * len(param_group["intermediates"])
        param_group["grads"][index] = grad_inputs

    return hook


def prehook_on_node() -> None:
    """The zero-bubble schedule's shape: a prehook on an intermediate node captures the
    param group that lists that node in ``param_group["intermediates"]``."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    weight = track(torch.randn(PAYLOAD, requires_grad=True))
    out = (x * weight).relu()
    intermediate = out.grad_fn.next_functions[0][0]
    param_group = {"params": [weight], "intermediates": [intermediate]}
    intermediate.register_prehook(_get_hook(param_group, 0))
    out.sum().backward()


def prehook_on_node_fixed() -> None:
    """:func:`prehook_on_node` with the shipped fix: the intermediates dropped after use."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    weight = track(torch.randn(PAYLOAD, requires_grad=True))
    out = (x * weight).relu()
    intermediate = out.grad_fn.next_functions[0][0]
    param_group = {"params": [weight], "intermediates": [intermediate]}
    intermediate.register_prehook(_get_hook(param_group, 0))
    out.sum().backward()
    del param_group["intermediates"]


class PipelineStage:
    """Keeps the autograd node of each microbatch's output until its backward starts, with
    a prehook on that node (a ``functools.partial`` of its own bound method) that forgets
    it: a microbatch whose backward never runs leaves the stage, the node, what the node
    saved and the leaf it accumulates into (with its gradient) in a cycle."""

    def __init__(self) -> None:
        torch = _torch()
        self.weight = track(torch.randn(256, PAYLOAD // 256, requires_grad=True))
        self.pending: dict[int, Any] = {}

    def forward(self, microbatch: int, x: Any) -> Any:
        """``x @ weight``, its node kept until its backward starts."""
        out = x @ self.weight
        node = out.grad_fn
        self.pending[microbatch] = node
        node.register_prehook(functools.partial(self.backward_started, microbatch))
        return out

    def backward_started(self, microbatch: int, grad_outputs: Any) -> None:
        """Forgets the microbatch's node."""
        self.pending.pop(microbatch, None)


def stage_prehook() -> None:
    """Two microbatches forward, one backward: the second's node stays in ``pending``."""
    torch = _torch()
    stage = PipelineStage()
    outs = [stage.forward(mb, track(torch.randn(PAYLOAD // 256, 256))) for mb in range(2)]
    outs[0].sum().backward()


class LoggingStage(PipelineStage):
    """:class:`PipelineStage` that also logs each microbatch's input shape, by the same
    computed key into another dict: only the store into ``pending`` made the loop."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: dict[int, tuple[int, ...]] = {}

    def forward(self, microbatch: int, x: Any) -> Any:
        """``x @ weight``, its input's shape logged and its node kept until backward."""
        self.shapes[microbatch] = tuple(x.shape)
        out = x @ self.weight
        node = out.grad_fn
        self.pending[microbatch] = node
        node.register_prehook(functools.partial(self.backward_started, microbatch))
        return out


def stage_prehook_logged() -> None:
    """:func:`stage_prehook` with :class:`LoggingStage`: two dicts stored by key ``mb``."""
    torch = _torch()
    stage = LoggingStage()
    outs = [stage.forward(mb, track(torch.randn(PAYLOAD // 256, 256))) for mb in range(2)]
    outs[0].sum().backward()


def stage_prehook_logged_fixed() -> None:
    """:func:`stage_prehook_logged` with its report's other fix: the nodes the stage still
    keeps are dropped once the step is over (``self.pending.clear()``)."""
    torch = _torch()
    stage = LoggingStage()
    outs = [stage.forward(mb, track(torch.randn(PAYLOAD // 256, 256))) for mb in range(2)]
    outs[0].sum().backward()
    stage.pending.clear()


class PipelineStageFixed(PipelineStage):
    """:class:`PipelineStage` with its report's fix: the prehooks' handles are kept, and
    removed once the step is over."""

    def __init__(self) -> None:
        super().__init__()
        self.handles: list[Any] = []

    def forward(self, microbatch: int, x: Any) -> Any:
        """``x @ weight``, its node kept until its backward starts."""
        out = x @ self.weight
        node = out.grad_fn
        self.pending[microbatch] = node
        hook = functools.partial(self.backward_started, microbatch)
        self.handles.append(node.register_prehook(hook))
        return out

    def close(self) -> None:
        """Removes the prehooks."""
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


def stage_prehook_fixed() -> None:
    """:func:`stage_prehook` with :class:`PipelineStageFixed`, closed after the step."""
    torch = _torch()
    stage = PipelineStageFixed()
    outs = [stage.forward(mb, track(torch.randn(PAYLOAD // 256, 256))) for mb in range(2)]
    outs[0].sum().backward()
    stage.close()


def prehook_holding_output() -> None:
    """A prehook on the output's node captures a stage dict that keeps the output."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    out = track(x.relu())
    stage = {"outputs": [out]}
    out.grad_fn.register_prehook(lambda grads: stage.setdefault("seen", True) and None)
    out.sum().backward()


def prehook_holding_output_fixed() -> None:
    """:func:`prehook_holding_output` with the fix: the hook removed once backward ran."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    out = track(x.relu())
    stage = {"outputs": [out]}
    handle = out.grad_fn.register_prehook(lambda grads: stage.setdefault("seen", True) and None)
    out.sum().backward()
    handle.remove()


def _scale_keep() -> Any:
    torch = _torch()

    class ScaleKeep(torch.autograd.Function):
        """Keeps its output as a ``ctx`` attribute."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = x * 2
            ctx.y = y
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2 + 0 * ctx.y

    return ScaleKeep


def _scale_saved() -> Any:
    torch = _torch()

    class ScaleSaved(torch.autograd.Function):
        """Saves its output for backward (the report's edit of :func:`_scale_keep`)."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = x * 2
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2 + 0 * ctx.saved_tensors[0]

    return ScaleSaved


def ctx_attribute() -> None:
    """A custom Function that keeps its output in ``ctx.y``."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = _scale_keep().apply(x)
    y.sum().backward()


def ctx_attribute_fixed() -> None:
    """:func:`ctx_attribute` with ``ctx.save_for_backward(y)``."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = _scale_saved().apply(x)
    y.sum().backward()


def node_metadata() -> None:
    """The output kept in its own node's ``metadata``."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = track(x.exp())
    y.grad_fn.metadata["output"] = y


def node_metadata_fixed() -> None:
    """:func:`node_metadata` with its report's edit: the metadata holds ``y`` weakly."""
    torch = _torch()
    x = track(torch.randn(PAYLOAD, requires_grad=True))
    y = track(x.exp())
    y.grad_fn.metadata["output"] = weakref.proxy(y)


LEAKY = {
    "tensor-hook-loop": (tensor_hook, hook_on_owner),
    "module-hook-loop": (grad_cam,),
    "node-hook-loop": (
        prehook_on_node,
        prehook_holding_output,
        stage_prehook,
        stage_prehook_logged,
    ),
    "ctx-attribute": (ctx_attribute,),
    "node-metadata": (node_metadata,),
}
"""Pattern name -> the scenarios that show it."""

FIXED = {
    tensor_hook: tensor_hook_fixed,
    hook_on_owner: hook_on_owner_fixed,
    grad_cam: grad_cam_fixed,
    prehook_on_node: prehook_on_node_fixed,
    prehook_holding_output: prehook_holding_output_fixed,
    stage_prehook: stage_prehook_fixed,
    stage_prehook_logged: stage_prehook_logged_fixed,
    ctx_attribute: ctx_attribute_fixed,
    node_metadata: node_metadata_fixed,
}
"""Each leaky scenario -> its fixed twin."""
