"""Every fix a lint message offers, run: each case in tests/lint_cases/advice is a runnable
scenario flagged by one rule, and each fix its finding offers is a copy of it with that edit
made (`CASE.KEY.py`; the `--fix` edit is made by the test). Before the edit, the payload the
rule says is kept outlives the scenario without the collector; after it, the scenario returns
the same result, the payload is freed by reference counting alone and `find_leaks()` finds no
cycle. A fix is offered for a case exactly when its file exists."""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from scenarios.modules import throwaway_module
from whyalive import find_leaks
from whyalive.lint import lint_source
from whyalive.lint.fixes import apply_edits

pytest.importorskip("torch")

ADVICE = Path(__file__).parent / "lint_cases" / "advice"
CASES = sorted(p for p in ADVICE.glob("*.py") if "." not in p.stem)
# Fixes made where the object's life ends, often in another function than the store: the
# rule cannot see them, so the finding may stay; the run proves them.
LIFETIME_FIXES = frozenset(
    {"undo", "remove-when-done", "clear-when-done", "clear-on-raise", "remove-handle"}
)


@dataclass(frozen=True)
class Run:
    """One scenario run: its result, whether the payload outlived it without the collector,
    whether it was alive after the check's collection, and the cycles found."""

    result: object
    kept_without_gc: bool
    kept_after_gc: bool
    cycles: int


def _fixes(case: Path) -> dict[str, Path]:
    return {p.name.split(".")[1]: p for p in ADVICE.glob(f"{case.stem}.*.py")}


def _clear_caches(module: ModuleType) -> None:
    """Empty the method caches a WAL501 case filled, so their payloads do not outlive it."""
    for value in list(vars(module).values()):
        for attribute in list(vars(value).values()) if isinstance(value, type) else ():
            clear = getattr(attribute, "cache_clear", None)
            if callable(clear):
                clear()


def _run(text: str, path: Path) -> Run:
    refs: list[weakref.ref[object]] = []
    outcome: list[object] = []
    with throwaway_module(f"advice_{path.stem.replace('.', '_').replace('-', '_')}") as module:
        exec(compile(text, str(path), "exec"), module.__dict__)

        def scenario() -> None:
            enabled = gc.isenabled()
            gc.disable()
            try:
                outcome.append(module.scenario(lambda obj: refs.append(weakref.ref(obj))))
                outcome.append(any(r() is not None for r in refs))
            finally:
                if enabled:
                    gc.enable()

        report = find_leaks(scenario)
        kept_after = any(r() is not None for r in refs)
        _clear_caches(module)
    assert refs, "the scenario names no payload"
    return Run(outcome[0], bool(outcome[1]), kept_after, len(report.cycles))


def _codes(module_text: str) -> tuple[str, str]:
    namespace: dict[str, object] = {}
    header = module_text.split("\ndef ", 1)[0].split("\nclass ", 1)[0]
    for line in header.splitlines():
        if line.startswith(("CODE = ", "HOLD = ")):
            exec(line, namespace)
    return str(namespace["CODE"]), str(namespace["HOLD"])


def _flagged(text: str, path: Path, code: str) -> list[object]:
    return [f for f in lint_source(text, str(path), select=[code]) if f.code == code]


@functools.cache
def _before(case: Path) -> Run:
    return _run(case.read_text(encoding="utf-8"), case)


def _params() -> Iterator[object]:
    for case in CASES:
        # A case held through C++ leaks on purpose what no collection frees: the plugin
        # (`pytest --whyalive`) would report it as this test's leak.
        held_in_cpp = _codes(case.read_text(encoding="utf-8"))[1] == "c++"
        marks = [pytest.mark.whyalive_skip] if held_in_cpp else []
        yield pytest.param(case, None, id=case.stem, marks=marks)
        for key in sorted(_fixes(case)):
            yield pytest.param(case, key, id=f"{case.stem}.{key}", marks=marks)


def test_every_fix_a_rule_offers_has_a_case() -> None:
    """Each fix a rule's messages can offer (``Rule.offers``) runs in a case of that rule,
    so a new fix without a case fails here. WAL903/904/905 offer their original rule's
    fixes (or none), run through those cases."""
    from whyalive.lint import RULES

    run = set()
    for case in CASES:
        text = case.read_text(encoding="utf-8")
        code = _codes(text)[0]
        for finding in _flagged(text, case, code):
            fixed = set(_fixes(case)) | ({"pass-itself"} if finding.edits else set())
            run.update((code, key) for key in finding.advice if key in fixed)
    light = {"WAL903", "WAL904", "WAL905"}
    wanted = {(r.code, key) for r in RULES if r.code not in light for key in r.offers}
    assert wanted - run == set()


def test_rules_offer_only_the_fixes_they_declare() -> None:
    """Every fix the rule modules can build is declared by a rule, and every finding of the
    lint cases offers only fixes its rule declares."""
    import ast

    from whyalive.lint import RULES

    rules_dir = Path(__file__).parent.parent / "src" / "whyalive" / "lint" / "rules"
    built = {
        node.args[0].value
        for path in rules_dir.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Advice"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    declared = {key for rule in RULES for key in rule.offers}
    assert built == declared
    offers = {rule.code: set(rule.offers) for rule in RULES}
    cases = [*ADVICE.parent.glob("*.py"), *ADVICE.glob("*.py")]
    for case in cases:
        for finding in lint_source(case.read_text(encoding="utf-8"), str(case), select="WAL,WAL9"):
            assert set(finding.advice) <= offers[finding.code], (case.name, finding.line)


@pytest.mark.parametrize(("case", "key"), list(_params()))
def test_advice(case: Path, key: str | None) -> None:
    """The case is flagged once and offers exactly the fixes written for it; the payload is
    kept before the edit; each fix keeps the result and leaves nothing for the collector."""
    text = case.read_text(encoding="utf-8")
    code, hold = _codes(text)
    (finding,) = _flagged(text, case, code)
    fixes = _fixes(case)
    assert set(finding.advice) == set(fixes) | ({"pass-itself"} if finding.edits else set())
    before = _before(case)
    if key is None:
        if hold != "none":
            assert before.kept_without_gc, "the payload should outlive the scenario"
        assert before.kept_after_gc == (hold in ("c++", "cache"))
        if hold == "gc":
            assert before.cycles
        if finding.edits:  # the --fix edit, run as the other fixes are
            _check_fixed(apply_edits(text, finding.edits), case, code, before, "pass-itself")
        return
    fixed = fixes[key]
    _check_fixed(fixed.read_text(encoding="utf-8"), fixed, code, before, key)


def _check_fixed(text: str, path: Path, code: str, before: Run, key: str) -> None:
    if key not in LIFETIME_FIXES:
        assert _flagged(text, path, code) == [], f"{path.name} is still flagged"
    after = _run(text, path)
    assert after.result == before.result
    assert not after.kept_without_gc, f"{path.name} still keeps the payload"
    assert after.cycles == 0


@pytest.mark.parametrize(
    ("case", "says", "offers"),
    [
        # A plain class with no `forward`: define one, or a weak forwarder (not "keep").
        ("wal201_plain_forward", "Define `forward` as a method", {"dispatch", "weak"}),
        # A plain class that defines `run`: keep it, or a weak forwarder.
        ("wal201_plain_method", "Keep `run` a method", {"dispatch", "weak"}),
        # A module calls `forward` itself: only a method works; it has none: define it.
        ("wal201_module_inherited", "Define `forward` as a method", {"dispatch"}),
        ("wal201_forward", "Keep `forward` a method", {"dispatch"}),
    ],
)
def test_wal201_says_keep_only_for_what_the_class_defines(
    case: str, says: str, offers: set[str]
) -> None:
    """WAL201's advice is true for the shape: "keep X a method" only when the class defines
    X, a weak forwarder wherever it keeps the calls working (not a module's `forward`)."""
    path = ADVICE / f"{case}.py"
    (finding,) = _flagged(path.read_text(encoding="utf-8"), path, "WAL201")
    assert says in finding.message, finding.message
    other = "Define" if says.startswith("Keep") else "Keep"
    assert f"{other} `" not in finding.message, finding.message
    assert {key.split("-")[0] for key in finding.advice} == offers
    assert ("WeakMethod(" in finding.message.split(": `nn.Module")[0]) == ("weak" in offers)


def test_a_kept_frame_keeps_its_callers() -> None:
    """Why the 3xx findings are never demoted by their function's locals: an exception kept
    in a helper's local keeps the helper's frame, and through `f_back` its caller's frame
    with the caller's locals, after both returned, until the collector runs."""

    class Payload:
        pass

    def helper() -> None:
        try:
            raise ValueError("kept")
        except ValueError as err:
            kept = err  # noqa: F841 - the shape WAL301 flags
        return None

    def caller() -> weakref.ref[Payload]:
        payload = Payload()
        helper()
        return weakref.ref(payload)

    enabled = gc.isenabled()
    gc.disable()
    try:
        ref = caller()
        assert ref() is not None  # the caller returned, but its frame is kept
    finally:
        if enabled:
            gc.enable()
    gc.collect()
    assert ref() is None  # a cycle, which the collector frees
