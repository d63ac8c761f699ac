"""Hooks registered on the object they refer to: an entry of a hook registry that leads back."""

from __future__ import annotations

import types

from whyalive.analysis.cuts import is_registry_attribute
from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import WEAKEN
from whyalive.analysis.naming import chain, qualname_of, short_name
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.guarded import type_module, type_mro, type_qualname, type_short_name
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek


def _hook_name(view: CycleView, entry: NamedEdge) -> str | None:
    """The function the registry entry holds (through a bound method, partial or wrapper)."""
    for edge in [entry, *view.edges_from(entry.target)]:
        obj = view.obj(edge.target)
        if type(obj) is types.MethodType:
            obj = obj.__func__
        if type(obj) is types.FunctionType:
            return short_name(qualname_of(obj))
    return None


class HookRegistryPattern:
    """``module.register_forward_hook(fn)`` where ``fn`` refers back to the module (a closure
    capturing ``self``, a bound method): an entry of ``._forward_hooks`` closes the loop."""

    name = "hook-registry"
    title = "hook registered on the object it refers to"

    def match(self, view: CycleView) -> PatternMatch | None:
        """object --._*hooks--> registry --[id]--> hook ...--> the same object."""
        for edge in view.edges:
            if not is_registry_attribute(edge.name) or not isinstance(view.obj(edge.target), dict):
                continue  # a registry maps handle ids to hooks
            owner = edge.source
            for entry in view.edges_from(edge.target):
                back = chain(view, entry.target, owner)
                if back:
                    return self._words(view, owner, edge, entry, back)
        return None

    def _words(
        self,
        view: CycleView,
        owner: int,
        registry: NamedEdge,
        entry: NamedEdge,
        back: list[NamedEdge],
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        hook = _hook_name(view, entry)
        named = f" `{hook}`" if hook else ""
        registry_name = registry.name.name
        captured = [e for e in back if e.name.kind == ek.CELL and e.target == owner]
        bound = any(e.name.kind == ek.BOUND_SELF for e in back)
        through = (
            "captures the object as a closure variable"
            if captured
            else "is a method bound to the object"
            if bound
            else "refers back to the object"
        )
        summary = (
            f"{a_code(cls)} object keeps the hook{named} in `{registry_name}` (at "
            f"`{entry.name.name}`), and the hook {through}"
        )
        # torch's registries hand out a handle; a dict of the user's own (`self.hooks =
        # {...}`) is emptied by the code that filled it.
        module = _is_torch_module(type(view.obj(owner)))
        holds = "everything it holds (parameters, buffers)" if module else "everything it holds"
        explanation = (
            f"Registering a hook puts it in the object's `{registry_name}` registry, and the "
            f"hook{named} {through}: object -> registry -> hook -> object, a loop "
            f"reference counting cannot free, so the object and {holds} wait for the collector."
        )
        undo = (
            "keep the handle the registering call returns and call its remove method"
            if module
            else f"take it out of `{registry_name}` again"
        )
        fix = (
            "Let the hook refer to the object weakly (a `weakref.proxy`, which it uses the "
            f"same way), or undo the registration when done: {undo}."
        )
        also = f"Or undo the registration when the object is done: {undo}."
        cut = captured[:1] or [entry]
        cut_words = None
        if not captured:
            out = "its handle's remove method takes it out" if module else "a `del` takes it out"
            cut_words = (
                f"the entry `{entry.name.name}` of `{registry_name}` of {a_code(cls)} object "
                f"(the hook{named}; {out})"
            )
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, None, cut_words, WEAKEN, also
        )


def _is_torch_module(cls: type) -> bool:
    """Whether ``cls`` is a ``torch.nn.Module`` (read from the MRO: torch is never imported)."""
    return any(
        type_short_name(c) == "Module" and type_module(c) == "torch.nn.modules.module"
        for c in type_mro(cls)
    )
