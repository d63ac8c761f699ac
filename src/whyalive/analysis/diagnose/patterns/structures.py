"""Big linked structures (rings, trees, graphs) read by their repeating link."""

from __future__ import annotations

from whyalive.analysis.cuts import is_back_reference
from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.diagnose.patterns.containers import ParentChildPattern
from whyalive.analysis.diagnose.patterns.fallbacks import ring_words
from whyalive.analysis.fix_edits import WEAKEN
from whyalive.analysis.paths import CycleView
from whyalive.analysis.structure import Link, Structure
from whyalive.words import edge_kinds as ek
from whyalive.words import joined, kind_count_words, members_words


def _link_words(link: Link) -> str:
    name = link.name
    if name.kind == ek.INDEX:
        holders = "list" if "list" in link.source_types else "container"
        return f"{holders} items"
    if name.kind == ek.CELL:
        return "closure cells"
    if name.kind == ek.CLOSURE:
        return f"closure variable `{name.name.split(' ', 1)[-1]}`"
    if name.kind in (ek.ATTRIBUTE, ek.KEY):
        return f"`{name.name}`"
    return f"`{name.name}` references" if name.name else "unnamed references"


class LinkedStructurePattern:
    """A big cycle: a tree with parent pointers, a ring, a doubly linked list, a graph."""

    name = "linked-structure"
    title = "large linked structure"

    def describe(self, view: CycleView, structure: Structure) -> PatternMatch:
        """Words for a component read by :func:`whyalive.analysis.structure.find_structure`."""
        made_of = members_words(structure.member_types)
        shown_links = [link for link in structure.links if link.name.kind != ek.INTERNAL][:4]
        linked = joined([_link_words(link) for link in shown_links])
        summary = f"{made_of} form one cycle" + (f", linked by {linked}" if linked else "")
        cut = structure.cut
        main = cut[0] if cut else None
        back = main is not None and is_back_reference(main.name)
        size = f"{structure.member_count:,} objects"
        if back and main is not None:
            owner = joined([kind_count_words(n, k) for k, n in main.source_types.most_common(2)])
            # Every back reference of the cut (a tree's `.parent` and `.root`) is said as one.
            backs = [link for link in cut if is_back_reference(link.name)]
            others = [
                _link_words(link)
                for link in shown_links
                if link not in backs and link.name.kind != ek.CELL
            ]
            through = f" (through {joined(others)})" if others else ""
            pointers = joined([f"`{link.name.name}`" for link in backs])
            explanation = (
                f"Each of the {owner} points back through {pointers} to an object that "
                f"reaches it again{through}: every link goes both ways, so the whole structure "
                f"({size}) is one cycle that reference counting can never free; it waits for "
                "the cyclic garbage collector."
            )
        else:
            explanation = (
                f"These references join the objects into one strongly connected structure of "
                f"{size}: each object is held by another one of them, so reference counting "
                "never frees any of them; the whole structure waits for the cyclic garbage "
                "collector."
            )
        cut_words = None
        if main is not None:
            cut_words = " and ".join(_cut_link_words(link) for link in cut)
            if not structure.verified:
                cut_words = (
                    "no single reference name frees the whole structure; the most common link "
                    f"is {cut_words}"
                )
        # A ring of one link: that link is each object's only holder (never held weakly).
        ring = structure.verified and [link.name for link in structure.links] == [
            link.name for link in cut
        ]
        fix = _structure_fix(cut if structure.verified else cut[:1], ring=ring)
        pattern = ParentChildPattern if back else LinkedStructurePattern
        loop_cut = view.edges[:1]
        also = _structure_also(cut if structure.verified else [])
        return PatternMatch(
            pattern.name,
            pattern.title,
            summary,
            explanation,
            fix,
            loop_cut,
            None,  # no lint rule looks for parent links
            cut_words,
            WEAKEN,
            also,
        )


def _cut_link_words(link: Link) -> str:
    """ "the attribute `.parent` of every `Node` object (1,999 references)"."""
    holder = link.source_types.most_common(1)[0][0] if link.source_types else "object"
    head, sep, _ = holder.partition(" object")
    every = f"every `{head}` object" if sep and head else f"every {holder}"
    name = link.name
    if name.kind == ek.ATTRIBUTE:
        what = f"the attribute `{name.name}` of {every}"
    elif name.kind == ek.INDEX:
        what = f"the items of {every}"
    elif name.kind == ek.KEY:
        what = f"the entry `{name.name}` of {every}"
    else:
        what = f"{_link_words(link)} of {every}"
    return f"{what} ({link.count:,} {'reference' if link.count == 1 else 'references'})"


def _attribute_codes(links: list[Link]) -> list[str]:
    """``self.parent`` for every attribute link that is a Python name."""
    names = [link.name.name.lstrip(".") for link in links if link.name.kind == ek.ATTRIBUTE]
    return [f"self.{name}" for name in names if name.isidentifier()]


def _structure_also(links: list[Link]) -> str:
    codes = _attribute_codes(links)
    if not codes:
        return ""
    cleared = ", ".join(f"`{code} = None`" for code in codes)
    return (
        f"Or clear the references on every object when you are done with the structure ({cleared})."
    )


# Builtin kinds (as structure counts name them) whose objects take no weak reference.
_NOT_WEAKLY_HELD = frozenset(("dict", "list", "tuple", "int", "str", "bytes", "float"))


def _structure_fix(links: list[Link], *, ring: bool = False) -> str:
    if not links:
        return "Hold the links that point back into the structure weakly (a `weakref.proxy`)."
    codes = _attribute_codes(links)
    if ring and len(codes) == 1:
        return ring_words(codes[0])
    if codes and len(codes) == len(links):
        held = joined([f"`{code}`" for code in codes])
        return (
            f"Hold {held} weakly: store a `weakref.proxy` of the value (it reads like the "
            "object), so reference counting frees the structure as soon as nothing outside "
            f"refers to it; or clear {'it' if len(codes) == 1 else 'them'} on every object "
            "when you are done with the structure."
        )
    name = links[0].name
    if name.kind == ek.INDEX:
        return (
            "Do not let the items refer back to the container that holds them (hold that "
            "reference weakly), or empty the container when done."
        )
    if name.kind == ek.KEY:
        values = set(links[0].target_types)
        if values and values <= _NOT_WEAKLY_HELD:
            # A tree of dicts keeping `['parent']`: its values take no weak reference.
            kinds = joined([f"`{kind}`" for kind in sorted(values)])
            return (
                f"Remove the `{name.name}` entries when done: a {kinds} cannot be held weakly, "
                "so store a key or an id to look it up by instead of the container itself."
            )
        return (
            f"Remove the `{name.name}` entries when done, or keep those values in a "
            "`weakref.WeakValueDictionary`."
        )
    return (
        "Hold these references weakly (a `weakref.proxy`), or clear them when the structure "
        "is done."
    )
