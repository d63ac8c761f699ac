"""Every cut proven on the captured graph, every fix proven by running the fixed code.

For each scenario of ``tests/scenarios/`` (the ``case_*.py`` re-creations of public
bug reports and the ``leaks.py`` shapes) the report must: name the expected pattern;
carry a cut that its proof freed every heavy object with; quote the line that made
the cut exactly as the file has it; write every backticked suggestion as Python that
parses and names only what exists at that line. When the report has a ``fix_edit``,
it is applied to the scenario's source by line replacement, nothing else, and the
fixed scenario is run: (a) it returns what the original returned, (b) with the
collector off, reference counting frees every payload object, (c) the original's
report proved its cut. At least 80 % of the scenarios have an edit.
"""

from __future__ import annotations

import ast
import builtins
import functools
import gc
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scenarios import payload
from scenarios.catalog import SCENARIOS, Scenario, params
from whyalive import check_leaks
from whyalive.report import CycleReport, FixEdit, Report

pytest.importorskip("numpy")

# Module names a suggestion may use without the file importing them (the fix says so).
STDLIB_MODULES = {"weakref", "types", "functools", "traceback", "gc", "sys", "inspect"}
REPO = Path(__file__).resolve().parent.parent
_reports: dict[str, Report] = {}


def _available(scenario: Scenario) -> None:
    for module in scenario.needs:
        pytest.importorskip(module)


def report_of(scenario: Scenario) -> Report:
    """The scenario's report, made once per session."""
    if scenario.name not in _reports:
        function = scenario.load()
        with check_leaks(on_leak="ignore", record_allocations=scenario.record_allocations) as check:
            function(*scenario.arguments())
        assert check.report is not None
        _reports[scenario.name] = check.report
    return _reports[scenario.name]


def the_cycle(scenario: Scenario) -> CycleReport:
    """The scenario's cycle, or its loop through the autograd graph (``uncollectable``)."""
    report = report_of(scenario)
    found = [*report.cycles, *report.uncollectable]
    assert found, f"{scenario.name}: no cycle found"
    return found[0]


def plain(value: Any) -> Any:
    """What a scenario returned, comparable across the original and the fixed module."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    shape = getattr(value, "shape", None)
    if shape is not None:
        return ("array", tuple(shape))
    return type(value).__qualname__


def apply_edit(path: Path, edit: FixEdit) -> str:
    """The file's text with ``edit`` applied: whole lines replaced, nothing else."""
    lines = path.read_text(encoding="utf-8").splitlines()
    old = edit.old.split("\n")
    start = edit.line - 1
    assert lines[start : start + len(old)] == old, "the edit's old lines are not in the file"
    return "\n".join([*lines[:start], *edit.new.split("\n"), *lines[start + len(old) :]]) + "\n"


def load_fixed(scenario: Scenario, text: str, tmp_path: Path) -> Callable[..., Any]:
    """Import the fixed source as a module of its own and return the scenario's function."""
    name = f"fixed_{scenario.module.replace('.', '_')}"
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return getattr(module, scenario.function)  # type: ignore[no-any-return]


def alive_after(
    function: Callable[..., Any], arguments: Callable[[], tuple[Any, ...]]
) -> tuple[Any, int]:
    """Run with the collector off: what it returned, and how much payload is still alive."""
    payload.reset()
    gc.disable()
    try:
        result = plain(function(*arguments()))
        return result, payload.alive()
    finally:
        gc.enable()
        gc.collect()


@pytest.mark.parametrize("scenario", params())
def test_report_names_the_pattern_and_proves_its_cut(scenario: Scenario) -> None:
    """The pattern is the expected one and the cut frees every heavy object (its proof)."""
    _available(scenario)
    cycle = the_cycle(scenario)
    assert cycle.pattern == scenario.pattern, (cycle.pattern, cycle.summary)
    assert cycle.cut is not None
    assert cycle.cut.proven, (cycle.cut.description, cycle.cut.stays)
    assert not cycle.cut.stays


@pytest.mark.parametrize("scenario", params())
def test_cut_quotes_its_line_verbatim(scenario: Scenario) -> None:
    """Every quoted line is the file's line, exactly; no text is added to it."""
    _available(scenario)
    cycle = the_cycle(scenario)
    assert cycle.cut is not None
    if cycle.cut.in_user_code:
        assert cycle.cut.source_lines, cycle.cut.source_note
    lines = scenario.path.read_text(encoding="utf-8").splitlines()
    for quote in cycle.cut.source_lines:
        place, _, text = quote.partition("  ")
        file, _, number = place.rpartition(":")
        assert file == scenario.path.name
        assert lines[int(number) - 1].strip() == text
    assert cycle.cut.source_line == (cycle.cut.source_lines or (None,))[0]


def _backticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)


def _scope_names(tree: ast.Module, line: int) -> set[str]:
    """Names a statement at ``line`` can use: locals and parameters of the functions around
    it, the module's globals, the builtins."""
    names = set(dir(builtins))
    scopes: list[ast.AST] = [tree]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            end = getattr(node, "end_lineno", node.lineno)
            if node.lineno <= line <= end:
                scopes.append(node)
    for scope in scopes:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = scope.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            names.update(a.arg for a in every if a is not None)
        body = getattr(scope, "body", [])
        for node in _walk_scope(body if isinstance(body, list) else [body]):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, _DEFINES) and getattr(node, "name", None):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _walk_scope(body: list[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of a scope's body, without entering nested functions or classes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _names_used(span: str) -> set[str]:
    tree = ast.parse(span.strip())
    assigned = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    # A lambda's own parameters are bound inside it (`lambda grad, *, y=...: grad * y`).
    assigned |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in _args(n)}
    used = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
    }
    return used - assigned


def _args(function: ast.Lambda) -> list[ast.arg]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return [a for a in every if a is not None]


@pytest.mark.parametrize("scenario", params())
def test_every_suggestion_parses_and_names_what_exists(scenario: Scenario) -> None:
    """Backticked code in the fix parses and names only variables that exist at the line
    that made the cut (or modules the fix imports)."""
    _available(scenario)
    cycle = the_cycle(scenario)
    spans = _backticked(cycle.fix)
    for span in spans:
        ast.parse(span.strip())  # raises SyntaxError with the span in the message
    assert cycle.cut is not None
    if not cycle.cut.source_lines:
        return
    tree = ast.parse(scenario.path.read_text(encoding="utf-8"))
    known = set(STDLIB_MODULES)
    for quote in cycle.cut.source_lines:  # a cut of two labels: the scopes of both lines
        known |= _scope_names(tree, int(quote.split("  ", 1)[0].rpartition(":")[2]))
    if cycle.fix_edit is not None:  # a name the edit binds (`except OSError as error:`)
        known |= _identifiers(cycle.fix_edit.new) - _identifiers(cycle.fix_edit.old)
    for span in spans:
        unknown = _names_used(span) - known
        assert not unknown, (span, unknown, cycle.fix)


# Attributes a sentence may name on objects it does not define: the interpreter's own
# (`__traceback__`, `__self__`) and the methods of builtin types (`with_traceback`).
_BUILTIN_ATTRIBUTES = {
    name
    for kind in (object, BaseException, list, dict, type, types.FunctionType, types.MethodType,
                 types.FrameType, types.TracebackType, types.CodeType, functools.partial)
    for name in dir(kind)
}  # fmt: skip


# Library types whose methods a Why may name as an API (`register_hook`, `set_exception`).
_API_TYPES = ("asyncio.Future", "concurrent.futures.Future", "torch.Tensor", "torch.nn.Module",
              "torch.autograd.Function")  # fmt: skip
# Modules a Why may name without the file importing them (`inspect.currentframe()`).
_API_MODULES = {
    **{name: name for name in (*STDLIB_MODULES, "asyncio", "pytest", "torch", "logging")},
    "autograd": "torch.autograd",
}


def _api_names() -> set[str]:
    names: set[str] = set()
    for path in _API_TYPES:
        module, _, name = path.rpartition(".")
        if importlib.util.find_spec(module.split(".")[0]) is None:
            continue
        names.update(dir(getattr(importlib.import_module(module), name)))
    return names


def _resolves(span: str) -> set[str]:
    """Names and attributes of the span that a module chain resolves (`functools.wraps`,
    `autograd.Function`): they name a library's API, which exists."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(span.strip())):
        chain: list[str] = []
        current: ast.AST = node
        while isinstance(current, ast.Attribute):
            chain.append(current.attr)
            current = current.value
        if not chain or not isinstance(current, ast.Name) or current.id not in _API_MODULES:
            continue
        if importlib.util.find_spec(_API_MODULES[current.id].split(".")[0]) is None:
            continue
        obj: Any = importlib.import_module(_API_MODULES[current.id])
        resolved = [current.id]
        for attr in reversed(chain):
            if not hasattr(obj, attr):
                break
            obj = getattr(obj, attr)
            resolved.append(attr)
        found.update(resolved)
    return found


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _graph_words(report: Report, cycle: CycleReport) -> set[str]:
    """Every name the captured cycle shows: its objects' types and labels (a frame's
    function, a bound method's name) and its references (`.extra`, `local future`)."""
    words: set[str] = set()
    for node in (*cycle.members, *cycle.heavy):
        named = report.node(node)
        words |= _identifiers(f"{named.type_name} {named.label}")
    edges = [*cycle.edges, *cycle.loop, *(e for p in cycle.holder_paths for e in p.edges)]
    for edge in edges:
        words |= _identifiers(edge.name)
    return words


def _file_attributes(tree: ast.Module) -> set[str]:
    """Attribute names the file defines: methods and class attributes, attributes it stores."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names.update(n.name for n in node.body if isinstance(n, _DEFINES))
            names.update(
                t.id for n in node.body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)
            )  # fmt: skip
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def _attributes_used(span: str) -> set[str]:
    tree = ast.parse(span.strip())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


@pytest.mark.parametrize("scenario", params())
def test_why_and_cut_name_only_what_exists(scenario: Scenario) -> None:
    """Backticked code in the Why and in the cut's description names only what exists: a
    variable in scope at the line that made the cut (the module's globals when there is
    none), a name the captured cycle shows (a type, a frame's local, a reference), a
    standard module or builtin; an attribute the file defines or the cycle shows. A Why
    that spells `self.fp32_forward` for `MethodType(fp32_forward, model)` fails here."""
    _available(scenario)
    report = report_of(scenario)
    cycle = the_cycle(scenario)
    tree = ast.parse(scenario.path.read_text(encoding="utf-8"))
    lines = (
        [int(q.split("  ", 1)[0].rpartition(":")[2]) for q in cycle.cut.source_lines]
        if (cycle.cut is not None)
        else []
    )
    known = set(STDLIB_MODULES) | _graph_words(report, cycle)
    for line in lines or [0]:
        known |= _scope_names(tree, line)
    api = _api_names()
    attributes = _BUILTIN_ATTRIBUTES | _file_attributes(tree) | known | api
    texts = {"Why": cycle.explanation, "Cut": cycle.cut.description if cycle.cut else ""}
    for where, text in texts.items():
        for span in _backticked(text):
            try:
                ast.parse(span.strip())
            except SyntaxError:
                continue  # `.log`, `['service']`: a reference's name, not code
            library = _resolves(span)
            unknown = (_names_used(span) - known - api - library) | (
                _attributes_used(span) - attributes - library
            )
            assert not unknown, (where, span, unknown, text)


@pytest.mark.parametrize("scenario", params())
def test_the_fix_says_each_thing_once(scenario: Scenario) -> None:
    """What a `weakref.proxy` does is said once, however many statements the edit changes."""
    _available(scenario)
    fix = the_cycle(scenario).fix
    wrapped = "the reference then is a `weakref.proxy`"
    inside = "holds its owner through a `weakref.proxy`"
    assert not (wrapped in fix.lower() and inside in fix), fix
    sentences = [s.strip().lower() for s in re.split(r"(?<=[.:])\s+", fix) if s.strip()]
    assert len(sentences) == len(set(sentences)), fix


@pytest.mark.whyalive_skip  # the original scenarios leak on purpose
@pytest.mark.parametrize("scenario", params())
def test_fix_edit_applied_keeps_the_result_and_frees_the_payload(
    scenario: Scenario, tmp_path: Path
) -> None:
    """(a) same result, (b) payload freed by reference counting alone, (c) cut proven."""
    _available(scenario)
    cycle = the_cycle(scenario)
    edit = cycle.fix_edit
    if edit is None:
        pytest.skip(f"no mechanical edit: {cycle.fix}")
    assert cycle.cut is not None
    assert cycle.cut.proven  # (c)
    assert (REPO / edit.file).resolve() == scenario.path
    original = scenario.load()
    expected, leaked = alive_after(original, scenario.arguments)
    assert leaked, "the original scenario does not leak with the collector off"
    fixed = load_fixed(scenario, apply_edit(scenario.path, edit), tmp_path)
    try:
        result, left = alive_after(fixed, scenario.arguments)
    finally:
        sys.modules.pop(f"fixed_{scenario.module.replace('.', '_')}", None)
    assert result == expected  # (a)
    assert left == 0, f"{left} payload objects outlive the fixed scenario"  # (b)


@pytest.mark.whyalive_skip  # runs the loops through C++ too, which no collection frees
# generator_frame's generator ignores close() (the scenario's point): freeing it raises
# "generator ignored GeneratorExit" where the collector finalizes it.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <generator object _stream:pytest.PytestUnraisableExceptionWarning"
)
def test_most_scenarios_have_a_mechanical_fix() -> None:
    """At least 80 % of the scenarios carry a ``fix_edit``."""
    usable = [s for s in SCENARIOS if all(_importable(m) for m in s.needs)]
    with_edit = [s for s in usable if the_cycle(s).fix_edit is not None]
    assert len(with_edit) >= 0.8 * len(usable), sorted(
        s.name for s in usable if the_cycle(s).fix_edit is None
    )


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_new_scenarios_cite_their_source() -> None:
    """Each ``case_*.py`` says which public report it re-creates."""
    cases = sorted((REPO / "tests" / "scenarios").glob("case_*.py"))
    assert len(cases) >= 10
    for path in cases:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert re.search(r"Source: https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", doc), (
            path.name
        )


@pytest.mark.parametrize("scenario", params(plain=True))
def test_advice_itself_leaves_no_cyclic_garbage(scenario: Scenario) -> None:
    """Finding the lines, linting them and building the edit make no cyclic garbage (the
    monitor would otherwise save and report what whyalive made: `ast.dump` and
    `ast.literal_eval` each leave a cycle per call)."""
    from whyalive import find_leaks
    from whyalive.analysis import sourcelines

    sourcelines._recent.clear()  # parse and lint the file afresh
    function = scenario.load()
    arguments = scenario.arguments()
    gc.collect()
    find_leaks(function, *arguments)
    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        start = len(gc.garbage)
        gc.collect()
        made = gc.garbage[start:]
        del gc.garbage[start:]
    finally:
        gc.set_debug(flags)
    assert not made, {getattr(o, "__qualname__", type(o).__qualname__) for o in made}
