"""IPython and Jupyter: ``%load_ext whyalive`` registers ``%%whyalive`` and ``%whyalive_explain``.

The only module that imports IPython; nothing else in whyalive imports it, so
the core keeps working without it. See ``docs/notebook.md``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from types import FrameType
from typing import Any

from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from whyalive.check import check_leaks
from whyalive.errors import WhyaliveError
from whyalive.explain import explain
from whyalive.report import Report


def show_report(report: Report) -> None:
    """Display a report: the viewer where HTML shows, the full text explanation elsewhere."""
    display({"text/plain": report.render("text"), "text/html": report._repr_html_()}, raw=True)


@magics_class
class WhyaliveMagics(Magics):
    """``%%whyalive`` checks a cell; ``%whyalive_explain NAME`` explains a live object."""

    @magic_arguments()
    @argument(
        "--min-bytes",
        default="0",
        metavar="SIZE",
        help="report cycles holding at least SIZE (1048576, 1MB, 1.5 MiB)",
    )
    @argument(
        "--census",
        action="store_true",
        help="also report heavy objects the cell left alive (not garbage), with their holders",
    )
    @argument(
        "--allow",
        action="append",
        default=[],
        metavar="SIG",
        help="a cycle signature or pattern name not to report (repeatable)",
    )
    @argument("--report", metavar="FILE", help="write the report here when something is found")
    @cell_magic
    def whyalive(self, line: str, cell: str) -> None:
        """Run the cell under ``check_leaks()``; show what it left in cyclic garbage.

        The explanation is displayed, not raised: no traceback. A clean cell shows
        nothing extra. The cell's own output and errors show as usual.
        """
        args = _parse_line(self.whyalive, line)
        try:
            if args.report is not None:
                from whyalive.render import renderer_for_path

                renderer_for_path(args.report)  # an unknown suffix fails before the cell runs
            check = check_leaks(
                on_leak="ignore", min_bytes=args.min_bytes, allow=args.allow, census=args.census
            )
        except WhyaliveError as error:
            raise IPythonUsageError(str(error)) from None
        shell = self._shell()
        number = _cell_number(shell)
        counted = shell.execution_count
        with check:
            check._where = f"In [{number}]"
            # IPython 8+ has counted this cell already, so the body would be filed (and named
            # in tracebacks and reports) as the next cell: file it under this one.
            shell.execution_count = number
            try:
                shell.run_cell(_numbered_as_shown(cell))
            finally:
                shell.execution_count = counted
        report = check.report
        if report is None or not report.found:
            return
        show_report(report)
        if args.report is not None:
            from whyalive.render import write_report

            try:
                written = write_report(report, args.report)
            except (OSError, WhyaliveError) as error:
                raise IPythonUsageError(f"cannot write {args.report}: {error}") from None
            print(f"Report written to {written.resolve()}")  # noqa: T201 - the cell's output

    @line_magic
    def whyalive_explain(self, line: str) -> None:
        """``%whyalive_explain NAME``: why is this object still alive? (``whyalive.explain``)."""
        expression = line.strip()
        if not expression:
            raise IPythonUsageError("usage: %whyalive_explain NAME (a variable or expression)")
        # Passed straight on: no local of this frame holds the object.
        show_report(explain(self._evaluate(expression)).report)

    def _shell(self) -> InteractiveShell:
        if self.shell is None:  # only a Magics built by hand, never one IPython registered
            raise IPythonUsageError("whyalive magics need a running IPython")
        return self.shell

    def _evaluate(self, expression: str) -> object:
        try:
            return self._shell().ev(expression)
        except Exception as error:
            raise IPythonUsageError(
                f"cannot evaluate {expression!r}: {type(error).__name__}: {error}"
            ) from None


def _parse_line(magic: Any, line: str) -> argparse.Namespace:
    """The magic's options as a shell would split them: ``--min-bytes "1 MiB"``.

    IPython's own splitter keeps the quotes (``'"1 MiB"'``), so a size with a space could
    not be written at all.
    """
    try:
        argv = shlex.split(line)
    except ValueError as error:  # an unclosed quote
        raise IPythonUsageError(f"cannot read the options {line.strip()!r}: {error}") from None
    namespace: argparse.Namespace = magic.parser.parse_args(argv)
    return namespace


def _numbered_as_shown(body: str) -> str:
    """The cell's body with a comment line standing for ``%%whyalive``, so the lines a
    report names are the lines the notebook shows (IPython drops leading blank lines).
    A body that starts with another cell magic must stay first, and keeps its numbers."""
    return body if body.startswith("%%") else "# %%whyalive\n" + body


def _cell_number(shell: InteractiveShell) -> int:
    """The number IPython shows for the cell running now (``In [2]``), read off the stack."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        named = shell.compile.format_code_name(frame.f_code.co_filename)
        if named and named[1].startswith("In["):
            return int(named[1][3:].rstrip("]"))
        frame = frame.f_back
    return int(shell.execution_count)


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics with a running IPython (``%load_ext whyalive``)."""
    ipython.register_magics(WhyaliveMagics)
