"""SARIF 2.1.0 output, the format GitHub code scanning and most CI dashboards read."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from whyalive.lint.engine import LintFinding
from whyalive.lint.rules import INPUT_PROBLEMS, RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
_HELP_URI = "https://github.com/whyalive/whyalive/blob/main/docs/lint.md"


def _rule_descriptors() -> list[dict[str, Any]]:
    described: list[dict[str, Any]] = [
        {
            "id": code,
            "name": name,
            "shortDescription": {"text": text.split(". ")[0]},
            "defaultConfiguration": {"level": "error"},
        }
        for code, (name, text) in INPUT_PROBLEMS.items()
    ]
    described.extend(
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
    )
    return described


def _uri(path: str) -> str:
    return path.replace(os.sep, "/")


def to_sarif(findings: Iterable[LintFinding], *, tool_version: str = "0.1.0") -> dict[str, Any]:
    """A SARIF 2.1.0 log (as plain data) with one run holding every finding."""
    rules = _rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error" if f.code in INPUT_PROBLEMS else "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": {"startLine": f.line, "startColumn": f.col + 1},
                    }
                }
            ],
        }
        for f in findings
    ]
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
                    }
                },
                "results": results,
            }
        ],
    }


def render_sarif(findings: Iterable[LintFinding], *, tool_version: str = "0.1.0") -> str:
    """The SARIF log as indented JSON text."""
    return json.dumps(to_sarif(findings, tool_version=tool_version), indent=2, sort_keys=True)
