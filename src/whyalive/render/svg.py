"""SVG and PNG through the Graphviz ``dot`` binary, with one clear error when it is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import ClassVar

from whyalive.errors import MissingToolError, UsageError
from whyalive.render.dot import DotRenderer
from whyalive.report import Report

_TIMEOUT_S = 60


def find_dot() -> str | None:
    """The path of Graphviz ``dot``, or None when it is not installed."""
    return shutil.which("dot")


def run_dot(source: str, output_format: str, *, purpose: str) -> bytes:
    """``dot -T<format>`` on ``source``; MissingToolError names the binary and the way out."""
    binary = find_dot()
    if binary is None:
        raise MissingToolError(
            f"{purpose} needs the Graphviz program `dot`, which is not installed "
            "(apt install graphviz / brew install graphviz); or use -f html (no Graphviz "
            "needed) or -f dot (Graphviz source)"
        )
    try:
        done = subprocess.run(
            [binary, f"-T{output_format}"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise MissingToolError(f"Graphviz `dot` took over {_TIMEOUT_S} s; use -f html") from None
    if done.returncode != 0:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise UsageError(f"Graphviz `dot` failed: {first[0] if first else done.returncode}")
    return done.stdout


_ROOT = re.compile(r"<svg\b[^>]*>")
_SIZE = re.compile(r'\s(?:width|height)="[^"]*"')


def scalable(document: str) -> str:
    """Graphviz's SVG without its fixed width and height: it fills the width of wherever it
    is shown, keeping its proportions through the ``viewBox``."""
    root = _ROOT.search(document)
    if root is None or "viewBox" not in root.group(0):
        return document
    tag = _SIZE.sub("", root.group(0)).replace("<svg", '<svg width="100%"', 1)
    return document[: root.start()] + tag + document[root.end() :]


class SvgRenderer:
    """The DOT picture as SVG text (needs Graphviz)."""

    name: ClassVar[str] = "svg"
    file_suffixes: ClassVar[tuple[str, ...]] = (".svg",)
    binary: ClassVar[bool] = False

    def __init__(self, *, rankdir: str = "TB") -> None:
        self.dot = DotRenderer(rankdir=rankdir)

    def render(self, report: Report) -> str:
        """An SVG document that scales to the width it is shown in (its ``viewBox`` kept)."""
        document = run_dot(self.dot.render(report), "svg", purpose="svg output").decode("utf-8")
        return scalable(document)


class PngRenderer:
    """The DOT picture as PNG bytes (needs Graphviz); binary, so use ``render_bytes``."""

    name: ClassVar[str] = "png"
    file_suffixes: ClassVar[tuple[str, ...]] = (".png",)
    binary: ClassVar[bool] = True

    def __init__(self, *, rankdir: str = "TB", dpi: int = 96) -> None:
        self.dot = DotRenderer(rankdir=rankdir)
        self.dpi = dpi

    def render_bytes(self, report: Report) -> bytes:
        """The PNG image."""
        source = self.dot.render(report).replace(
            "digraph whyalive {", f"digraph whyalive {{\n  graph [dpi={int(self.dpi)}];", 1
        )
        return run_dot(source, "png", purpose="png output")

    def render(self, report: Report) -> str:
        """PNG is binary: there is no text form to return."""
        raise UsageError(
            "png is a binary format: write it to a file (-o out.png) or use render_bytes()"
        )
