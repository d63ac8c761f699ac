"""SARIF 2.1.0 output, the format GitHub code scanning and most CI dashboards read.

Findings become ``results``; files that could not be read or parsed (WAL0xx) become tool
execution notifications of the run's invocation, so code scanning does not show them as
alerts. Paths under the current directory are relative to the ``%SRCROOT%`` base.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from whyalive.lint.findings import LintFinding
from whyalive.lint.rules import INPUT_PROBLEMS, RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SOURCE_ROOT = "%SRCROOT%"
_HELP_URI = "https://github.com/whyalive/whyalive/blob/main/docs/lint.md"


def _rule_descriptors() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.explanation.split("\n\n")[0].replace("\n", " ")},
            "fullDescription": {"text": rule.explanation},
            "helpUri": f"{_HELP_URI}#{rule.code.lower()}",
            "defaultConfiguration": {
                "level": "warning",
                "enabled": rule.default_enabled,
            },
        }
        for rule in RULES
    ]


def _artifact(path: str, root: Path) -> dict[str, str]:
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SOURCE_ROOT}


def _location(finding: LintFinding, root: Path) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": _artifact(finding.path, root),
            "region": {"startLine": finding.line, "startColumn": finding.col + 1},
        }
    }


def to_sarif(
    findings: Iterable[LintFinding], *, tool_version: str = "0.1.0", root: str | None = None
) -> dict[str, Any]:
    """A SARIF 2.1.0 log (as plain data) with one run holding every finding.

    ``root`` (default: the current directory) is the ``%SRCROOT%`` that relative artifact
    URIs start from.
    """
    base = Path(os.path.abspath(root or os.curdir))
    rules = _rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for f in findings:
        if f.code in INPUT_PROBLEMS:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": f.text},
                    "descriptor": {"id": f.code},
                    "locations": [_location(f, base)],
                }
            )
            continue
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "warning",
            "message": {"text": f.text},
            "locations": [_location(f, base)],
        }
        if f.captures:
            result["properties"] = {
                "captures": [
                    {"name": c.name, "kind": c.kind, "heavy": c.heavy} for c in f.captures
                ],
                "fixable": bool(f.edits),
            }
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "whyalive-lint",
                        "version": tool_version,
                        "informationUri": _HELP_URI,
                        "rules": rules,
                        "notifications": [
                            {"id": code, "name": name, "shortDescription": {"text": text}}
                            for code, (name, text) in INPUT_PROBLEMS.items()
                        ],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "originalUriBaseIds": {SOURCE_ROOT: {"uri": base.as_uri().rstrip("/") + "/"}},
                "results": results,
            }
        ],
    }


def render_sarif(findings: Iterable[LintFinding], *, tool_version: str = "0.1.0") -> str:
    """The SARIF log as indented JSON text."""
    return json.dumps(to_sarif(findings, tool_version=tool_version), indent=2, sort_keys=True)
