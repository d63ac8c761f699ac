"""``[tool.whyalive.lint]`` in ``pyproject.toml``: select, ignore, per-file ignores, excludes.

```toml
[tool.whyalive.lint]
select = ["WAL1", "WAL2"]            # default: every rule that is on by default
ignore = ["WAL501"]
extend-exclude = ["build/*", "*_pb2.py"]

[tool.whyalive.lint.per-file-ignores]
"tests/*" = ["WAL3"]
```

The file used is the nearest ``pyproject.toml`` with a ``[tool.whyalive]`` table, looking
from the common directory of the paths being linted up to the filesystem root (``--config``
names one, ``--isolated`` skips the search). Globs match a path relative to that file's
directory, or a file's base name, as in ruff and flake8.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whyalive.errors import UsageError

__all__ = ["LintConfig", "find_config", "load_config"]

TABLE = "[tool.whyalive"
_KEYS = frozenset({"select", "ignore", "per-file-ignores", "extend-exclude"})


@dataclass(frozen=True)
class LintConfig:
    """Settings read from ``pyproject.toml`` (all empty when there is none)."""

    root: Path = field(default_factory=Path.cwd)
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    extend_exclude: tuple[str, ...] = ()
    source: Path | None = None

    def _matches(self, path: str, pattern: str) -> bool:
        absolute = Path(path).resolve()
        try:
            relative = absolute.relative_to(self.root).as_posix()
        except ValueError:
            relative = absolute.as_posix()
        return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(absolute.name, pattern)

    def excluded(self, path: str) -> bool:
        """Whether ``extend-exclude`` drops this file or directory."""
        return any(self._matches(path, pattern) for pattern in self.extend_exclude)

    def ignored_in(self, path: str) -> tuple[str, ...]:
        """The code prefixes ``per-file-ignores`` drops for this file."""
        return tuple(
            code
            for pattern, codes in self.per_file_ignores
            if self._matches(path, pattern)
            for code in codes
        )


def find_config(paths: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.whyalive]`` table above ``paths``."""
    resolved = [Path(p).resolve() for p in paths] or [Path.cwd()]
    try:
        start = Path(os.path.commonpath([str(p) for p in resolved]))
    except ValueError:  # pragma: no cover - paths on different drives (Windows)
        start = Path.cwd()
    if not start.is_dir():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if TABLE in text:
            return candidate
    return None


def _parse_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError(
                f"{path}: reading [tool.whyalive.lint] needs Python 3.11+ or `pip install "
                "tomli` (or pass --isolated)"
            ) from None
    try:
        with path.open("rb") as stream:
            data: dict[str, Any] = tomllib.load(stream)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    return data


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        got = f" (got {type(value).__name__} {value!r:.40})" if isinstance(value, str) else ""
        raise UsageError(f"{where} must be a list of strings{got}")
    return tuple(v.strip().upper() if "exclude" not in where else v for v in value)


def load_config(path: Path) -> LintConfig:
    """Read ``[tool.whyalive.lint]`` from ``path``; a malformed table is a usage error."""
    table: object = _parse_toml(path)
    for key in ("tool", "whyalive", "lint"):
        if not isinstance(table, dict):
            break
        table = table.get(key, {})
    where = f"{path}: [tool.whyalive.lint]"
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table (or [tool.whyalive] is not one)")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise UsageError(f"{where} per-file-ignores must be a table of glob = [codes]")
    return LintConfig(
        root=path.parent.resolve(),
        select=_strings(table["select"], f"{where} select") if "select" in table else None,
        ignore=_strings(table.get("ignore", []), f"{where} ignore"),
        per_file_ignores=tuple(
            (glob, _strings(codes, f"{where} per-file-ignores {glob!r}"))
            for glob, codes in per_file.items()
        ),
        extend_exclude=_strings(table.get("extend-exclude", []), f"{where} extend-exclude"),
        source=path,
    )
