"""Where an exception kept by a future loses the frames that lead back to the future.

The future keeps the exception, and the exception its traceback. The traceback is the
one it had when it was handed over (``fut.set_exception(exc)`` in an ``except``
clause), plus, when the future re-raised it (``await task``,
``loop.run_until_complete(fut)``, ``fut.result()``), the frames of that re-raise in
front. An edit at ``set_exception`` removes only the first part: the proof removes only
that part too (the reference into its first traceback entry) and the edit is offered
only when that frees every heavy object. Otherwise the re-raise's frames close the
loop, and the edit goes where they are added: the handler that caught the re-raise
(the first entry of the traceback is its frame) drops the traceback on its way out;
the proof then removes the whole traceback, as that edit does.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

from whyalive.analysis.cuts import CutProof, prove_cut
from whyalive.analysis.diagnose import Diagnosis
from whyalive.analysis.fix_edits import CLEAR_TRACEBACK, DROP_TRACEBACK
from whyalive.analysis.fix_traceback import catching_handler
from whyalive.analysis.node_names import code_qualname
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.sourcelines import SourceLines
from whyalive.analysis.statements import DEF_NODES, SourceHit, StoreTarget, hit_for
from whyalive.guarded import type_mro, type_qualname, type_short_name
from whyalive.words import edge_kinds as ek


@dataclass(frozen=True)
class FutureCut:
    """The cut an edit for an exception kept by a future removes, and where it goes."""

    cut: list[NamedEdge]
    proof: CutProof
    hit: SourceHit
    remedy: str
    words: str | None = None
    """How the cut reads when it is not the pattern's (a part of the traceback)."""


def future_cut(
    view: CycleView, diagnosis: Diagnosis, handed: SourceHit | None, sources: SourceLines
) -> FutureCut | None:
    """The cut and the statement to edit: ``handed`` (the ``set_exception`` call) when
    dropping the traceback there frees every heavy object, else the handler that caught
    the re-raise; None when neither is in the source."""
    cut = diagnosis.cut
    if len(cut) != 1 or cut[0].name.name != "__traceback__" or not diagnosis.proof.proven:
        return None
    entries = _traceback_entries(view, cut[0])
    if handed is not None:
        first = next((i for i, e in enumerate(entries) if _runs(view, e.target, handed)), None)
        if first == 0:
            return FutureCut(cut, diagnosis.proof, handed, DROP_TRACEBACK)
        if first is not None:
            part = [entries[first]]
            proof = prove_cut(view, part)
            if proof.proven:
                words = _part_words(view, part[0], cut[0].source)
                if not proof.frees_cycle:
                    words += (
                        " (the frames of its re-raise still make a loop with the future, "
                        "holding nothing heavy: the collector frees it)"
                    )
                return FutureCut(part, proof, handed, DROP_TRACEBACK, words)
    caught = _catching(view, entries[0].target, cut[0].source, sources)
    return FutureCut(cut, diagnosis.proof, caught, CLEAR_TRACEBACK) if caught else None


def _traceback_entries(view: CycleView, first: NamedEdge) -> list[NamedEdge]:
    """The references into each entry of the traceback: ``__traceback__``, then ``tb_next``."""
    entries = [first]
    seen = {first.target}
    while True:
        step = next(
            (
                e
                for e in view.edges_from(entries[-1].target)
                if e.name.kind == ek.TRACEBACK and e.name.name == "tb_next" and e.target not in seen
            ),
            None,
        )
        if step is None:
            return entries
        seen.add(step.target)
        entries.append(step)


def _code_of(view: CycleView, node: int) -> tuple[types.CodeType, int] | None:
    """A traceback entry's code and line (C-level slots: no user code runs)."""
    tb = view.obj(node)
    if type(tb) is not types.TracebackType:
        return None
    return tb.tb_frame.f_code, tb.tb_lineno


def _runs(view: CycleView, node: int, hit: SourceHit) -> bool:
    """Whether the traceback entry is in the function of ``hit``."""
    found = _code_of(view, node)
    scope = hit.scope
    if found is None or not isinstance(scope, DEF_NODES):
        return False
    code, line = found
    last = scope.end_lineno or scope.lineno
    return (
        code.co_name == scope.name
        and code.co_filename == hit.filename
        and (scope.lineno <= line <= last)
    )


def _catching(view: CycleView, entry: int, exc: int, sources: SourceLines) -> SourceHit | None:
    """The ``except`` clause that caught the exception in the traceback's first frame."""
    found = _code_of(view, entry)
    if found is None:
        return None
    code, line = found
    function = sources.function_node(code)
    parsed = sources.parsed(code.co_filename)
    if function is None or parsed is None:
        return None
    names = [type_short_name(cls) for cls in type_mro(type(view.obj(exc)))]
    handler = catching_handler(function, line, names)
    if handler is None:
        return None
    return hit_for(code.co_filename, parsed, handler, StoreTarget("exception", ""))


def _part_words(view: CycleView, entry: NamedEdge, exc: int) -> str:
    """ "the `ConnectionResetError`'s traceback from the frame of `Protocol.connection_lost`
    on": the frames it had when it was handed over."""
    tb = view.obj(entry.target)
    where = (
        code_qualname(tb.tb_frame.f_code, tb.tb_frame) if type(tb) is types.TracebackType else None
    )
    start = f" from the frame of `{where}` on" if where else ""
    name = type_qualname(type(view.obj(exc)))
    return f"the `{name}`'s traceback{start}: the frames it had when it was handed over"
