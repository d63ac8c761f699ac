"""The import graph of ``whyalive`` follows the layers of docs/architecture.md.

Every ``import`` of a whyalive module, at module level or inside a function, is read
with ``ast`` from the sources. Imports under ``if TYPE_CHECKING:`` are annotations
only and never run, so they are not counted.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import weakref

from whyalive import Report, find_leaks

PACKAGE = pathlib.Path(importlib.import_module("whyalive").__file__ or "").parent

# Lowest first; a module may import its own layer and those below it. The names are
# module paths under ``whyalive``; a package name covers its submodules.
LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "foundation",
        frozenset(
            {
                "version",
                "errors",
                "guarded",
                "edge_kinds",
                "words",
                "origin",
                "baseline",
                "interrupts",
            }
        ),
    ),
    ("lint", frozenset({"lint"})),
    (
        "core stages",
        frozenset(
            {
                "kinds",
                "graph",
                "collector",
                "gcstate",
                "gcsaving",
                "freeze_holds",
                "capture",
                "edge_namer",
                "edges",
                "node_names",
                "paths",
                "cuts",
                "structure",
                "diagnose",
                "sourcelines",
                "statements",
                "source_targets",
                "fix_edits",
                "edit_text",
                "fix_weaken",
                "analysis",
                "roots",
                "allocations",
                "autograd_graph",
                "uncollectable",
            }
        ),
    ),
    (
        "report",
        frozenset(
            {
                "report",
                "displays",
                "report_schema",
                "report_merge",
                "verdict",
                "run_info",
                "report_builder",
                "pipeline",
                "explain",
                "census",
                "summary",
            }
        ),
    ),
    ("render", frozenset({"render"})),
    (
        "integrations",
        frozenset(
            {
                "",  # the package itself: the public API gathered in whyalive/__init__.py
                "__main__",
                "check",
                "monitor",
                "distributed",
                "cli",
                "pytest_plugin",
                "ipython",
                "unittest",
                "run_command",
                "demo",
            }
        ),
    ),
]

# What reads live objects: every core stage, and the report modules that build from them.
LIVE_READERS = (
    *dict(LAYERS)["core stages"],
    "report_builder",
    "pipeline",
    "explain",
    "census",
)


def module_name(path: pathlib.Path) -> str:
    """``render.text`` for whyalive/render/text.py, ``""`` for whyalive/__init__.py."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    """Index in LAYERS of the layer that holds ``module`` (a package covers its modules)."""
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member and module.startswith(member + ".")):
                return index
    raise AssertionError(f"whyalive.{module} is in no layer: add it to LAYERS")


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: pathlib.Path) -> list[tuple[str, bool]]:
    """(whyalive module imported, whether the import is inside a function) for one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child, deferred)
            return
        if isinstance(node, ast.Import):
            found.extend(
                (alias.name.removeprefix("whyalive").lstrip("."), deferred)
                for alias in node.names
                if alias.name == "whyalive" or alias.name.startswith("whyalive.")
            )
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module == "whyalive":
                # `from whyalive import x`: x is a submodule or a name of the package root.
                for alias in node.names:
                    submodule = PACKAGE / alias.name
                    is_module = submodule.is_dir() or submodule.with_suffix(".py").exists()
                    found.append((alias.name if is_module else "", deferred))
            elif node.module.startswith("whyalive."):
                found.append((node.module.removeprefix("whyalive."), deferred))
        inside = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return found


def import_graph() -> dict[str, list[tuple[str, bool]]]:
    """Every whyalive module and the whyalive modules it imports."""
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_import_goes_down_or_sideways() -> None:
    """No module imports a module of a higher layer, deferred imports included."""
    upward = []
    for module, imported in import_graph().items():
        for target, _ in imported:
            if layer_of(target) <= layer_of(module):
                continue
            upward.append(
                f"{module or 'whyalive'} ({LAYERS[layer_of(module)][0]}) imports "
                f"{target or 'whyalive'} ({LAYERS[layer_of(target)][0]})"
            )
    assert upward == []


def test_module_level_imports_have_no_cycle() -> None:
    """The modules' import-time dependencies form no cycle (a package's own __init__ aside)."""
    graph = {
        module: {t for t, deferred in imported if not deferred and t != module}
        for module, imported in import_graph().items()
    }
    for module, targets in graph.items():
        # A package's __init__ gathers its submodules, which import siblings through it.
        graph[module] = {t for t in targets if not module.startswith(t + ".") and t != ""}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :]
                raise AssertionError(f"import cycle: {' -> '.join([*cycle, target])}")
            if target not in state:
                walk(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)


def test_every_module_is_in_a_layer() -> None:
    """A new module must be placed in a layer (and in docs/architecture.md's module map)."""
    for module in import_graph():
        layer_of(module)


def test_renderers_import_no_capture_or_analysis_module() -> None:
    """Nothing under render/ reads live objects: it imports no capture, graph or analysis
    module, nor a report module that builds from live objects."""
    for module, imported in import_graph().items():
        if module.split(".")[0] != "render":
            continue
        for target, _ in imported:
            assert not any(
                target == stage or target.startswith(stage + ".") for stage in LIVE_READERS
            ), f"{module} imports {target}"


def test_the_module_files_stay_small() -> None:
    """No Python module of whyalive is over 400 lines (the C core is the one exception)."""
    long = {
        module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}


class Buffer(bytearray):
    """A big buffer that can be weakly referenced (a plain bytearray cannot)."""


class Holder:
    """The user's object that the cycle runs through."""

    buffer: Buffer
    step: object


def test_no_user_object_survives_in_a_report() -> None:
    """A report of a leak holds nothing of the user's: every object of the cycle is freed."""
    refs: list[weakref.ref[object]] = []

    def make() -> None:
        holder = Holder()
        holder.buffer = Buffer(1 << 20)

        def step() -> object:
            return holder

        holder.step = step
        refs.extend(weakref.ref(o) for o in (holder, holder.buffer, step))

    report = find_leaks(make)
    assert report.cycles, "the scenario must leak"
    assert [r() for r in refs] == [None, None, None]
    # The report is data: it round-trips through JSON unchanged.
    assert Report.from_dict(report.to_dict()) == report
