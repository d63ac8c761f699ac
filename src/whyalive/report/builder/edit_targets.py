"""The live facts an edit is built on: for each label of a cut, which object a proxy in the
fixed statement would point to, whether it and the stored value can be weakly referenced,
whether the stored value is the holder's own or shared with the rest of the cycle, and the
``def`` that captures a closure variable. :mod:`whyalive.analysis.fix_edits` builds the edit
from these :class:`~whyalive.analysis.fix_edits.Target` facts and the statements found.
"""

from __future__ import annotations

import ast
import functools
import types
from dataclasses import replace

from whyalive.analysis.cuts import is_registry_attribute
from whyalive.analysis.fix_edits import DELETE, WEAKEN, Rewrite, Target, build_rewrite
from whyalive.analysis.fix_edits import weak_referenceable as weakable
from whyalive.analysis.naming import cell_variable, is_instance_node, variable_of
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.sourcelines import SourceLines
from whyalive.analysis.statements import SourceHit, hit_for, stored_target
from whyalive.analysis.structure import Structure, type_words
from whyalive.words import edge_kinds as ek


def build(
    view: CycleView,
    remedy: str,
    found: list[tuple[NamedEdge, SourceHit]],
    sources: SourceLines,
    structure: Structure | None,
) -> Rewrite | None:
    """The one edit that applies ``remedy`` at every statement found, or None."""
    labels = frozenset(edge.name.name[1:] for edge, _ in found if edge.name.kind == ek.ATTRIBUTE)
    targets: list[Target] = []
    for edge, hit in found:
        made = _targets(view, edge, hit, labels, remedy, sources, structure)
        if made is None:
            return None
        targets += made
    return build_rewrite(targets, remedy)


def _targets(
    view: CycleView,
    edge: NamedEdge,
    hit: SourceHit,
    labels: frozenset[str],
    remedy: str,
    sources: SourceLines,
    structure: Structure | None,
) -> list[Target] | None:
    """The label's targets: one, or for a captured variable held weakly one per function
    that shares its cell (``keep_acts`` and ``keep_grads`` both closing over ``self``): the
    cut removes the cell's reference, which only rewriting every one of them undoes."""
    value = view.obj(edge.target)
    if edge.name.kind == ek.CELL and remedy == WEAKEN and weakable(value) and not _transient(value):
        functions = closure_functions(view, edge.source)
        if not functions:
            return None
        targets = []
        for function in functions:
            capture = sources.function_node(function.__code__)
            parsed = sources.parsed(function.__code__.co_filename)
            if capture is None or parsed is None:
                return None
            # The `def` (or lambda) that captures the variable.
            captured = hit_for(function.__code__.co_filename, parsed, capture, hit.target)
            variable = cell_variable(view, edge.source)
            if variable is None or not sources.name_takes_proxy(function, variable):
                return None  # the function uses the object where a proxy is not it
            target = _target(view, edge, captured, labels, remedy, sources, structure)
            targets.append(replace(target, capture=capture))
        return targets
    return [_target(view, edge, hit, labels, remedy, sources, structure)]


def _target(
    view: CycleView,
    edge: NamedEdge,
    hit: SourceHit,
    labels: frozenset[str],
    remedy: str,
    sources: SourceLines,
    structure: Structure | None,
) -> Target:
    holder = _holder_object(view, edge)
    value = view.obj(edge.target)
    variable = None
    if edge.name.kind == ek.CELL:
        variable = cell_variable(view, edge.source)
    elif edge.name.kind == ek.LOCAL:
        variable = variable_of(edge)
    elif edge.name.kind == ek.ATTRIBUTE and remedy == DELETE:
        stored = _stored_on(hit)
        variable = ast.unparse(stored) if stored is not None else None
    return Target(
        hit=hit,
        holder_class=type(holder) if holder is not None else None,
        holder_weak=holder is not None and weakable(holder),
        value_weak=weakable(value) and not _transient(value),
        value_shared=_shared(view, edge, structure),
        labels=labels,
        variable=variable,
        proxy_ok=_takes_proxy(value, holder, sources),
    )


def _shared(view: CycleView, edge: NamedEdge, structure: Structure | None) -> bool:
    """Whether another object of the cycle than the holder refers to the stored value (a
    node of a linked list that its neighbours link to): then it is not a new object made for
    the holder. A structure says it by its links: another name leads to the value's type."""
    if structure is not None:
        kind = type_words(view.obj(edge.target))
        return any(link.name != edge.name and kind in link.target_types for link in structure.links)
    return any(into.source != edge.source for into in view.edges_into(edge.target))


def _takes_proxy(value: object, holder: object, sources: SourceLines) -> bool:
    """Whether the function a stored bound method or partial runs works with a proxy of the
    holder where it gets the holder: ``MethodType(f, model)`` with ``f`` calling
    ``type(self)`` does not (the proxy is not a ``Linear``)."""
    if type(value) is types.MethodType:
        return value.__self__ is not holder or sources.takes_proxy(value.__func__, 0)
    if type(value) is functools.partial:
        func = value.func
        bound_here = type(func) is types.MethodType and func.__self__ is holder
        # Place -1 of a bound method: its own `self`, before the partial's arguments.
        if bound_here and not sources.takes_proxy(func, -1):
            return False
        places: list[int | str] = [i for i, arg in enumerate(value.args) if arg is holder]
        places += [key for key, arg in value.keywords.items() if arg is holder]
        return all(sources.takes_proxy(func, place) for place in places)
    return True


def _transient(value: object) -> bool:
    """A callable made where it is stored (a bound method, a partial, a function): only the
    reference that holds it keeps it alive, so a weak reference to it would die at once."""
    return type(value) in (types.MethodType, types.FunctionType, functools.partial)


def _holder_object(view: CycleView, edge: NamedEdge) -> object | None:
    """The object a proxy in the fixed statement would point to: the attribute's owner, the
    module whose hook registry holds the entry, the owner of the list an item is in."""
    source = view.obj(edge.source)
    if edge.name.kind == ek.ATTRIBUTE and is_instance_node(source):
        return source
    for into in view.edges_into(edge.source):
        if into.name.kind == ek.ATTRIBUTE and (
            is_registry_attribute(into.name) or edge.name.kind == ek.INDEX
        ):
            return view.obj(into.source)
    owners = [view.obj(n) for n in view.shown if is_instance_node(view.obj(n))]
    return owners[0] if owners else None


def closure_functions(view: CycleView, cell: int) -> list[types.FunctionType]:
    """The functions of the cycle that close over ``cell``, one per code (a lambda made in a
    loop is rewritten once)."""
    functions: dict[types.CodeType, types.FunctionType] = {}
    for into in view.edges_into(cell):
        fn = view.obj(into.source)
        if into.name.kind == ek.CLOSURE and type(fn) is types.FunctionType:
            functions.setdefault(fn.__code__, fn)
    return list(functions.values())


def _stored_on(hit: SourceHit) -> ast.Attribute | None:
    """``probe.frame`` in ``probe.frame = sys._getframe()``: an attribute of a variable."""
    stored = stored_target(hit.statement)
    if isinstance(stored, ast.Attribute) and isinstance(stored.value, ast.Name):
        return stored
    return None


__all__ = ["build", "closure_functions"]
