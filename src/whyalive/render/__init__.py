"""One registry of renderers for every entry point: API, CLI, pytest plugin."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from whyalive.errors import UsageError
from whyalive.render.base import Renderer
from whyalive.render.text import TextRenderer

RENDERERS: dict[str, type[Any]] = {r.name: r for r in (TextRenderer,)}


def get_renderer(name: str) -> type[Renderer]:
    """A renderer class by format name, or by ``package.module:Class`` import path."""
    if name in RENDERERS:
        return RENDERERS[name]  # type: ignore[no-any-return]
    if ":" in name:
        module_name, _, class_name = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as error:
            raise UsageError(f"cannot load renderer {name!r}: {error}") from None
        return found  # type: ignore[no-any-return]
    known = ", ".join(sorted(RENDERERS))
    raise UsageError(f"unknown format {name!r} (known: {known})")


def renderer_for_path(path: str | Path) -> type[Renderer]:
    """The renderer whose file suffix matches ``path`` (``leak.html`` -> html)."""
    suffix = Path(path).suffix.lower()
    for renderer in RENDERERS.values():
        if suffix in renderer.file_suffixes:
            return renderer  # type: ignore[no-any-return]
    known = ", ".join(sorted(s for r in RENDERERS.values() for s in r.file_suffixes))
    raise UsageError(f"cannot tell the format of {str(path)!r} from its suffix (known: {known})")
