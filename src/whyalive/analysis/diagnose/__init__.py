"""Diagnose a cycle: its pattern, the reference to cut, the fix, its signature.

Patterns are tried in a declared order (:data:`whyalive.analysis.diagnose.patterns.PATTERNS`);
a pattern that raises is skipped, and the last one, "unrecognised cycle", always
matches. Nothing here can make an analysis fail. docs/architecture.md, "Extending: a
pattern", says how to add one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from whyalive.analysis.cuts import CutProof, choose_cut
from whyalive.analysis.diagnose.patterns import (
    PATTERNS,
    UNRECOGNISED,
    LinkedStructurePattern,
    Pattern,
    PatternMatch,
)
from whyalive.analysis.diagnose.patterns.autograd import is_hook_registry_edge
from whyalive.analysis.node_names import name_node
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.structure import Structure
from whyalive.words import edge_kinds as ek


@dataclass(frozen=True)
class Diagnosis:
    """What a pattern says about one cycle, with the chosen cut."""

    match: PatternMatch
    cut: list[NamedEdge]
    signature: str
    proof: CutProof = field(default_factory=CutProof)
    """The cut's effect on the captured graph (:func:`whyalive.analysis.paths.prove_cut`)."""


def diagnose(
    view: CycleView, patterns: Sequence[Pattern] = PATTERNS, structure: Structure | None = None
) -> Diagnosis:
    """Run the patterns in order and choose the cut; never raises.

    A big cycle comes with its ``structure`` (:func:`whyalive.analysis.structure.find_structure`):
    its words, cut and signature come from that summary, in linear time.
    """
    if structure is not None:
        return _diagnose_structure(view, structure)
    match: PatternMatch | None = None
    for pattern in patterns:
        try:
            match = pattern.match(view)
        except Exception:  # a matcher that trips on a hostile object degrades
            match = None
        if match is not None:
            break
    if match is None:
        match = UNRECOGNISED.match(view)
    try:
        cut, proof = choose_cut(view, match.cut)
    except Exception:
        cut, proof = [], CutProof()
    try:
        signature = cycle_signature(view)
    except Exception:  # names come from hostile objects; the shape alone still groups
        shape = str(len(view.shown)).encode()
        signature = hashlib.sha1(shape, usedforsecurity=False).hexdigest()[:16]
    return Diagnosis(match, cut, signature, proof)


def _diagnose_structure(view: CycleView, structure: Structure) -> Diagnosis:
    try:
        match = LinkedStructurePattern().describe(view, structure)
    except Exception:  # hostile names: still a report, with the generic words
        match = UNRECOGNISED.match(view)
    parts = "\n".join(structure.signature_parts())
    digest = hashlib.sha1(parts.encode("utf-8", "replace"), usedforsecurity=False)
    # The structure's cut was checked by peeling the component without its references.
    verified = structure.verified
    stays = () if verified else tuple(sorted(view.heavy_bytes))
    proof = CutProof(checked=bool(structure.cut), frees_cycle=verified, stays=stays)
    return Diagnosis(match, list(match.cut), digest.hexdigest()[:16], proof)


def _token(view: CycleView, node: int) -> str:
    named = name_node(view.obj(node))
    return f"{named.label}@{named.location}" if named.location else named.type_name


def _edge_token(edge: NamedEdge, registries: set[int]) -> str:
    # List positions change from run to run (children appended in any order), and so do
    # the keys of hook registries: handle ids, counted up across the process.
    if edge.name.kind == ek.INDEX or (edge.name.kind == ek.KEY and edge.source in registries):
        return "[]"
    return edge.name.name


def cycle_signature(view: CycleView) -> str:
    """A stable id from the cycle's shape and code locations, never from addresses.

    Equal for the same cycle made twice, in two processes or on two ranks (file
    names without directories), different when the code differs.
    """
    tokens = {node: _token(view, node) for node in view.shown}
    registries = {e.target for e in view.edges if is_hook_registry_edge(e.name)}
    parts = sorted(tokens.values())
    parts += sorted(
        f"{tokens[e.source]} -{_edge_token(e, registries)}-> {tokens[e.target]}"
        for e in view.edges
        if e.source in tokens and e.target in tokens
    )
    digest = hashlib.sha1("\n".join(parts).encode("utf-8", "replace"), usedforsecurity=False)
    return digest.hexdigest()[:16]
