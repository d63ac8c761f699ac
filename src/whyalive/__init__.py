"""whyalive: why is this tensor still alive?

Find the tensors, arrays and big buffers that only reference cycles keep alive,
explain each cycle in the user's own terms, and guard tests and training runs.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

from whyalive.check import assert_no_leaks, check_leaks, find_leaks
from whyalive.errors import LeakError, LeakWarning, WhyaliveError
from whyalive.explain import Explanation, explain
from whyalive.kinds.builtin import register_builtin_kinds as _register_builtin_kinds
from whyalive.monitor import GcMonitor, monitor
from whyalive.report import Report
from whyalive.report.displays import load_displays_with as _load_displays_with
from whyalive.version import __version__


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext whyalive``: register ``%%whyalive`` and ``%whyalive_explain`` (docs/notebook.md).

    IPython is imported here, when IPython itself loads the extension, never by ``import whyalive``.
    """
    from whyalive.ipython import load_ipython_extension as load

    load(ipython)


def _load_renderers() -> None:
    """Import the renderers, which register the reports' display functions."""
    import whyalive.render  # noqa: F401


# Module paths before the tree took one package per layer (whyalive 0.1.0 up to commit
# 5e36282), each with its home now. A package's old path covers its submodules too
# (whyalive.diagnose.patterns.closures); the longest old path that matches wins.
MOVED_MODULES: dict[str, str] = {
    "allocations": "analysis.allocations",
    "autograd_graph": "kinds.autograd_graph",
    "baseline": "report.baseline",
    "collector": "capture.collector",
    "cuts": "analysis.cuts",
    "diagnose": "analysis.diagnose",
    "diagnose.naming": "analysis.naming",
    "displays": "report.displays",
    "edge_kinds": "words.edge_kinds",
    "edge_namer": "analysis.edge_namer",
    "edges": "analysis.edges",
    "edit_text": "analysis.edit_text",
    "fix_edits": "analysis.fix_edits",
    "fix_weaken": "analysis.fix_weaken",
    "freeze_holds": "capture.freeze_holds",
    "gcsaving": "capture.gcsaving",
    "gcstate": "capture.gcstate",
    "interrupts": "capture.interrupts",
    "node_names": "analysis.node_names",
    "origin": "analysis.origin",
    "paths": "analysis.paths",
    "pipeline": "report.pipeline",
    "report_builder": "report.builder",
    "report_merge": "report.merge",
    "report_schema": "report.schema",
    "roots": "analysis.roots",
    "run_info": "report.run_info",
    "source_targets": "analysis.source_targets",
    "sourcelines": "analysis.sourcelines",
    "statements": "analysis.statements",
    "structure": "analysis.structure",
    "summary": "report.summary",
    "uncollectable": "analysis.uncollectable",
    "verdict": "report.verdict",
}


def moved_to(name: str) -> str | None:
    """The module an old path ``whyalive.x.y`` names now, or None when it did not move."""
    rest = name.removeprefix(f"{__name__}.")
    if rest == name:
        return None
    old = rest
    while old and old not in MOVED_MODULES:
        old = old.rpartition(".")[0]
    if not old:
        return None
    return f"{__name__}.{MOVED_MODULES[old]}{rest[len(old) :]}"


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the module that lives at its new path: one module object under
    both names (so ``whyalive.summary.Summary is whyalive.report.summary.Summary``), made only
    when someone imports the old path, with a DeprecationWarning naming the new one."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("whyalive.") or moved_to(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = moved_to(spec.name)
        assert new is not None  # find_spec made this spec only for a moved path
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__
        # Before the import system touches the module: under -W error it raises from here.
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (the old path is an alias "
            "of the same module and is kept for the 0.x releases)",
            DeprecationWarning,
            stacklevel=_caller_level(),
        )
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system set the alias spec on the shared module; give it back its own.
        alias = module.__spec__
        assert alias is not None
        module.__spec__ = alias.loader_state


def _caller_level() -> int:
    """The stacklevel of the code that imported the old path, from ``create_module``.

    ``warnings.warn`` skips the import system's own frames (``importlib._bootstrap``) when
    it counts; ``importlib.import_module`` is counted, and passed too.
    """
    frame: types.FrameType | None = sys._getframe(2)  # create_module's caller
    level = 2
    while frame is not None:
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            frame = frame.f_back  # not counted by warnings.warn
            continue
        if frame.f_globals.get("__name__") != "importlib":
            return level
        frame = frame.f_back
        level += 1
    return level


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    # First, so no path finder makes a second copy of a moved package's submodule under
    # its old name; it answers only for the old paths.
    sys.meta_path.insert(0, _MovedModuleFinder())

# Registries of lower layers that this package, the top layer, fills: the reports' displays
# come from whyalive.render on first use, the built-in heavy kinds are registered now.
_load_displays_with(_load_renderers)
_register_builtin_kinds()

__all__ = [
    "Explanation",
    "GcMonitor",
    "LeakError",
    "LeakWarning",
    "Report",
    "WhyaliveError",
    "__version__",
    "assert_no_leaks",
    "check_leaks",
    "explain",
    "find_leaks",
    "load_ipython_extension",
    "monitor",
]
