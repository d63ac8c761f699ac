"""WAL204 against runtime truth: each patch the eval file flags makes a real cycle that keeps a
model's parameters, and the fix it suggests leaves none."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from scenarios.modules import throwaway_module
from whyalive import find_leaks
from whyalive.lint import lint_source

torch = pytest.importorskip("torch")
nn = torch.nn

CASE = Path(__file__).parent / "lint_cases" / "wal2_patches.py"


@pytest.fixture(scope="module")
def shapes() -> Iterator[ModuleType]:
    with throwaway_module("wal2_patches") as module:
        exec(compile(CASE.read_text(), str(CASE), "exec"), module.__dict__)
        yield module


def _in_context(shapes: ModuleType) -> None:
    model = nn.Linear(64, 64)
    with shapes.patched_forward(model, lambda y: y):
        model(torch.ones(1, 64))


def _method(obj: object, *args: object) -> object:
    return obj


def _wrapper(function: Callable[..., object]) -> Callable[..., object]:
    return functools.wraps(function)(lambda *args: function(*args))


def _hooks_kept(shapes: ModuleType) -> None:
    model = nn.Sequential(nn.Linear(64, 64))
    with shapes.keep_hooks(model):
        for module in model.modules():
            module.forward = _wrapper(module.forward)


def _debugged(shapes: ModuleType) -> None:
    model = nn.Sequential(nn.Linear(64, 64))
    with shapes.debug_all(model, lambda module: _wrapper(type(module).forward)):
        pass


FLAGGED: dict[str, Callable[[ModuleType], object]] = {
    "add_hook": lambda s: s.add_hook(nn.Linear(64, 64), lambda y: y),
    "bind": lambda s: s.bind(nn.Linear(64, 64), lambda self, y: y),
    "install": lambda s: s.install(nn.Linear(64, 64), None),
    "install_capturing": lambda s: s.install_capturing(_with_registries(nn.Linear(64, 64))),
    "autocast": lambda s: s.autocast(nn.Linear(64, 64), lambda f: f),
    "patched_forward": _in_context,
    "Wrapper": lambda s: s.Wrapper(nn.Linear(64, 64)),
    "unwrap": lambda s: s.unwrap(nn.Linear(64, 64), lambda self, y: y, print),
    "remove_hook": lambda s: s.remove_hook(s.add_hook(nn.Linear(64, 64), lambda y: y)),
    "debug_all": _debugged,
    "fp32_outputs": lambda s: s.fp32_outputs(nn.Linear(64, 64), _wrapper, _wrapper),
    "keep_hooks": _hooks_kept,
    "class_parameters": lambda s: s.class_parameters(
        type("T", (), {}), type("M", (), {}), type("C", (), {}), nn.Linear(64, 64), _method
    ),
    "Factory": lambda s: s.Factory.patch(nn.Linear(64, 64), _method),
    "patch_walrus": lambda s: s.patch_walrus(nn.Linear(64, 64), _method),
    "tab_def": lambda s: s.tab_def(nn.Linear(64, 64)),
    "fp8_autocast": lambda s: s.fp8_autocast(nn.Linear(64, 64), lambda f: _wrapper(f.__func__)),
    "Compiled": lambda s: s.Compiled().compile_forward(),
    "Compiled.trace_forward": lambda s: s.Compiled().trace_forward([]),
}


def _with_registries(module: nn.Module) -> nn.Module:
    module.handlers = {}
    module.callbacks = []
    return module


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_flagged_patches_are_real_cycles(shapes: ModuleType, name: str) -> None:
    """The runtime check finds a cycle keeping the 16 KiB weight for every flagged shape, and
    names the rule that flags it."""
    report = find_leaks(FLAGGED[name], shapes)
    assert report.found
    assert report.total_bytes >= 64 * 64 * 4
    # The runtime report names the rule that flags the line; `Wrapper`'s loop runs through
    # a bound method of its own class (`self._decode`), which reads as WAL201 at runtime.
    expected = "WAL201" if name == "Wrapper" else "WAL204"
    assert report.cycles[0].lint_rule == expected


@pytest.mark.parametrize("name", ["undo_in_finally", "undo_other_ways"])
def test_suggested_undo_leaves_no_cycle(shapes: ModuleType, name: str) -> None:
    """A patch taken back in a `finally` (`del`, `delattr`, `__dict__.pop`, `vars().pop`;
    not flagged) frees the model without the GC."""
    report = find_leaks(lambda: getattr(shapes, name)(nn.Linear(64, 1), lambda self, y: y))
    assert not report.found


def test_every_flagged_function_is_exercised() -> None:
    """Each top-level function or class with a WAL204 finding in the eval file is run above
    (the hostile shapes and the store overwritten at once excepted)."""
    text = CASE.read_text()
    tops = [n for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    flagged_in = {
        top.name
        for finding in lint_source(text, select="WAL204")
        for top in tops
        if top.lineno <= finding.line <= (top.end_lineno or top.lineno)
    }
    assert flagged_in - {"hostile", "replaced_at_once"} == {k.split(".")[0] for k in FLAGGED}


@pytest.mark.parametrize("name", ["add_hook", "install", "bind"])
def test_runtime_cut_names_the_patching_line(shapes: ModuleType, name: str) -> None:
    """The runtime report's cut names the line (in the function that made the nested
    function or partial) that stored it, the first line WAL204 flags there; or, when the
    fix is an edit of another line of that function, the line it edits (`install` keeps
    the bound method it patches over: the fix binds that method to a weak proxy)."""
    text = CASE.read_text()
    top = next(n for n in ast.parse(text).body if getattr(n, "name", "") == name)
    lines = [
        f.line
        for f in lint_source(text, select="WAL204")
        if top.lineno <= f.line <= (top.end_lineno or top.lineno)
    ]
    report = find_leaks(FLAGGED[name], shapes)
    edit = report.cycles[0].fix_edit
    made = edit.line if edit is not None else min(lines)
    assert top.lineno <= made <= (top.end_lineno or top.lineno)
    assert f"made at wal2_patches.py:{made}:" in report.render()


def test_runtime_names_a_partial_on_its_own_object() -> None:
    """`m.forward = partial(f, m)` with a module-level `f` reads as a patched method (WAL204),
    not as a parent and child."""

    def patch() -> None:
        module = nn.Linear(64, 64)
        module.forward = functools.partial(_method, module)

    (cycle,) = find_leaks(patch).cycles
    assert cycle.pattern == "bound-method-on-self"
    assert cycle.lint_rule == "WAL204"
    assert "functools.partial" in cycle.summary
