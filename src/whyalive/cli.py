"""The command line: ``whyalive demo | render | lint | run``; ``main(argv) -> exit code``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from whyalive import __version__
from whyalive.errors import (
    EXIT_FOUND,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    WhyaliveError,
)

if TYPE_CHECKING:
    from whyalive.report import Report


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"whyalive: error: {message}\n")


class _VersionAction(argparse.Action):
    """``--version``: one unwrapped line, with the graph core that runs (C or pure Python)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:  # noqa: A002 - argparse's keyword
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from whyalive.graph.core import implementation_words

        sys.stdout.write(f"whyalive {__version__} ({implementation_words()})\n")
        parser.exit(EXIT_OK)


def _write(document: str | bytes, output: str | None) -> None:
    if output in (None, "-"):
        if isinstance(document, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(document)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(document)
    else:
        target = Path(output)
        try:
            if isinstance(document, bytes):
                target.write_bytes(document)
            else:
                target.write_text(document, encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot write {output}: {error.strerror}") from None
        # As memray does: say what was written, so a script's log shows where to look.
        sys.stdout.write(f"Wrote {output}\n")


def _cmd_demo(args: argparse.Namespace) -> int:
    from whyalive.demo import run_demo

    name, report = run_demo(fixed=args.fixed, device=args.device)
    version = "fixed" if args.fixed else "pre-fix"
    banner = f"whyalive demo: pipelining stage_backward ({version}, {name} backend)\n"
    # Only a text document on stdout gets the banner in front of it.
    to_stdout_text = args.output in (None, "-") and args.format in (None, "text")
    (sys.stdout if to_stdout_text else sys.stderr).write(banner)
    _render_to(report, args.format, args.output)
    return EXIT_FOUND if report.found else EXIT_OK


def _render_to(report: Report, format_name: str | None, output: str | None) -> None:
    from whyalive.render import get_renderer, renderer_for_path
    from whyalive.render.text import blind_spot_note

    if format_name:
        renderer = get_renderer(format_name)
    elif output not in (None, "-"):
        renderer = renderer_for_path(output)
    else:
        renderer = get_renderer("text")
    options = (
        {"color": sys.stdout.isatty()} if renderer.name == "text" and output in (None, "-") else {}
    )
    instance = renderer(**options)
    if renderer.binary:
        from whyalive.render import render_bytes

        _write(render_bytes(instance, report), output)
    else:
        document = instance.render(report)
        if renderer.name == "text" and report.found:
            document += blind_spot_note()
        _write(document, output)


def _cmd_render(args: argparse.Namespace) -> int:
    from whyalive.report import Report

    report = Report.load(args.report)
    _render_to(report, args.format, args.output)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """All subcommands; each calls the library's public API."""
    parser = _Parser(prog="whyalive", description="Why is this tensor still alive?")
    parser.add_argument(
        "--version", action=_VersionAction, help="print the version and which graph core runs"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = commands.add_parser("demo", help="find and explain the bundled stage_backward leak")
    demo.add_argument("--fixed", action="store_true", help="run the fixed version (no leak)")
    demo.add_argument(
        "--device", help="torch device for the demo's tensors (e.g. cuda); default: CPU"
    )
    demo.add_argument("-f", "--format", help="output format (text, json, ...)")
    demo.add_argument("-o", "--output", help="write here instead of stdout")
    demo.set_defaults(handler=_cmd_demo)

    render = commands.add_parser("render", help="render a saved JSON report")
    render.add_argument("report", help="report JSON written by whyalive")
    render.add_argument("-f", "--format", help="output format (default: from -o suffix, else text)")
    render.add_argument("-o", "--output", help="output file, or - for stdout")
    render.set_defaults(handler=_cmd_render)

    from whyalive.lint import command as lint_command

    lint = commands.add_parser("lint", help="flag code that makes reference cycles, before it runs")
    lint_command.add_arguments(lint)
    lint.set_defaults(handler=lint_command.run)

    from whyalive import run_command

    run = commands.add_parser("run", help="run a Python program and explain the cycles it leaves")
    run_command.add_arguments(run)
    run.set_defaults(handler=run_command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (see :mod:`whyalive.errors`)."""
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if not given:
        # Bare `whyalive`: what it can do, not one line about a missing argument.
        sys.stderr.write(parser.format_help())
        return EXIT_USAGE
    args = parser.parse_args(given)
    try:
        return int(args.handler(args))
    except WhyaliveError as error:
        sys.stderr.write(f"whyalive: error: {error}\n")
        return error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("whyalive: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `whyalive render x.json | head`: the reader left; not an error of ours. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
