"""The ``whyalive lint`` subcommand: argument definitions and the function that runs it.

Exit codes: 0 no findings, 1 findings, 2 a usage error or input that could not be read or
parsed (those are still reported as WAL0xx lines, and the other files are still checked).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from whyalive.lint import lint_paths
from whyalive.lint.engine import LintFinding
from whyalive.lint.rules import INPUT_PROBLEMS, explain_rule
from whyalive.lint.sarif import render_sarif

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
FORMATS = ("text", "json", "sarif")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``lint`` options to ``parser`` (the ``whyalive lint`` subparser)."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check")
    parser.add_argument(
        "--format", choices=FORMATS, default="text", dest="output_format", help="output format"
    )
    parser.add_argument(
        "--select", default=None, metavar="CODES", help="comma-separated code prefixes to run"
    )
    parser.add_argument(
        "--ignore", default=None, metavar="CODES", help="comma-separated code prefixes to skip"
    )
    parser.add_argument(
        "--explain", default=None, metavar="CODE", help="print what a rule catches and its fix"
    )


def _render(findings: list[LintFinding], output_format: str) -> str:
    if output_format == "json":
        records = [
            {
                "path": f.path,
                "line": f.line,
                "column": f.col + 1,
                "code": f.code,
                "message": f.message,
            }
            for f in findings
        ]
        return json.dumps(records, indent=2, sort_keys=True)
    if output_format == "sarif":
        return render_sarif(findings)
    return "\n".join(f"{f.path}:{f.line}:{f.col + 1}: {f.message}" for f in findings)


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``whyalive lint`` with parsed ``args``; returns the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if args.explain is not None:
        try:
            out.write(explain_rule(args.explain))
        except KeyError:
            err.write(f"whyalive lint: unknown rule code {args.explain!r}\n")
            return EXIT_BAD_INPUT
        return EXIT_CLEAN
    if not args.paths:
        err.write("whyalive lint: give at least one PATH (or --explain CODE)\n")
        return EXIT_BAD_INPUT
    findings = lint_paths(args.paths, select=args.select, ignore=args.ignore)
    text = _render(findings, args.output_format)
    if text or args.output_format != "text":
        out.write(text + "\n")
    if any(f.code in INPUT_PROBLEMS for f in findings):
        return EXIT_BAD_INPUT
    return EXIT_FINDINGS if findings else EXIT_CLEAN
