"""The ``whyalive lint`` subcommand: argument definitions and the function that runs it.

Exit codes: 0 no findings, 1 findings (with ``--fix``: findings left; with ``--diff``:
something to fix, or findings it cannot fix, which it lists on stderr), 2 a usage error
(an unknown code, a bad ``[tool.whyalive.lint]``) or
input that could not be read or parsed (those are still reported as WAL0xx lines, and the
other files are still checked).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tokenize
from pathlib import Path
from typing import Any, TextIO

from whyalive.errors import UsageError
from whyalive.lint import check_codes, lint_paths
from whyalive.lint.config import LintConfig, find_config, load_config
from whyalive.lint.findings import LintFinding
from whyalive.lint.fixes import apply_edits, compiles, unified_diff
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
    changes = parser.add_mutually_exclusive_group()
    changes.add_argument(
        "--fix", action="store_true", help="apply the always-safe fixes to the files in place"
    )
    changes.add_argument(
        "--diff", action="store_true", help="print the always-safe fixes as a diff; write nothing"
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=_job_count,
        default=None,
        metavar="N",
        help="processes to lint with (default or 0: one per core; 1: this process only)",
    )
    parser.add_argument(
        "--check-syntax",
        action="store_true",
        help="parse every file, to report any syntax error as WAL003 (by default a file is "
        "parsed only when its text could hold a finding)",
    )
    config = parser.add_mutually_exclusive_group()
    config.add_argument(
        "--config", default=None, metavar="PYPROJECT", help="read [tool.whyalive.lint] from here"
    )
    config.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")


def _job_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of processes (0 or more), got {text!r}"
        )
    return value


def _record(finding: LintFinding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "line": finding.line,
        "column": finding.col + 1,
        "code": finding.code,
        "message": finding.text,
        "captures": [{"name": c.name, "kind": c.kind, "heavy": c.heavy} for c in finding.captures],
        "fixable": bool(finding.edits),
    }


def _render(findings: list[LintFinding], output_format: str) -> str:
    if output_format == "json":
        return json.dumps([_record(f) for f in findings], indent=2, sort_keys=True)
    if output_format == "sarif":
        return render_sarif(findings)
    return "\n".join(f"{f.path}:{f.line}:{f.col + 1}: {f.message}" for f in findings)


def _config(args: argparse.Namespace) -> LintConfig:
    if args.isolated:
        return LintConfig()
    path = Path(args.config) if args.config else find_config(args.paths)
    return load_config(path) if path is not None else LintConfig()


def _write_fixed(path: str, text: str) -> None:
    """Write ``text`` back in the file's own encoding (its newlines were kept when read).

    ``utf-8-sig`` puts back the byte order mark that decoding took off.
    """
    with open(path, "rb") as stream:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(stream.read()).readline)
    with open(path, "wb") as stream:
        stream.write(text.encode(encoding))


def _fix(
    findings: list[LintFinding], sources: dict[str, str], *, write: bool, out: TextIO, err: TextIO
) -> list[LintFinding]:
    """Apply (or, without ``write``, print as a diff) every fix; return what is left."""
    fixed: set[int] = set()
    files = 0
    for path, source in sources.items():
        mine = [f for f in findings if f.path == path and f.edits]
        if not mine:
            continue
        after = apply_edits(source, (e for f in mine for e in f.edits))
        if not compiles(after, path):
            err.write(f"whyalive lint: {path}: fixes left out, the result would not compile\n")
            continue
        files += 1
        fixed.update(id(f) for f in mine)
        if write:
            _write_fixed(path, after)
        else:
            out.write(unified_diff(path, source, after))
    verb = "fixed" if write else "would fix"
    err.write(f"whyalive lint: {verb} {len(fixed)} finding(s) in {files} file(s)\n")
    return [f for f in findings if id(f) not in fixed]


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
    changing = args.fix or args.diff
    sources: dict[str, str] = {}
    skipped: list[str] = []
    try:
        check_codes(args.select, "--select")
        check_codes(args.ignore, "--ignore")
        findings = lint_paths(
            args.paths,
            select=args.select,
            ignore=args.ignore,
            config=_config(args),
            sources=sources if changing else None,
            jobs=args.jobs,
            check_syntax=args.check_syntax,
            skipped=skipped,
        )
    except UsageError as error:
        err.write(f"whyalive lint: {error}\n")
        return EXIT_BAD_INPUT
    for path in skipped:
        err.write(
            f"whyalive lint: note: skipped {path}: not a regular file (a FIFO, device or socket)\n"
        )
    if changing:
        before = len(findings)
        findings = _fix(findings, sources, write=args.fix, out=out, err=err)
        if args.diff:
            # The diff owns stdout (it may be piped to `patch`): what it cannot fix goes to
            # stderr, so no finding is hidden behind "would fix 0".
            if findings:
                err.write(f"whyalive lint: {len(findings)} finding(s) with no always-safe fix:\n")
                err.write(_render(findings, "text") + "\n")
            bad = any(f.code in INPUT_PROBLEMS for f in findings)
            if bad:
                return EXIT_BAD_INPUT
            return EXIT_FINDINGS if before else EXIT_CLEAN
    text = _render(findings, args.output_format)
    if text or args.output_format != "text":
        out.write(text + "\n")
    if any(f.code in INPUT_PROBLEMS for f in findings):
        return EXIT_BAD_INPUT
    return EXIT_FINDINGS if findings else EXIT_CLEAN
