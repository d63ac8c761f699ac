"""What a cycle's report tells the user to do: the lines that made the cut, and the fix.

The pattern says what kind of change undoes the cut (its remedy); this module
finds the statement behind every label of the cut (:mod:`whyalive.analysis.sourcelines`),
reads the live facts an edit needs (which object a proxy would point to, whether it
can be weakly referenced) and asks :mod:`whyalive.analysis.fix_edits` for the one edit. An
edit is offered only for a proven cut: the fix promises what the proof showed.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, replace

from whyalive.analysis.cuts import CutProof, proven_alternatives
from whyalive.analysis.diagnose import Diagnosis
from whyalive.analysis.fix_edits import (
    DELETE,
    DROP_TRACEBACK,
    WEAKEN,
    WORDS_ONLY,
    Rewrite,
)
from whyalive.analysis.origin import installed_part
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.sourcelines import SourceLines
from whyalive.analysis.statements import FUNCTION_NODES, SourceHit, stored_target
from whyalive.analysis.structure import Structure
from whyalive.report import FixEdit
from whyalive.report.builder.edit_targets import build, closure_functions
from whyalive.report.builder.future_advice import future_cut
from whyalive.words import edge_kinds as ek

# The remedy a cut's kind asks for when the pattern names none.
_REMEDY_BY_KIND = {
    ek.ATTRIBUTE: WEAKEN,
    ek.CELL: WEAKEN,
    ek.KEY: WEAKEN,
    ek.INDEX: WEAKEN,
    ek.LOCAL: DELETE,
    ek.TRACEBACK: DROP_TRACEBACK,
}
_SELF = re.compile(r"\bself\b")


@dataclass(frozen=True)
class Advice:
    """Plain results: quotes, the note when none was found, the lint rule, the edit."""

    source_lines: tuple[str, ...] = ()
    source_note: str | None = None
    source_rule: str | None = None
    fix: str = ""
    fix_edit: FixEdit | None = None
    cut: tuple[NamedEdge, ...] | None = None
    """The cut the edit undoes, when it is another proven cut than the diagnosis's (the
    pattern's cut had no mechanical edit): the report then states this one."""
    proof: CutProof | None = None
    cut_words: str | None = None
    """How that other cut reads, when its references alone would not say it."""
    explanation: str | None = None
    """The pattern's Why, its code spelled as the statement that made the cut spells the
    holder (``model.forward``, not ``self.forward``); None: the pattern's own words."""


def advise(
    view: CycleView,
    diagnosis: Diagnosis,
    structure: Structure | None,
    sources: SourceLines,
    sites: list[str],
    user_root: str,
) -> Advice:
    """Find where every label of the cut was made and build the fix; never raises."""
    match = diagnosis.match
    try:
        labels = label_edges(view, diagnosis, structure)
        found: list[tuple[NamedEdge, SourceHit]] = []
        note = None
        for edge in labels:
            hit, why = sources.find(view, edge, sites)
            if hit is None:
                note = note or why
            elif edge.name.kind == ek.CELL and isinstance(hit.store, FUNCTION_NODES):
                # Every function sharing the cell made the reference: quote each of them.
                found += [(edge, other) for other in sources.captures(view, edge) or [hit]]
            else:
                found.append((edge, hit))
    except Exception:  # user source or hostile objects; the rest of the report stands
        return Advice(source_note="the source that made this reference could not be read",
                      fix=match.fix)  # fmt: skip
    if not found and match.pattern == "class-per-call":
        made = _class_made(view, sources)
        if made is not None:
            return Advice((made.quote,), None, made.rule, match.fix)
    holder = _holder_spelling(found[0][1]) if found else None
    why = _respell(match.explanation, holder)
    advice = _advice(view, diagnosis, structure, sources, sites, user_root, found, labels, note)
    return replace(advice, explanation=why) if advice.cut is None else advice


def _advice(
    view: CycleView,
    diagnosis: Diagnosis,
    structure: Structure | None,
    sources: SourceLines,
    sites: list[str],
    user_root: str,
    found: list[tuple[NamedEdge, SourceHit]],
    labels: list[NamedEdge],
    note: str | None,
) -> Advice:
    """The quotes and the fix once the statements of the cut's labels are found."""
    match = diagnosis.match
    quotes = tuple(dict.fromkeys(hit.quote for _, hit in found))
    rule = found[0][1].rule if found else None
    holder = _holder_spelling(found[0][1]) if found else None
    words = _respell(match.fix, holder)
    if match.remedy == WORDS_ONLY:
        return Advice(quotes, note, rule, words)
    if match.pattern == "exception-in-future":
        return _future_advice(view, diagnosis, found, sources, user_root) or Advice(
            quotes, note, rule, words
        )
    rewrite = None
    remedy = match.remedy or (_REMEDY_BY_KIND.get(labels[0].name.kind) if labels else None)
    if diagnosis.proof.proven and len(dict.fromkeys(edge for edge, _ in found)) == len(labels):
        rewrite = _rewrite(view, remedy, found, sources, user_root, structure)
    if rewrite is not None:
        fix = f"{rewrite.words} {_respell(match.also, holder)}".strip()
        return Advice(quotes, note, rule, fix, _fix_edit(rewrite, user_root))
    if diagnosis.proof.proven and structure is None:
        # No edit undoes the pattern's cut: another proven cut that one edit undoes.
        for cut, proof in proven_alternatives(view, diagnosis.cut):
            edge = cut[0]
            try:
                hit, _ = sources.find(view, edge, sites)
            except Exception:  # an unreadable source: try the next cut
                continue
            if hit is None:
                continue
            other = _rewrite(
                view, _REMEDY_BY_KIND.get(edge.name.kind), [(edge, hit)], sources, user_root
            )
            if other is not None:
                # "Or clear `self.model`" speaks of the pattern's cut, not of this one.
                own = {e.name.name for e in diagnosis.cut if e.name.kind == ek.ATTRIBUTE}
                own.discard(edge.name.name)
                spoken = (re.search(rf"`[^`]*{re.escape(n)}\b[^`]*`", match.also) for n in own)
                also = "" if any(spoken) else match.also
                fix = f"{other.words} {_respell(also, _holder_spelling(hit))}".strip()
                edit = _fix_edit(other, user_root)
                return Advice((hit.quote,), None, hit.rule, fix, edit, tuple(cut), proof)
    return Advice(quotes, note, rule, words)


def _future_advice(
    view: CycleView,
    diagnosis: Diagnosis,
    found: list[tuple[NamedEdge, SourceHit]],
    sources: SourceLines,
    user_root: str,
) -> Advice | None:
    """An exception kept by a future: the edit where it works (``set_exception``, or the
    handler that caught the future's re-raise) and the cut it removes; None: words only."""
    handed = found[0][1] if found else None
    choice = future_cut(view, diagnosis, handed, sources)
    if choice is None:
        return None
    rewrite = _rewrite(view, choice.remedy, [(choice.cut[0], choice.hit)], sources, user_root)
    if rewrite is None:
        return None
    other = choice.cut != diagnosis.cut
    return Advice(
        (choice.hit.quote,), None, choice.hit.rule,
        f"{rewrite.words} {diagnosis.match.also}".strip(), _fix_edit(rewrite, user_root),
        tuple(choice.cut) if other else None, choice.proof if other else None,
        cut_words=choice.words,
    )  # fmt: skip


def _class_made(view: CycleView, sources: SourceLines) -> SourceHit | None:
    """The ``class`` statement of the class made per call that the cycle is."""
    for node in view.shown:
        cls = view.obj(node)
        if isinstance(cls, type):
            try:
                return sources.class_statement(cls)
            except Exception:  # a class whose source cannot be read: said as words only
                return None
    return None


def label_edges(
    view: CycleView, diagnosis: Diagnosis, structure: Structure | None
) -> list[NamedEdge]:
    """One reference per label of the cut: a tree's every ``.parent`` is one label."""
    if structure is not None:
        return [
            NamedEdge(link.sample[0], link.sample[1], link.name)
            for link in structure.cut
            if link.sample is not None
        ]
    by_label: dict[tuple[object, ...], NamedEdge] = {}
    for edge in diagnosis.cut:
        key: tuple[object, ...] = (edge.name.kind, edge.name.name)
        if edge.name.kind == ek.CELL:
            # Cells are one label when the same code made them (a lambda made per call).
            key += tuple(sorted(id(fn.__code__) for fn in closure_functions(view, edge.source)))
        by_label.setdefault(key, edge)
    return list(by_label.values())


def _rewrite(
    view: CycleView,
    remedy: str | None,
    found: list[tuple[NamedEdge, SourceHit]],
    sources: SourceLines,
    user_root: str,
    structure: Structure | None = None,
) -> Rewrite | None:
    """The edit, or None when none is safe; never raises. Only the user's own code is
    edited: a line inside an installed package is quoted, not rewritten."""
    if remedy is None or not found:
        return None
    if any(installed_part(hit.filename, user_root) is not None for _, hit in found):
        return None
    try:
        return build(view, remedy, found, sources, structure)
    except Exception:  # an edit that cannot be built is left out, never half-made
        return None


def _holder_spelling(hit: SourceHit) -> str | None:
    """How the statement names the object it stores on: ``model`` in ``model.forward = ...``,
    ``self.model`` in ``self.model.trainer = self``."""
    stored = stored_target(hit.statement)
    store = hit.store
    call = store if isinstance(store, ast.Call) and isinstance(store.func, ast.Attribute) else None
    if call is not None:
        stored = call.func
    base = stored
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    if not isinstance(base, ast.Name) or base is stored:
        return None
    arguments = [*call.args, *(k.value for k in call.keywords)] if call is not None else []
    if any(isinstance(n, ast.Name) and n.id == "self" for a in arguments for n in ast.walk(a)):
        return None  # `t.register_hook(self.on_grad)`: the patterns' `self` is this one
    if call is not None or not isinstance(stored, ast.Attribute):
        # `self.hooks.append(...)`, `self.pending[key] = node`: the patterns speak of the
        # container's owner, named by its base.
        return base.id
    return ast.unparse(stored.value)


def _respell(text: str, holder: str | None) -> str:
    """The pattern's code says ``self`` for the holder: use the name the statement uses."""
    if not holder or holder == "self":
        return text
    return re.sub(r"`[^`]+`", lambda m: _SELF.sub(holder, m.group(0)), text)


def _fix_edit(rewrite: Rewrite, user_root: str) -> FixEdit:
    path = os.path.realpath(rewrite.filename)
    root = os.path.join(os.path.realpath(user_root), "")
    shown = os.path.relpath(path, root) if path.startswith(root) else rewrite.filename
    return FixEdit(shown, rewrite.line, rewrite.old, rewrite.new)


__all__ = ["Advice", "advise", "label_edges"]
