"""Cycles made by frameworks: pytest's own objects, torch autograd nodes."""

from __future__ import annotations

import os
import sys
import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import DELETE
from whyalive.analysis.naming import variable_of
from whyalive.analysis.paths import CycleView
from whyalive.guarded import type_module, type_qualname, type_short_name
from whyalive.words import edge_kinds as ek


def _is_pytest_object(obj: object) -> bool:
    """An object of pytest's own making: its classes, or a frame running pytest's code."""
    module = type_module(type(obj)) or ""
    if module == "_pytest" or module.startswith(("_pytest.", "pytest.")):
        return True
    code = obj.f_code if type(obj) is types.FrameType else None
    return code is not None and f"{os.sep}_pytest{os.sep}" in code.co_filename


class PytestIdiomPattern:
    """pytest's own objects (``pytest.raises(...) as excinfo``, ``pytest.warns``) in the cycle."""

    name = "pytest-idiom"
    title = "pytest idiom (dies with the test)"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A cycle through an object pytest made for the test (ExceptionInfo, a recorder)."""
        owned = [n for n in view.members if _is_pytest_object(view.obj(n))]
        if not owned:
            return None
        shown = [n for n in view.shown if n in set(owned)] or owned
        what = type_short_name(type(view.obj(shown[0])))
        holders = [e for n in shown for e in view.edges_into(n) if e.name.kind in ek.USER_KINDS]
        held_by = f" in `{holders[0].name.name}`" if holders else ""
        summary = f"pytest's `{what}` is kept by the test{held_by} and refers back to its frame"
        local = variable_of(holders[0]) if holders and holders[0].name.kind == ek.LOCAL else None
        # The test's own name for what pytest made (`err`), never one it does not have.
        kept = local if local and local.isidentifier() else None
        bound = f" as {kept}" if kept else ""
        explanation = (
            f"`with pytest.raises(...){bound}:` keeps the exception, whose traceback holds "
            f"the test's own frame, which holds {f'`{kept}`' if kept else 'it'} (`pytest.warns` "
            f"and fixtures' frames do the same). pytest's `{what}` closes the loop. The cycle "
            "is freed with the test's frame at the next collection, so it does not fail the "
            "test by default."
        )
        drop = (
            f"`del {local}`" if local and local.isidentifier() else "delete the local that keeps it"
        )
        fix = (
            f"Nothing to fix unless it holds much memory: then {drop} after its last use in "
            "the test."
        )
        also = "It is freed with the test's frame at the next collection anyway."
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, holders[:1], None, None, DELETE, also
        )


def _autograd_node_type() -> type | None:
    graph = sys.modules.get("torch.autograd.graph")
    node = getattr(graph, "Node", None)
    return node if isinstance(node, type) else None


def _is_autograd_node(obj: object) -> bool:
    node_type = _autograd_node_type()
    if node_type is None:
        return False
    try:
        return issubclass(type(obj), node_type)
    except Exception:
        return False


class AutogradNodePattern:
    """Hooks or attributes attached to autograd nodes that refer back to the tensor."""

    name = "autograd-node"
    title = "autograd node holding its tensor or owner"

    def match(self, view: CycleView) -> PatternMatch | None:
        """An autograd node (``grad_fn``, custom Function ctx) inside the cycle."""
        nodes = [n for n in view.shown if _is_autograd_node(view.obj(n))]
        grad_fn_edges = [e for e in view.edges if e.name.name == ".grad_fn"]
        if not nodes and not grad_fn_edges:
            return None
        node = nodes[0] if nodes else grad_fn_edges[0].target
        out = [e for e in view.edges_from(node) if e.name.kind != ek.INTERNAL] or view.edges_from(
            node
        )
        summary = f"autograd node `{type_qualname(type(view.obj(node)))}` is part of the cycle"
        if out:
            summary += f": `{out[0].name.name}` attached to it refers back into the cycle"
        explanation = (
            "A tensor holds its autograd node (`grad_fn`) and the node holds what was attached "
            "to it: hooks registered with `register_hook`/`register_prehook`, or attributes set "
            "on it (a custom Function's `ctx`). When that attachment captures the tensor or its "
            "owner, the loop runs through autograd; the activations stay alive until the "
            "collector runs, and loops that pass through C++ are never collected at all."
        )
        attr = out[0].name.name if out and out[0].name.kind == ek.ATTRIBUTE else None
        attr = attr if attr and attr[1:].isidentifier() else None
        ctx_fix = (
            f"In a custom `autograd.Function`, save tensors with `ctx.save_for_backward(...)` "
            f"(it does not hold the output strongly) instead of `ctx{attr}`. "
            if attr
            else "In a custom `autograd.Function`, save tensors with "
            "`ctx.save_for_backward(...)` rather than as `ctx` attributes. "
        )
        fix = (
            f"{ctx_fix}Do not capture the tensor (or its owner) in hooks or attributes on its "
            "own autograd node: capture a `weakref.ref` instead, remove hooks with "
            "`handle.remove()` after use, and keep per-step state in a side table."
        )
        return PatternMatch(self.name, self.title, summary, explanation, fix, out[:1], "WAL401")
