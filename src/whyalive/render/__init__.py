"""One registry of renderers for every entry point: API, CLI, pytest plugin."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, cast

from whyalive.errors import UsageError
from whyalive.render.base import BinaryRenderer, Renderer
from whyalive.render.dot import DotRenderer
from whyalive.render.html_page import HtmlRenderer
from whyalive.render.json_doc import JsonRenderer
from whyalive.render.notebook import (
    explanation_line,
    report_html,
    report_line,
    summary_html,
    summary_line,
)
from whyalive.render.summary import render_summary
from whyalive.render.svg import PngRenderer, SvgRenderer
from whyalive.render.text import TextRenderer
from whyalive.report import Report
from whyalive.report.displays import register_displays

RENDERERS: dict[str, type[Any]] = {
    r.name: r
    for r in (TextRenderer, JsonRenderer, DotRenderer, SvgRenderer, PngRenderer, HtmlRenderer)
}


def render_bytes(renderer: Renderer, report: Report) -> bytes:
    """The document as bytes: a binary renderer's own (``render_bytes``), text as UTF-8."""
    if renderer.binary:
        return cast(BinaryRenderer, renderer).render_bytes(report)
    return renderer.render(report).encode("utf-8")


def write_report(report: Report, path: str | Path) -> Path:
    """Render ``report`` in the format ``path``'s suffix names and write it there."""
    target = Path(path)
    document = render_bytes(renderer_for_path(target)(), report)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(document)
    return target


def get_renderer(name: str) -> type[Renderer]:
    """A renderer class by format name, or by ``package.module:Class`` import path."""
    if name in RENDERERS:
        return RENDERERS[name]
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
            return renderer
    known = ", ".join(sorted(s for r in RENDERERS.values() for s in r.file_suffixes))
    raise UsageError(f"cannot tell the format of {str(path)!r} from its suffix (known: {known})")


def render_as(report: Report, format_name: str = "text", **options: Any) -> str:
    """``report.render(format_name, **options)``: the named renderer's document."""
    return get_renderer(format_name)(**options).render(report)


# The plain data's display conveniences (``print(report)``, notebook cells) end here.
register_displays(
    render=render_as,
    report_line=report_line,
    report_html=report_html,
    explanation_line=explanation_line,
    summary_text=render_summary,
    summary_line=summary_line,
    summary_html=summary_html,
)
