"""Lines that fit a terminal: prose wrapped to a width, code and paths never broken.

A sentence is cut between words; a span in backticks (code the user may paste) and a
word with no space in it (a path, ``file.py:12``, a qualified name) stay whole, on a
line of their own when they do not fit, so the only lines past the width are those
that hold such a span.
"""

from __future__ import annotations

import contextlib
import os
import re

DEFAULT_WIDTH = 100
MIN_WIDTH = 40

# What a line never breaks: a backtick span with the punctuation glued to it, a size with
# its unit, a notebook cell's place; anything else breaks at spaces.
_ATOM = re.compile(
    r"[^\s`]*`[^`]*`[^\s`]*"  # `code`,
    r"|\S*\d (?:B|KiB|MiB|GiB|TiB)\b\S*"  # 32.0 KiB
    r"|\(?In \[\d+\], line \d+\S*"  # a notebook cell's line
    r"|\S+"
)


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first), else :data:`DEFAULT_WIDTH`."""
    if os.environ.get("COLUMNS", "").isdigit():
        return max(int(os.environ["COLUMNS"]), MIN_WIDTH)
    for stream in (1, 2):  # stdout, then stderr: `whyalive run` prints on stderr
        with contextlib.suppress(OSError):  # not a terminal
            return max(os.get_terminal_size(stream).columns, MIN_WIDTH)
    return DEFAULT_WIDTH


def _atoms(text: str) -> list[str]:
    atoms = _ATOM.findall(text)
    # Every character but the spaces between atoms is kept; should the pattern ever miss
    # some (it cannot, but the text is the user's), plain words lose nothing.
    kept = "".join("".join(atom.split()) for atom in atoms)
    return atoms if kept == "".join(text.split()) else text.split()


def wrap(text: str, width: int, *, indent: str = "", hang: str = "  ") -> list[str]:
    """``text`` as lines of at most ``width`` characters, first ``indent``, then ``indent + hang``.

    Only a backtick span or a spaceless word longer than a line goes past ``width``.
    """
    lines: list[str] = []
    line = indent
    fresh = True  # nothing but the indent on this line yet
    follow = indent + hang
    for atom in _atoms(text):
        candidate = line + atom if fresh else f"{line} {atom}"
        if len(candidate) <= width or fresh:
            line, fresh = candidate, False
            continue
        lines.append(line)
        line = follow + atom
    if not fresh or not lines:
        lines.append(line)
    return [entry.rstrip() for entry in lines]


def wrap_all(lines: list[str], width: int) -> list[str]:
    """Each line wrapped, keeping its own indent (and two more on the lines it grows)."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width or not line.strip():
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.extend(wrap(line.strip(), width, indent=indent))
    return out
