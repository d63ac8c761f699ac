"""How the plain data displays itself without importing a renderer.

``print(report)``, ``report.render("html")``, a REPL's ``repr`` and a notebook cell's
``_repr_html_`` (on :class:`~whyalive.report.Report`, ``Explanation`` and ``Summary``)
call :func:`display`. The renderers live a layer up (``whyalive.render``), which fills
this table when it is imported; the package (``whyalive/__init__.py``, the layer that
may import everything) names the import to run on the first display, so the data stays
plain and imports nothing above it (docs/architecture.md, Layers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DISPLAYS: dict[str, Callable[..., str]] = {}
_LOADERS: list[Callable[[], object]] = []


def register_displays(**functions: Callable[..., str]) -> None:
    """Add display functions by name: ``render``, ``report_line``, ``report_html``, ..."""
    _DISPLAYS.update(functions)


def load_displays_with(loader: Callable[[], object]) -> None:
    """Run ``loader`` (an import that registers displays) before the first display."""
    _LOADERS.append(loader)


def display(name: str, /, *args: Any, **options: Any) -> str:
    """What the display function ``name`` makes of ``args``."""
    if name not in _DISPLAYS:
        for load in _LOADERS:
            load()
    try:
        function = _DISPLAYS[name]
    except KeyError:
        raise LookupError(f"no display {name!r}: import whyalive.render first") from None
    return function(*args, **options)
