"""Known-leak baselines for a test suite: the cycle signatures it is allowed to show.

``pytest --whyalive --whyalive-update-baseline`` writes every signature found,
with the tests that showed it and the bytes held; later runs with
``--whyalive-baseline=FILE`` fail only on signatures not in the file. The file is
JSON, sorted, so it diffs well in review.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from whyalive.errors import UsageError

FORMAT = "whyalive-baseline"
VERSION = 1


def load_baseline(path: Path) -> frozenset[str]:
    """The signatures in a baseline file; a missing or malformed file is a usage error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"whyalive baseline {path} does not exist: write it with --whyalive-update-baseline"
        ) from None
    except (OSError, ValueError) as error:
        raise UsageError(f"whyalive baseline {path} cannot be read: {error}") from None
    signatures = data.get("signatures") if isinstance(data, dict) else None
    if data.get("format") != FORMAT or not isinstance(signatures, dict):
        raise UsageError(f"whyalive baseline {path} is not a whyalive baseline file")
    return frozenset(str(s) for s in signatures)


def save_baseline(path: Path, findings: Mapping[str, Iterable[Mapping[str, Any]]]) -> Path:
    """Write each signature with its pattern, total bytes and the tests that showed it."""
    signatures: dict[str, Any] = {}
    for signature, rows in sorted(findings.items()):
        rows = list(rows)
        signatures[signature] = {
            "pattern": rows[0].get("pattern"),
            "bytes": sum(int(r.get("bytes", 0)) for r in rows),
            "tests": sorted({str(r["nodeid"]) for r in rows}),
        }
    document = {"format": FORMAT, "version": VERSION, "signatures": signatures}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
