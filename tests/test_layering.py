"""The tree and the import graph of ``whyalive`` follow the layers of docs/architecture.md.

Every ``import`` of a whyalive module, at module level or inside a function, is read with
``ast`` from the sources (``import whyalive.x``, ``from whyalive.x import y``,
``from whyalive import x``, relative imports, ``importlib.import_module("whyalive.x")``).
Imports under ``if TYPE_CHECKING:`` are annotations only and never run, so they are not
counted. An import runs more than the module it names: ``import whyalive.a.b.c`` from
outside ``a`` runs ``a/__init__.py`` and ``a/b/__init__.py`` first, so those count as
imported too. There are no exceptions: no import goes up a layer and none closes a circle,
a package's ``__init__`` and its own submodules included.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
import sys
import warnings
import weakref

import pytest

import whyalive
from whyalive import MOVED_MODULES, Report, find_leaks, moved_to

PACKAGE = pathlib.Path(importlib.import_module("whyalive").__file__ or "").parent
ARCHITECTURE = PACKAGE.parents[1] / "docs" / "architecture.md"

# Lowest first; a module may import its own layer and those below it. Each name is a module
# at the top of whyalive/ or a package, which covers everything inside it.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("foundation", frozenset({"version", "errors", "guarded", "words"})),
    ("lint", frozenset({"lint"})),
    ("kinds", frozenset({"kinds"})),
    ("graph", frozenset({"graph"})),
    ("capture", frozenset({"capture"})),
    ("analysis", frozenset({"analysis"})),
    ("report", frozenset({"report"})),
    ("render", frozenset({"render"})),
    (
        "integrations",
        frozenset(
            {
                "",  # the package itself: the public API gathered in whyalive/__init__.py
                "__main__",
                "check",
                "explain",
                "census",
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
MAX_TOP_LEVEL_MODULES = 15

# What reads live objects: every stage below the report, and the report modules that build
# from live objects.
LIVE_READERS = ("kinds", "graph", "capture", "analysis", "report.builder", "report.pipeline")


def module_name(path: pathlib.Path) -> str:
    """``render.text`` for whyalive/render/text.py, ``""`` for whyalive/__init__.py."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    """Index in LAYERS of the layer that holds ``module`` (a package covers its modules)."""
    top = module.split(".")[0]
    for index, (_, members) in enumerate(LAYERS):
        if top in members:
            return index
    raise AssertionError(f"whyalive.{module} is in no layer: add it to LAYERS")


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(name: str) -> str:
    """The whyalive module that importing ``name`` (a dotted module path) runs last."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _started(module: str) -> set[str]:
    """The packages whose ``__init__`` has begun before ``module`` runs: those above it,
    and itself when it is a package (``""`` is whyalive itself, which every import begins)."""
    parts = module.split(".") if module else []
    started = {".".join(parts[:i]) for i in range(len(parts))}
    if MODULES[module].name == "__init__.py":
        started.add(module)
    return started


def _runs(target: str, importer: str) -> list[str]:
    """What importing ``target`` from ``importer`` may run: the module itself and the
    ``__init__`` of every package above it that has not begun (importing ``a.b.c`` runs
    ``a/__init__``, ``a/b/__init__`` and ``a/b/c``)."""
    parts = target.split(".") if target else []
    above = [".".join(parts[:i]) for i in range(1, len(parts))]
    started = _started(importer)
    # The target itself counts even when it has begun: its names may not be defined yet.
    return [name for name in above if name not in started] + [target]


def imports_of(module: str) -> list[str]:
    """The whyalive modules one module's imports run, at module level or deferred: each
    imported module and the ``__init__`` of every package above it that the import runs."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []

    def add(dotted: str, is_module: bool = False) -> None:
        name = dotted.removeprefix("whyalive").lstrip(".")
        if dotted != "whyalive" and not dotted.startswith("whyalive."):
            return
        if is_module and name not in MODULES:
            return  # a C extension (graph._fastgraph): no Python module runs
        found.extend(_runs(_imported(name), module))

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, is_module=True)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".") if package else []
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(["whyalive", *up, *([base] if base else [])])
            for alias in node.names:
                # `from whyalive.x import y`: y is a submodule or a name that x defines.
                add(f"{base}.{alias.name}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            add(node.args[0].value, is_module=True)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return [t for t in found if t != module]


def import_graph() -> dict[str, set[str]]:
    """Every whyalive module and the whyalive modules it imports."""
    return {module: set(imports_of(module)) for module in MODULES}


def test_every_module_is_in_a_layer() -> None:
    """A new module must be placed in a layer (and in docs/architecture.md's module map)."""
    for module in MODULES:
        layer_of(module)


def test_the_top_level_shows_the_layers() -> None:
    """``ls src/whyalive``: a package per layer or integration, and few modules beside them."""
    top_modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(top_modules) <= MAX_TOP_LEVEL_MODULES, top_modules
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    layered = {name for _, members in LAYERS for name in members}
    assert [p for p in packages if p not in layered] == []
    # A folder of Python files without __init__.py would be a namespace package nobody placed.
    stray = [p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))]
    assert sorted(stray) == packages


def module_map() -> set[str]:
    """The paths docs/architecture.md's module map names (files, and folders ending in ``/``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## Module map") : text.index("## Invariants")]
    return set(re.findall(r"`([\w/]+(?:\.py|\.c|/))`", section))


def test_every_package_is_in_the_module_map() -> None:
    """docs/architecture.md's module map names every module, by its path or its folder's,
    and every path it names exists as written (a bare ``base.py`` is no path)."""
    named = module_map()
    missing = [p for p in sorted(named) if not (PACKAGE / p).exists()]
    assert missing == [], f"the module map names paths that do not exist: {missing}"
    for path in [*MODULES.values(), *PACKAGE.rglob("*.c")]:
        rel = path.relative_to(PACKAGE).as_posix()
        folder = rel.rpartition("/")[0]
        assert {rel, f"{folder}/"} & named, f"{rel} is not in the module map"


def test_no_import_goes_up_a_layer() -> None:
    """No module imports a module of a higher layer, at module level or inside a function."""
    upward = [
        f"{module or 'whyalive'} ({LAYERS[layer_of(module)][0]}) imports "
        f"{target or 'whyalive'} ({LAYERS[layer_of(target)][0]})"
        for module, imported in import_graph().items()
        for target in sorted(imported)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_no_import_circle() -> None:
    """Modules and packages import each other in no circle, deferred imports included."""
    graph = import_graph()
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        top = module.split(".")[0]
        packages.setdefault(top, set()).update(t.split(".")[0] for t in targets)
        packages[top].discard(top)
    assert _circle(graph) is None
    assert _circle(packages) is None


def _circle(graph: dict[str, set[str]]) -> str | None:
    """One circle of ``graph`` as ``a -> b -> a``, or None."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(target) == 1:
                return " -> ".join([*path[path.index(target) :], target]) or "whyalive"
            elif target not in state:
                state[target] = 1
                path.append(target)
                stack.append((target, iter(sorted(graph.get(target, ())))))
    return None


def test_the_layering_test_sees_circles_and_upward_imports() -> None:
    """The checks above can fail: a circle and an upward import are found when present."""
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == "a -> b -> c -> a"
    assert _circle({"a": {"b"}, "b": set()}) is None
    assert layer_of("render.text") > layer_of("report.summary") > layer_of("analysis.paths")
    assert "report" in imports_of("render.text")
    # Deferred imports count; TYPE_CHECKING ones do not.
    assert "analysis" in imports_of("unittest")
    assert "report" not in imports_of("errors")
    # An import runs the __init__ of each package above the module it names, except those
    # the importer is inside (they have begun already).
    assert {"analysis", "analysis.naming"} <= set(imports_of("report.builder.edit_targets"))
    assert "analysis.diagnose" in imports_of("report.builder.cycles")
    assert _runs("analysis.diagnose.patterns.base", "analysis.cuts") == [
        "analysis.diagnose",
        "analysis.diagnose.patterns",
        "analysis.diagnose.patterns.base",
    ]
    assert _runs("analysis.diagnose", "analysis.diagnose.patterns") == ["analysis.diagnose"]
    assert _runs("", "check") == [""]


def test_renderers_import_no_capture_or_analysis_module() -> None:
    """Nothing under render/ reads live objects: it imports no capture, graph or analysis
    module, nor a report module that builds from live objects."""
    for module, imported in import_graph().items():
        if module.split(".")[0] != "render":
            continue
        for target in imported:
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


def forget_old_paths() -> None:
    """Drop the old paths earlier tests imported, so the next import of one warns again."""
    for name in [m for m in sys.modules if moved_to(m)]:
        del sys.modules[name]


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_import_path_is_the_module_at_its_new_one(old: str) -> None:
    """``import whyalive.summary`` (the tree before one package per layer) still works: it
    is the very module at ``whyalive.report.summary``, and it warns where it is written."""
    name, new = f"whyalive.{old}", f"whyalive.{MOVED_MODULES[old]}"
    assert not (PACKAGE / f"{old.replace('.', '/')}.py").exists()
    assert not (PACKAGE / old.replace(".", "/")).is_dir()
    forget_old_paths()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    assert module is importlib.import_module(new)
    assert (module.__name__, module.__spec__.name) == (new, new)
    assert [(w.category, w.filename) for w in caught][-1:] == [(DeprecationWarning, __file__)]
    assert f"{name} moved to {new}" in str(caught[-1].message)


def test_documented_old_paths_give_the_same_objects() -> None:
    """The paths users were shown before the move: docs/patterns.md's remedies, the
    benchmarks' ``pipeline``, a distributed ``Summary``, a pattern author's modules."""
    forget_old_paths()
    with pytest.deprecated_call():
        from whyalive.diagnose.naming import label
        from whyalive.diagnose.patterns import PATTERNS
        from whyalive.fix_edits import WEAKEN, build_rewrite
        from whyalive.pipeline import analyze
        from whyalive.summary import Summary
    from whyalive.analysis import fix_edits, naming
    from whyalive.analysis.diagnose import patterns
    from whyalive.report import pipeline, summary

    assert (build_rewrite, WEAKEN) == (fix_edits.build_rewrite, fix_edits.WEAKEN)
    assert (analyze, Summary) == (pipeline.analyze, summary.Summary)
    assert (label, PATTERNS) == (naming.label, patterns.PATTERNS)
    assert whyalive.report.Report is Report  # never moved


def test_an_old_path_under_warnings_as_errors_fails_and_changes_nothing() -> None:
    """With ``-W error`` an old path raises the DeprecationWarning; the module it names is
    left as it was, and nothing is recorded under the old name."""
    from whyalive.report import verdict

    spec = verdict.__spec__
    forget_old_paths()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match=r"whyalive\.verdict moved"):
            importlib.import_module("whyalive.verdict")
    assert "whyalive.verdict" not in sys.modules
    assert verdict.__spec__ is spec
    assert moved_to("whyalive.verdict.fails") == "whyalive.report.verdict.fails"
    assert moved_to("whyalive.report") is None
    assert moved_to("whyalive.diagnose.naming") == "whyalive.analysis.naming"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("whyalive.no_such_module")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ModuleNotFoundError, match="not a package"):
            importlib.import_module("whyalive.summary.no_such_module")
