"""Containers in cycles: an object in its own container, a container in itself, trees."""

from __future__ import annotations

from whyalive.analysis.cuts import is_back_reference
from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import WEAKEN
from whyalive.analysis.naming import (
    deletion,
    expression,
    holder_code,
    is_instance_node,
    is_python,
)
from whyalive.analysis.origin import is_installed_file
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.source_targets import methods_of, module_file
from whyalive.guarded import type_qualname, type_short_name
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek

_CONTAINERS = (dict, list, tuple, set, frozenset)


class SelfInOwnContainerPattern:
    """``self.items = [self]``: an object kept in a container that its own attribute holds."""

    name = "self-in-own-container"
    title = "object kept in a container on its own attribute"

    def match(self, view: CycleView) -> PatternMatch | None:
        """object --.attr--> container --[i]/['k']--> the same object."""
        for edge in view.edges:
            if edge.name.kind != ek.ATTRIBUTE or not is_instance_node(view.obj(edge.source)):
                continue
            if type(view.obj(edge.target)) not in _CONTAINERS:
                continue
            back = [e for e in view.edges_from(edge.target) if e.target == edge.source]
            if back:
                return self._words(view, edge, back[0])
        return None

    def _words(self, view: CycleView, attr: NamedEdge, back: NamedEdge) -> PatternMatch:
        cls = type_qualname(type(view.obj(attr.source)))
        container_type = type(view.obj(attr.target))
        kind = container_type.__name__
        held_in = expression("self", [attr])
        entry = expression("self", [attr, back])
        summary = (
            f"{a_code(cls)} object keeps itself in the {kind} of its own attribute "
            f"`{attr.name.name}` (at `{back.name.name}`)"
        )
        explanation = (
            f"The `{cls}` object holds the {kind} in `{attr.name.name}`, and the {kind} holds "
            "the object again: a registry, a list of listeners or a lookup table that includes "
            "its own owner is a cycle, freed only by the cyclic collector."
        )
        if issubclass(container_type, list) and held_in:
            remove = f"`{held_in}.remove(self)`"
        elif issubclass(container_type, dict) and entry and back.name.name != "key":
            remove = f"`del {entry}`"
        else:
            remove = "remove it"
        dict_like = issubclass(container_type, dict)
        weak = "`weakref.WeakValueDictionary`" if dict_like else "`weakref.WeakSet`"
        fix = (
            f"Keep the object out of its own {kind}: keep the registry outside the object, "
            f"store `weakref.proxy(self)` or use a {weak}, or {remove} when done."
        )
        also = f"Or keep the registry outside the object, use a {weak}, or {remove} when done."
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [back], None, None, WEAKEN, also
        )


class ParentChildPattern:
    """Objects that refer to each other: a tree's parent and child, a registry and member."""

    name = "parent-child"
    title = "parent and child refer to each other"

    def match(self, view: CycleView) -> PatternMatch | None:
        """Two or more user objects in the loop, linked by attributes."""
        instances = [n for n in view.shown if is_instance_node(view.obj(n))]
        if len(instances) < 2:
            return None
        attr_edges = [e for e in view.edges if e.name.kind == ek.ATTRIBUTE]
        if not attr_edges:
            return None
        if len({e.name.name for e in view.edges}) == 1:
            return None  # one link repeated (a ring of `.next`): not owner and member
        instance_set = set(instances)
        direct = [e for e in attr_edges if e.target in instance_set and e.source in instance_set]
        # A library's object pointing at the user's: `model.trainer = self` set on a torch
        # module, or a `DataLoader`'s own `.dataset`. Either points back, whatever the names
        # say (the user's `.model` or `.loader` is then the owner's forward link).
        onto_user = [
            e
            for e in direct
            if _installed_class(type(view.obj(e.source)))
            and not _installed_class(type(view.obj(e.target)))
        ]
        library_made = {
            e for e in onto_user if _named_by_class(type(view.obj(e.source)), _attribute(e))
        }
        back = next((e for e in onto_user if e not in library_made), None) or next(
            (e for e in attr_edges if is_back_reference(e.name)), None
        )
        path: list[NamedEdge] = []
        if back is None:
            entry = _entry_to_owner(view, instance_set)
            if entry is not None:
                back, path = entry
        if back is None:
            # The back reference is the direct attribute pointing at an object that holds
            # its children through a container (the child-side link).
            back = onto_user[0] if onto_user else direct[-1] if direct else attr_edges[-1]
        if not path:
            path = [back]
        child = type_qualname(type(view.obj(path[0].source)))
        parent = type_qualname(type(view.obj(back.target)))
        where = expression("", path) or back.name.name
        if parent == child:  # a tree of one class: "the `Node` reaches the `Node`" says nothing
            summary = (
                f"`{child}` objects refer to each other (a `{child}` holds the one above it in "
                f"`{where}`)"
            )
            article = a_code(parent)
            reaches = (
                f"{article[0].upper()}{article[1:]} reaches another `{child}`, which points "
                "back to it through"
            )
        else:
            summary = (
                f"{a_code(parent)} object and {a_code(child)} object refer to each other "
                f"(the `{child}` holds its `{parent}` in `{where}`)"
            )
            reaches = f"The `{parent}` reaches the `{child}` and the `{child}` points back through"
        explanation = (
            f"{reaches} `{where}`. Two-way links between owner and member keep both alive until "
            f"the cyclic collector runs."
        )
        attr = back.name.name.lstrip(".") if back.name.kind == ek.ATTRIBUTE else ""
        if attr.isidentifier():
            fix = (
                f"Hold the back reference `self.{attr}` weakly: store a `weakref.proxy` of the "
                f"`{parent}` there (it reads like the object), or clear it (`self.{attr} = "
                f"None`) when the `{child}` is detached."
            )
            # The library's own attribute is its business: the fix is the user's link.
            also = (
                ""
                if back in library_made
                else f"Or clear it (`self.{attr} = None`) when the `{child}` is detached."
            )
            # Every child's back reference of that name: together they free the tree.
            backs = [e for e in attr_edges if e.name.name == back.name.name]
        else:
            # Class names and the entry in plain words: the child may be a library's class
            # (`LoggerAdapter`), which no name at the line that made the cut spells.
            fix = (
                f"Hold the back reference weakly (the entry {where} of the {child} object): "
                f"store a `weakref.proxy` of the {parent} object there (it reads like the "
                f"object), or remove the entry when you are done with the {child} object."
            )
            also = (
                f"Or remove the entry when you are done with the {child} object."
                if path != [back]
                else ""
            )
            backs = [back]
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, backs, None, None, WEAKEN, also
        )


def _entry_to_owner(
    view: CycleView, instances: set[int]
) -> tuple[NamedEdge, list[NamedEdge]] | None:
    """A dict entry or list item that points back to an object holding heavy data, in a
    container that another object of the cycle holds by an attribute
    (``LoggerAdapter.extra['service']`` -> the ``Service``): that entry is the back reference,
    not the owner's own attribute. The entry, and the path from that other object to it."""
    owners = {nodes[0] for nodes, _ in view.holder_paths} & instances
    for edge in view.edges:
        if edge.name.kind not in (ek.KEY, ek.INDEX) or edge.target not in owners:
            continue
        if type(view.obj(edge.source)) not in _CONTAINERS:
            continue
        for into in view.edges_into(edge.source):
            # The container's holder holds no heavy data itself (an adapter, a log): a
            # tree's node holding its children's list is an owner, its items forward links.
            if (
                into.name.kind == ek.ATTRIBUTE
                and into.source in instances
                and into.source not in owners
            ):
                return edge, [into, edge]
    return None


class SelfContainingContainerPattern:
    """A container that holds itself, directly or through a state dict."""

    name = "self-containing-container"
    title = "container that contains itself"

    def match(self, view: CycleView) -> PatternMatch | None:
        """Only builtin containers (and instance dicts) in the loop."""
        if not all(type(view.obj(n)) in _CONTAINERS for n in view.shown):
            return None
        back_fix = key = ""
        if len(view.shown) == 1:
            node = view.shown[0]
            edge = view.edges[0] if view.edges else None
            where = edge.name.name if edge else "an item"
            summary = (
                f"{a_code(type_short_name(type(view.obj(node))))} contains itself at `{where}`"
            )
            cut = [edge] if edge else []
        elif any(is_back_reference(e.name) for e in view.edges):
            # A tree of dicts whose children keep `['parent']`: that key points back.
            key = next(e.name.name for e in view.edges if is_back_reference(e.name))
            cut = [e for e in view.edges if e.name.name == key]
            held = type_short_name(type(view.obj(cut[0].target)))
            summary = f"{a_code(held)} holds containers whose entry `{key}` refers back to it"
            if held in ("dict", "list"):  # neither takes a weak reference
                back_fix = (
                    f"Keep the entry `{key}` out of the children (a `{held}` cannot be held "
                    "weakly: store a key or an id to look it up by, or make the nodes objects "
                    f"that hold it in a `weakref.proxy`), or remove `{key}` from each child "
                    "when the tree is done."
                )
        else:
            order = {n: i for i, n in enumerate(view.shown)}
            root = max(view.shown, key=lambda n: (len(view.edges_from(n)), -order[n]))
            back = view.edges_into(root)
            forward = [e for e in view.edges_from(root) if e.name.kind == ek.KEY]
            lead = forward[0].name.name if forward else "its items"
            summary = (
                f"{a_code(type_short_name(type(view.obj(root))))} holds, at `{lead}`, containers "
                "that refer back to it"
            )
            cut = forward[:1] or back[:1]
        explanation = (
            "A container reachable from its own items (a list that holds itself, or a state "
            "dict whose entries refer back to it, as an optimizer's parameter group can) is a "
            "cycle: reference counting cannot free it, so everything inside waits for the "
            "collector."
        )
        if back_fix:
            explanation = (
                f"Each child keeps the container above it in its entry `{key}` while that "
                "container holds the child: every link goes both ways, so reference counting "
                "cannot free the tree, and everything in it waits for the collector."
            )
        holder = holder_code(view, cut[0].source) if cut else None
        entry = deletion(view, holder, cut[:1]) if holder else None
        name = cut[0].name.name if cut else None
        if back_fix:
            fix = back_fix
        elif entry:
            fix = (
                f"Keep the entries in a separate structure, or remove them after use "
                f"(`del {entry}`)."
            )
        else:
            spelled = f" `{name}`" if name and is_python(name) else ""
            fix = (
                "Do not store the container inside itself (keep the items elsewhere), or "
                f"remove the entry{spelled} that refers back to it after use."
            )
        return PatternMatch(self.name, self.title, summary, explanation, fix, cut, None)


def _installed_class(cls: type) -> bool:
    """Whether ``cls`` is defined by an installed package or the standard library."""
    return any(map(is_installed_file, module_file(cls)))


def _attribute(edge: NamedEdge) -> str:
    return edge.name.name.lstrip(".")


def _named_by_class(cls: type, attribute: str) -> bool:
    """Whether a method of ``cls`` or its bases reads or sets ``attribute`` (its own)."""
    return any(attribute in code.co_names for code, _ in methods_of(cls))
