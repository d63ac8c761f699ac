"""Survivors held by a C/C++ owner whyalive cannot name: listed, never failed.

The probe of :mod:`whyalive.analysis.uncollectable` returns the tensors a block made
that are still alive although nothing it can read holds them: no Python object, no
running function, no autograd node, no other tensor of the block. Their C++ side has
more owners than their Python object: an extension's registry, a TorchScript module,
a communication buffer, or an older tensor whose ``.grad`` they are. Once the heap is
unfrozen, one pass over it rules out the gradients (the only such owner a Python object
names); the rest is listed in :attr:`~whyalive.report.Report.held_natively` with what
holds it, and fails nothing: whyalive cannot tell whether that owner is still in use.
"""

from __future__ import annotations

from whyalive.analysis import AnalysisOptions
from whyalive.analysis.uncollectable import grads_of_live_tensors
from whyalive.guarded import sizeof, type_short_name
from whyalive.kinds import KindResolver
from whyalive.kinds.autograd_graph import AutogradReader, loaded_torch
from whyalive.report import AliveObject, Node, Report
from whyalive.words import plural


def held_natively_note(owners: int) -> str:
    """What holds such a survivor, in words."""
    many = plural(owners, "owner") if owners > 0 else "owners"
    return (
        f"held by a C/C++ owner outside Python: its C++ side has {many} besides its Python "
        "object, none of them a Python object, an autograd node or a tensor whyalive can "
        "read (an extension's registry, a TorchScript module, a communication buffer, a "
        "CUDA graph). Listed, not failing: whyalive cannot tell whether that owner still "
        "needs it."
    )


def listed_survivors(held: list[object], options: AnalysisOptions) -> Report | None:
    """``held`` (emptied here) as a report of listed survivors; call once the heap is
    unfrozen. None when each is some live tensor's ``.grad`` or below ``min_bytes``."""
    torch = loaded_torch()
    if torch is None or not held:
        held.clear()
        return None
    try:
        grads = grads_of_live_tensors()
        reader = AutogradReader(torch)
        resolver = KindResolver()
        nodes: list[Node] = []
        listed: list[AliveObject] = []
        for obj in held:
            facts = resolver.describe(obj) if id(obj) not in grads else None
            if facts is None or facts.nbytes < options.min_bytes:
                continue
            node_id = len(nodes)
            nodes.append(
                Node(
                    node_id, type_short_name(type(obj)), facts.description, None, sizeof(obj), True
                )
            )
            note = held_natively_note(reader.use_count(obj) - 1)
            listed.append(
                AliveObject(
                    node_id,
                    facts.description,
                    facts.nbytes,
                    facts.device,
                    note=note,
                    allocation_site=_site(options, obj),
                )
            )
    finally:
        held.clear()
    if not listed:
        return None
    return Report(nodes=tuple(nodes), held_natively=tuple(listed))


def _site(options: AnalysisOptions, obj: object) -> str | None:
    if options.site_of is None:
        return None
    try:
        return options.site_of(obj)
    except Exception:  # a site that cannot be read is left out
        return None
