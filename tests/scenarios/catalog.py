"""The runnable scenarios of ``tests/scenarios/``: each leaves one known cycle behind.

A scenario is a function of a module here, called with no arguments (or with
arguments made fresh for each call). ``case_*.py`` modules each re-create a leak
from a public bug report (the module's docstring cites it) and name it ``run``; the
older ``leaks.py`` functions, the loops through the autograd graph of
``autograd_loops.py`` and the patterns' own shapes of ``shapes.py`` are listed by
hand. The fix-proof tests apply each report's ``fix_edit`` to the module's source and
run the fixed function.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Scenario:
    """One runnable leak: where it lives, what it should be named, how to call it."""

    name: str
    module: str
    function: str
    pattern: str
    arguments: Callable[[], tuple[Any, ...]] = field(default=tuple)
    record_allocations: bool = False
    needs: tuple[str, ...] = ()
    """Modules the scenario imports (the test skips it when one is missing)."""
    forever: bool = False
    """The leak is a loop through C++ that no collection frees: it outlives the test."""
    unraisable: bool = False
    """The collector reports an exception while it finalizes the cycle (a generator that
    ignores ``GeneratorExit``): the shape itself, not a failure of the test."""

    def load(self) -> Callable[..., Any]:
        """The scenario's function from its module as imported."""
        return getattr(importlib.import_module(self.module), self.function)  # type: ignore[no-any-return]

    @property
    def path(self) -> Path:
        return HERE / (self.module.rsplit(".", 1)[1] + ".py")


def _outputs() -> tuple[Any, ...]:
    from scenarios.leaks import heavy

    return ([heavy(16, 64) for _ in range(3)],)


LEAKS = (
    Scenario("leaks.pipeline_step", "scenarios.leaks", "pipeline_step", "recursive-closure"),
    Scenario(
        "leaks.stage_backward",
        "scenarios.leaks",
        "stage_backward",
        "recursive-closure",
        _outputs,
    ),
    Scenario("leaks.Trainer", "scenarios.leaks", "Trainer", "bound-method-on-self"),
    Scenario(
        "leaks.self_loop",
        "scenarios.leaks",
        "self_loop",
        "self-containing-container",
        lambda: (256,),
        record_allocations=True,  # no code in the cycle: the payload's site finds the line
    ),
    Scenario("leaks.ring", "scenarios.leaks", "ring", "attribute-loop"),
)


def _autograd(
    function: str, pattern: str, *, record: bool = False, forever: bool = True
) -> Scenario:
    """A loop through the autograd graph (``autograd_loops.py``); ``record``: the line that
    made the cut is in no function of the loop, so the payload's allocation site finds it;
    ``forever``: the collector never frees it (else it is cyclic garbage)."""
    module = "scenarios.autograd_loops"
    return Scenario(
        f"autograd_loops.{function}", module, function, pattern, needs=("torch",),
        record_allocations=record, forever=forever,
    )  # fmt: skip


AUTOGRAD = (
    _autograd("tensor_hook", "tensor-hook-loop"),
    _autograd("hook_on_owner", "tensor-hook-loop"),
    _autograd("grad_cam", "module-hook-loop"),
    _autograd("prehook_on_node", "node-hook-loop", record=True, forever=False),
    _autograd("prehook_holding_output", "node-hook-loop"),
    # The node is kept by `self.pending[mb] = node` in a method of the stage, not of the loop.
    _autograd("stage_prehook_logged", "node-hook-loop", forever=False),
    _autograd("ctx_attribute", "ctx-attribute", forever=False),
    _autograd("node_metadata", "node-metadata", record=True),
)


def _shape(function: str, pattern: str, **options: Any) -> Scenario:
    """One of ``shapes.py``: a pattern of docs/patterns.md no re-created report covers."""
    return Scenario(f"shapes.{function}", "scenarios.shapes", function, pattern, **options)


SHAPES = (
    _shape("self_in_own_container", "self-in-own-container"),
    # The job dicts are made in a helper outside the loop: its allocation site finds it.
    _shape("container_loop", "container-loop", record_allocations=True),
    _shape("closure_loop", "closure-loop"),
    _shape("frame_loop", "frame-loop"),
    _shape("reference_loop", "reference-loop"),
    _shape("linked_structure", "linked-structure"),
    _shape("generator_frame", "generator-frame", record_allocations=True, unraisable=True),
    _shape("task_exception", "exception-in-future"),
    _shape("future_reraised", "exception-in-future"),
    _shape("logger_adapter", "parent-child"),
    _shape("autograd_node", "autograd-node", needs=("torch",)),
)


def _case(path: Path) -> Scenario:
    name = f"scenarios.{path.stem}"
    source = path.read_text(encoding="utf-8")
    needs = tuple(m for m in ("torch",) if f"import {m}" in source)
    pattern = _constant(source, "PATTERN") or ""
    record = _constant(source, "RECORD_ALLOCATIONS") == "True"
    return Scenario(path.stem, name, "run", pattern, record_allocations=record, needs=needs)


def _constant(source: str, name: str) -> str | None:
    for line in source.splitlines():
        if line.startswith(f"{name} = "):
            return line.split("=", 1)[1].strip().strip("\"'")
    return None


CASES = tuple(_case(path) for path in sorted(HERE.glob("case_*.py")))
SCENARIOS = LEAKS + AUTOGRAD + SHAPES + CASES


def params(*, plain: bool = False) -> list[Any]:
    """Every scenario as a pytest parameter, named; one that leaks forever is not checked by
    the plugin (``pytest --whyalive`` would report its leak as the test's own). ``plain``:
    only the scenarios that need no optional module."""
    import pytest

    unraisable = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    return [
        pytest.param(
            s,
            id=s.name,
            marks=[
                *([pytest.mark.whyalive_skip] if s.forever else []),
                *([unraisable] if s.unraisable else []),
            ],
        )
        for s in SCENARIOS
        if not (plain and s.needs)
    ]
