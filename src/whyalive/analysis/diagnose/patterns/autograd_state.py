"""State attached to autograd nodes that refers back: a custom Function's ``ctx``
attributes, a node's ``metadata`` (the hooks are :mod:`.autograd`'s)."""

from __future__ import annotations

from whyalive.analysis.diagnose.patterns.autograd import (
    METADATA,
    edges_named,
    grad_fn_of,
    is_tensor,
    kept_tensor,
    never_freed,
    tensor_code,
)
from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import SAVE_FOR_BACKWARD, WORDS_ONLY
from whyalive.analysis.naming import accessor, chain, label, short_name
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.guarded import type_namespace, type_qualname, type_short_name
from whyalive.words import edge_kinds as ek


class CtxAttributePattern:
    """``ctx.y = y`` in a custom ``autograd.Function``: the output's node keeps the output."""

    name = "ctx-attribute"
    title = "tensor stored as a ctx attribute of a custom autograd.Function"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A custom Function's ``ctx`` whose attribute holds a tensor of the loop."""
        for node in view.shown:
            function = _function_class(view.obj(node))
            if function is None:
                continue
            for edge in view.edges_from(node):
                if edge.name.kind == ek.ATTRIBUTE and kept_tensor(view, edge):
                    return self._words(view, function, edge)
        return None

    def _words(self, view: CycleView, function: type, edge: NamedEdge) -> PatternMatch:
        cls = short_name(type_qualname(function))
        attr = edge.name.name
        summary = (
            f"the custom Function `{cls}` stores a tensor in `ctx{attr}`, and that tensor's "
            f"`grad_fn` is the same `ctx`"
        )
        explanation = (
            f"For a custom `autograd.Function` the output's `grad_fn` is the `ctx` object "
            f"itself. `ctx{attr} = ...` in `{cls}.forward` makes `ctx` hold the output (or a "
            f"tensor that leads to it): output -> grad_fn (ctx) -> `{attr}` -> output. "
            f"{never_freed(view, 'The autograd graph')}."
        )
        # The edit changes the store and backward's reads; a container of tensors is said.
        direct = is_tensor(view, edge.target)
        remedy = SAVE_FOR_BACKWARD if direct else WORDS_ONLY
        if direct:
            value = attr[1:]
            fix = (
                f"In the forward of `{cls}` save it with `ctx.save_for_backward({value})` "
                f"instead of `ctx{attr} = {value}`, and read it back in its backward with "
                f"`{value}, = ctx.saved_tensors`; saved tensors do not keep the output's graph."
            )
        else:
            # Only tensors can be saved: the container's tensor is named by its place in it.
            inside = [
                e for e in view.edges_from(edge.target) if is_tensor(view, e.target) and accessor(e)
            ]
            place = f"ctx{attr}{accessor(inside[0])}" if inside else f"ctx{attr}"
            kept = type_short_name(type(view.obj(edge.target)))
            fix = (
                f"In the forward of `{cls}` save the tensor kept in `{place}` with "
                f"`ctx.save_for_backward(...)` (it takes tensors, not the {kept}) instead of "
                f"keeping it in `ctx{attr}`, and read it back in its backward from "
                "`ctx.saved_tensors`; saved tensors do not keep the output's graph."
            )
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [edge], None, remedy=remedy
        )


def _function_class(obj: object) -> type | None:
    """The ``autograd.Function`` subclass whose ``ctx`` this is, if it is one."""
    found = type_namespace(type(obj)).get("_forward_cls")
    return found if isinstance(found, type) else None


class NodeMetadataPattern:
    """``y.grad_fn.metadata["out"] = y``: the node's metadata keeps its own tensor."""

    name = "node-metadata"
    title = "object kept in its own autograd node's metadata"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A node's ``metadata`` dict in the loop, one of whose values leads back."""
        for edge in edges_named(view, METADATA):
            node = edge.source
            goals = [node] + [t for t in [grad_fn_of(view, node)] if t is not None]
            for entry in view.edges_from(edge.target):
                if entry.name.kind == ek.KEY and any(chain(view, entry.target, g) for g in goals):
                    return self._words(view, node, entry)
        return None

    def _words(self, view: CycleView, node: int, entry: NamedEdge) -> PatternMatch:
        kind = type_short_name(type(view.obj(node)))
        tensor = grad_fn_of(view, node)
        name = tensor_code(view, tensor) if tensor is not None else None
        place = f"{name}.grad_fn.metadata{entry.name.name}" if name else None
        said = f"`{place}`" if place else f"the `metadata{entry.name.name}` of `{kind}`"
        summary = f"{said} holds {label(view, entry.target)}, which leads back to the node"
        explanation = (
            f"A node's `metadata` dict lives as long as the node, and the node as long as its "
            f"tensor. Keeping the tensor (or an object that holds it) there closes a loop: "
            f"tensor -> grad_fn -> metadata -> tensor. {never_freed(view, 'The node')}."
        )
        remove = f"`del {place}`" if place else "delete the entry"
        fix = (
            f"Keep only plain values or a `weakref.ref` of the tensor in {said}, keep "
            f"per-tensor data in a side table (a `weakref.WeakKeyDictionary` keyed by the "
            f"tensor), or {remove} when done."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, [entry], "WAL402")


PATTERNS = (NodeMetadataPattern(), CtxAttributePattern())
"""In the order they are tried, after the hooks of :mod:`.autograd`."""
