"""A leak's next first sighting (a new monitor, another check) reads its code's tree no more:
the questions about a parsed file are answered once and kept with it."""

from __future__ import annotations

import ast
import gc
import weakref

import pytest

import whyalive
from scenarios import stage_backward
from whyalive.analysis import fix_edits, sourcelines
from whyalive.analysis.statements import ParsedFile
from whyalive.analysis.tree_answers import MAX_ANSWERS

numpy = pytest.importorskip("numpy")

# The monitor runs its own gc callbacks and DEBUG_SAVEALL: the plugin cannot watch it.
pytestmark = pytest.mark.whyalive_skip


def _monitored_fix(steps: int) -> tuple[str, list[weakref.ref[object]]]:
    refs: list[weakref.ref[object]] = []
    with whyalive.monitor(log=False) as mon:
        for _ in range(steps):
            array = numpy.zeros(256, dtype=numpy.float32)
            refs.append(weakref.ref(array))
            stage_backward([array])
            del array
            mon.step()
    (report,) = mon.summary_reports()
    (cycle,) = report.cycles
    assert cycle.occurrences == steps
    return cycle.fix, refs


def test_a_new_monitor_does_not_search_the_same_code_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[str] = []

    def counting(name: str, module: object) -> None:
        real = getattr(module, name)

        def spy(*args: object, **kwargs: object) -> object:
            searched.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)

    # Another test in this process may have asked about the seed's file already.
    monkeypatch.setattr(sourcelines, "_recent", type(sourcelines._recent)())
    for name in ("first_store",):
        counting(name, sourcelines)
    for name in ("_escapes", "_deleted", "_uses"):
        counting(name, fix_edits)
    first_fix, first_refs = _monitored_fix(5)
    assert "del " in first_fix  # the seed's fix: an edit that deletes after the last use
    assert {"first_store", "_escapes", "_deleted", "_uses"} <= set(searched)
    searched.clear()
    second_fix, second_refs = _monitored_fix(5)
    assert second_fix == first_fix
    assert searched == [], "the second sighting searched the tree again"
    gc.collect()
    assert all(r() is None for r in (*first_refs, *second_refs)), "an array was kept alive"


def test_answers_are_bounded_and_an_unhashable_question_is_worked_out_each_time() -> None:
    parsed = ParsedFile(["x = 1\n"], ast.parse("x = 1\n"))
    calls: list[int] = []

    def work() -> int:
        calls.append(1)
        return len(calls)

    assert parsed.answers.answer(("q", 1), work) == 1
    assert parsed.answers.answer(("q", 1), work) == 1
    assert parsed.answers.answer(("q", []), work) == 2  # a list cannot be a key: not kept
    assert parsed.answers.answer(("q", []), work) == 3
    for number in range(MAX_ANSWERS + 5):
        parsed.answers.answer(("many", number), work)
    assert len(parsed.answers.known) <= MAX_ANSWERS
    assert parsed.answers.searches == len(calls) - 2


def test_a_key_of_the_programs_own_type_is_never_kept() -> None:
    """A store target named by a user's object (a dict key) is searched, never kept."""
    assert not sourcelines._plain(object())
    assert sourcelines._plain(("<lambda>", 12))
    assert sourcelines._plain("cb")
