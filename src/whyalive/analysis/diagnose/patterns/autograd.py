"""Loops through the autograd graph: hooks, ``ctx`` attributes and metadata that refer back.

A tensor owns its autograd node (``grad_fn``) in C++, and the node owns what is
attached to it. When the attachment refers back to the tensor, the loop runs
through C++; the cyclic GC cannot see those references and never frees it
(:mod:`whyalive.analysis.uncollectable` finds such loops; their C++ references are edges of
kind ``autograd``). The same shapes also occur where the GC does see every
reference (a node nothing else holds); the words then say it is freed late.
"""

from __future__ import annotations

import sys
import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.edges import EdgeName
from whyalive.analysis.edit_text import weak_referenceable
from whyalive.analysis.fix_edits import WORDS_ONLY
from whyalive.analysis.naming import (
    chain,
    expression,
    label,
    qualname_of,
    reference_code,
)
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.guarded import type_qualname, type_short_name
from whyalive.kinds.autograd_graph import NODE_HOOKS, NODE_PREHOOKS, TENSOR_HOOKS
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek

METADATA = ".metadata"
BACKWARD_HOOKS = "._backward_hooks"
_MODULE_HOOK_DICTS = {
    "._forward_hooks": "register_forward_hook",
    "._forward_pre_hooks": "register_forward_pre_hook",
    "._backward_hooks": "register_full_backward_hook",
    "._backward_pre_hooks": "register_full_backward_pre_hook",
}
_USER_STEPS = (ek.CELL, ek.ATTRIBUTE, ek.KEY, ek.INDEX, ek.LOCAL)


HOOK_REGISTRIES = frozenset({TENSOR_HOOKS, NODE_PREHOOKS, NODE_HOOKS})
"""The C++ references to hook dicts (keyed by handle ids) the autograd walk names."""


def is_hook_registry_edge(name: EdgeName) -> bool:
    """Whether ``name`` leads to a dict of hooks keyed by handle ids: a tensor's or a node's
    (held in C++), or a module's ``._forward_hooks`` and the other ``._*_hooks``."""
    return name.name in HOOK_REGISTRIES or (
        name.name.startswith("._") and name.name.endswith("_hooks")
    )


def is_tensor(view: CycleView, node: int) -> bool:
    torch = sys.modules.get("torch")
    base = getattr(getattr(torch, "_C", None), "TensorBase", None)
    return isinstance(base, type) and issubclass(type(view.obj(node)), base)


def _through_cpp(view: CycleView) -> bool:
    """Whether the loop closes through references only C++ holds (never collected)."""
    return bool(view.graph.cpp_edges)


def edges_named(view: CycleView, name: str) -> list[NamedEdge]:
    return [edge for edge in view.edges if edge.name.name == name]


def tensor_code(view: CycleView, tensor: int) -> str | None:
    """How the user's code names a tensor (``y``, ``self.acts``), if it does."""
    for edge in view.edges_into(tensor):
        if edge.name.kind in _USER_STEPS:
            code = reference_code(view, edge)
            if code:
                return code
    return None


def _node_words(view: CycleView, node: int) -> str:
    return type_short_name(type(view.obj(node)))


def grad_fn_of(view: CycleView, node: int) -> int | None:
    """The tensor in the cycle whose ``grad_fn`` is ``node``."""
    for edge in view.edges_into(node):
        if edge.name.name == ".grad_fn" and is_tensor(view, edge.source):
            return edge.source
    return None


def never_freed(view: CycleView, holder: str) -> str:
    if _through_cpp(view):
        return (
            f"{holder} holds it in C++, where the cyclic GC cannot see it: the collector "
            "takes the loop for something held from outside and never frees it, so the "
            "tensor, its graph and everything the loop reaches stay alive until the process ends"
        )
    return (
        f"{holder} holds it; here nothing else held the node, so the collector saw the whole "
        "loop and frees it at its next run, but until then the tensor and its graph stay alive"
    )


def _captures(view: CycleView, start: int, goal: int) -> tuple[str, list[NamedEdge]]:
    """How a hook keeps ``goal``: ("`y`", steps) or ("`self`, which holds it", steps)."""
    steps = chain(view, start, goal)
    cells = [e for e in steps if e.name.kind == ek.CELL]
    first = steps[1] if len(steps) > 1 and steps[0].name.kind == ek.CLOSURE else None
    if first is not None and first.name.kind == ek.CELL and first.target == goal:
        named = tensor_code(view, goal)
        return (f"`{named}` itself" if named else "the tensor itself"), steps
    if cells:
        variable = reference_code(view, cells[0])
        if variable:
            return f"`{variable}`, which holds it", steps
    if steps and steps[0].name.kind == ek.BOUND_SELF:
        return f"its object {label(view, steps[0].target)}, which holds it", steps
    return "an object that holds it", steps


class TensorHookPattern:
    """``y.register_hook(lambda g: g * y.sum())``: the hook refers back to its tensor."""

    name = "tensor-hook-loop"
    title = "tensor hook that refers back to its tensor"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A tensor's hook dict in the loop, one of whose hooks leads back to the tensor."""
        for edge in edges_named(view, TENSOR_HOOKS) + edges_named(view, BACKWARD_HOOKS):
            tensor = edge.source if is_tensor(view, edge.source) else grad_fn_of(view, edge.source)
            if tensor is None:
                continue
            for entry in view.edges_from(edge.target):
                if entry.name.kind == ek.KEY and chain(view, entry.target, tensor):
                    return self._words(view, tensor, entry)
        return None

    def _words(self, view: CycleView, tensor: int, entry: NamedEdge) -> PatternMatch:
        name = tensor_code(view, tensor)
        code = f"`{name}`" if name else "the tensor"
        grad_fn = next(
            (e.target for e in view.edges_from(tensor) if e.name.name == ".grad_fn"), None
        )
        node = "its node"
        if grad_fn is not None:
            kind = _node_words(view, grad_fn)
            node = f"`{name}.grad_fn` ({kind})" if name else f"its `grad_fn` ({kind})"
        what, _ = _captures(view, entry.target, tensor)
        registered = f"`{name}.register_hook(...)`" if name else "`register_hook`"
        summary = (
            f"the hook {label(view, entry.target)} registered with {registered} captures "
            f"{what}, and {node} holds the hook"
        )
        explanation = (
            f"`register_hook` stores the hook in a dict that the tensor's autograd node "
            f"({node}) keeps, and the hook refers back to {code}, which owns that node: "
            f"tensor -> grad_fn -> hooks -> hook -> tensor. {never_freed(view, 'The node')}."
        )
        if name:
            fix = (
                f"Let the hook hold `{name}` weakly (`weakref.proxy({name})` as a keyword-only "
                f"default), or keep the handle `{name}.register_hook(...)` returns and call its "
                f"remove method once the hook has run; where only the values are needed keep "
                f"`{name}.detach()`, not the tensor with its graph."
            )
        else:
            fix = (
                "Let the hook hold the tensor weakly (a `weakref.proxy` as a keyword-only "
                "default), or keep the handle its registration returns and call its remove "
                "method once the hook has run; where only the values are needed keep a "
                "detached copy, not the tensor with its graph."
            )
        # The registration, named by the code that made it: the hook dict's key is a
        # handle id that means nothing to the reader.
        cut_words = f"the hook registered with {registered}, which captures {what}"
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [entry], "WAL401", cut_words
        )


class ModuleHookPattern:
    """Grad-CAM: an object's bound methods are a module's hooks and it keeps the output."""

    name = "module-hook-loop"
    title = "module hooks whose object keeps the module's output with its graph"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A bound method in a module's hook dict whose object holds a tensor of the loop."""
        for edge in view.edges:
            if edge.name.kind != ek.BOUND_SELF:
                continue
            method, owner = edge.source, edge.target
            # A tensor's own `_backward_hooks` (its `register_hook` dict) is no module's.
            registrars = [
                _MODULE_HOOK_DICTS[held.name.name]
                for into in view.edges_into(method)
                for held in view.edges_into(into.source)
                if held.name.name in _MODULE_HOOK_DICTS and not is_tensor(view, held.source)
            ]
            kept = [
                e
                for e in view.edges_from(owner)
                if e.name.kind in _USER_STEPS and kept_tensor(view, e)
            ]
            if registrars and kept and _through_cpp(view):
                return self._words(view, method, owner, registrars[0], kept)
        return None

    def _words(
        self, view: CycleView, method: int, owner: int, registrar: str, kept: list[NamedEdge]
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        func = qualname_of(view.obj(method)).rsplit(".", 1)[-1]
        # What the fix changes: the stores of the output (detached instead) and the
        # registrations of the object's methods (removed through their handles).
        outputs = [e for e in kept if is_tensor(view, e.target)] or kept
        stored = [expression("self", [e]) or e.name.name for e in outputs]
        registered = _registrations(view, owner)
        registrars = list(dict.fromkeys(_MODULE_HOOK_DICTS[n] for n, _ in registered))
        summary = (
            f"{a_code(cls)} object registers its own method `{func}` with `{registrar}` and "
            f"keeps the module's output with its autograd graph in `{stored[0]}`"
        )
        explanation = (
            f"Module hooks live in the module's hook dicts, and a full backward hook is also "
            f"held by the autograd graph of the output (its `grad_fn`, in C++). The `{cls}` "
            f"object's bound method holds the object, which holds the output "
            f"(`{stored[0]}`), whose graph holds the hook again. "
            f"{never_freed(view, 'The graph')}, and the module with its weights with it."
        )
        kept_in = " and ".join(f"`{s}`" for s in stored)
        # Unquoted: the method names are no variables at the lines the cut was made.
        handles = " and ".join(registrars) or registrar
        fix = (
            f"Store a detached copy in {kept_in} (the output's detach method: the values "
            f"without the graph; the same for gradients), and remove the hooks when done: keep "
            f"the handles {handles} return and call their remove method (in a close method, "
            "or where a with-block ends), so that the module no longer holds the object."
        )
        hooks = " and ".join(registrars)
        cut_words = f"the output kept in {kept_in} with its graph" + (
            f", and the object's methods registered with {hooks}" if hooks else ""
        )
        cut = outputs + [entry for _, entry in registered]
        # Held weakly, the output would die with the forward pass: it must be detached.
        return PatternMatch(
            self.name,
            self.title,
            summary,
            explanation,
            fix,
            cut,
            None,
            cut_words,
            remedy=WORDS_ONLY,
        )


def _registrations(view: CycleView, owner: int) -> list[tuple[str, NamedEdge]]:
    """(hook dict name, its entry) for each bound method of ``owner`` that a module's hook
    dict in the loop holds: what ``handle.remove()`` takes away."""
    return [
        (held.name.name, entry)
        for bound in view.edges_into(owner)
        if bound.name.kind == ek.BOUND_SELF
        for entry in view.edges_into(bound.source)
        if entry.name.kind == ek.KEY
        for held in view.edges_into(entry.source)
        if held.name.name in _MODULE_HOOK_DICTS
    ]


def kept_tensor(view: CycleView, edge: NamedEdge) -> bool:
    """Whether ``edge`` leads, through a builtin container, to a tensor of the loop (not
    through an object of the user's, such as a layer keeping its last output: that object
    is what is kept, and a tensor-saving fix does not apply)."""
    if is_tensor(view, edge.target):
        return True
    if type(view.obj(edge.target)) not in (list, tuple, dict, set):
        return False
    return any(is_tensor(view, e.target) for e in view.edges_from(edge.target))


class NodeHookPattern:
    """``node.register_prehook(hook)`` where the hook keeps a structure that holds the node."""

    name = "node-hook-loop"
    title = "autograd node hook that refers back to its node"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A node's hook dict in the loop whose hook leads back to the node (or its tensor)."""
        for edge in edges_named(view, NODE_PREHOOKS) + edges_named(view, NODE_HOOKS):
            node = edge.source
            goals = [node] + [t for t in [grad_fn_of(view, node)] if t is not None]
            for entry in view.edges_from(edge.target):
                if entry.name.kind != ek.KEY:
                    continue
                for goal in goals:
                    steps = chain(view, entry.target, goal)
                    if steps:
                        return self._words(view, edge, entry, goal, steps)
        return None

    def _words(
        self,
        view: CycleView,
        dict_edge: NamedEdge,
        entry: NamedEdge,
        goal: int,
        steps: list[NamedEdge],
    ) -> PatternMatch:
        node = dict_edge.source
        kind = type_short_name(type(view.obj(node)))
        registrar = dict_edge.name.name.removesuffix("() hooks")
        user = [e for e in steps if e.name.kind in _USER_STEPS and e.name.kind != ek.CELL]
        # The entry of the structure that holds the node's list (`['intermediates']`), not
        # the list's item: what the code writes and can drop after the step.
        keys = [e for e in user if e.name.kind in (ek.KEY, ek.ATTRIBUTE)]
        back = keys[-1] if keys else (user[-1] if user else None)
        cells = [e for e in steps if e.name.kind == ek.CELL]
        variable = reference_code(view, cells[0]) if cells else None
        after = steps[steps.index(cells[0]) + 1 :] if cells else []
        bound = [e for e in steps if e.name.kind == ek.BOUND_SELF]
        if not cells and bound:
            # The hook is a method (or a partial of one): its `self` leads back to the node.
            variable = _self_name(view.obj(bound[0].source))
            after = steps[steps.index(bound[0]) + 1 :] if variable else []
        held_at = expression(variable, after) if variable else None
        named = tensor_code(view, goal) if goal != node else None
        what = f"`{named}`" if named else ("the node" if goal == node else "its output tensor")
        where = f" at `{held_at}`" if held_at else ""
        captured = f"`{variable}`" if variable else "a structure"
        summary = (
            f"a hook registered with `{registrar}` on the autograd node `{kind}` captures "
            f"{captured}, which holds {what}{where}"
        )
        explanation = (
            f"`{registrar}` stores the hook in a dict that the node keeps in C++; the hook "
            f"reaches {what} again through {captured}: node -> hooks -> hook -> "
            f"{captured} -> node. {never_freed(view, 'The node')}."
        )
        if variable and not after:  # the hook captures the node or its tensor itself
            # A tensor takes a weak reference; an autograd node does not.
            weak = (
                f", or `weakref.ref({variable})`,"
                if cells and weak_referenceable(view.obj(cells[0].target))
                else ""
            )
            instead = f"let the hook use the gradients it is given{weak} instead of `{variable}`"
        elif held_at and "[" in held_at:
            container = held_at.rsplit("[", 1)[0]
            # Not `del {container}`: the hook's own variable, which it still reads.
            instead = (
                f"drop the reference when the step is done (`{held_at}` out of the "
                f"structure: `del {held_at}`, or `{container}.clear()`); autograd nodes "
                "cannot be weakly referenced, so keep them only as long as the step needs "
                "them"
            )
        else:
            instead = "drop the structure's reference to the node (or its tensor) after backward"
        fix = (
            f"Remove the hook once backward has run (keep the handle {registrar} returns and "
            f"call its remove method), or {instead}."
        )
        cut = [back] if back is not None else [entry]
        cut_words = (
            None if back is not None else f"the hook registered with `{registrar}` on `{kind}`"
        )
        # Autograd nodes cannot be weakly referenced: the fix is to drop or unhook.
        return PatternMatch(
            self.name,
            self.title,
            summary,
            explanation,
            fix,
            cut,
            "WAL401",
            cut_words,
            remedy=WORDS_ONLY,
        )


def _self_name(method: object) -> str | None:
    """The name a bound method's function gives its instance (``self``), read from its code."""
    code = getattr(getattr(method, "__func__", None), "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_argcount + code.co_posonlyargcount < 1:
        return None
    return str(code.co_varnames[0])


HOOK_PATTERNS = (ModuleHookPattern(), TensorHookPattern(), NodeHookPattern())
"""In the order they are tried: the most specific attachment first."""
