"""``whyalive run [--on-exit | --every-step] (script.py | -m module) [args...]``.

Runs a program the way ``python -m cProfile`` does: ``sys.argv`` is the
program's own, it runs as ``__main__`` and its directory is ``sys.path[0]``.
Then it reports the cycles holding heavy objects that the program created.

Exit codes (see :mod:`whyalive.errors`): 0 clean, 1 leaks found or the program
failed (it raised, and its traceback is printed after the report; or it called
``sys.exit`` with a non-zero status or a message, and a line says which), 2 usage
error (missing script or module, syntax error in it, unknown option), 130
interrupted (Ctrl-C: no report, every gc setting put back). The program's own
status never passes through as is: 2 and 3 mean whyalive's own errors.
``os._exit(n)`` ends the process at once, so no report is made and the status is
``n``. A child the program forks that returns instead of calling ``os._exit``
makes no report either: its parent does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING

from whyalive.errors import EXIT_FOUND, EXIT_OK, UsageError
from whyalive.report import CycleReport, Report
from whyalive.words import size_from_words

if TYPE_CHECKING:
    from whyalive.capture import GarbageWatch


def size_argument(text: str) -> int:
    """An argparse ``type``: a size with or without a unit; a bad one is a usage error."""
    try:
        return size_from_words(text)
    except UsageError:
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r} (use 1048576, 1MB or 1.5 MiB; KB, MB, GB are 1024-based)"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``run`` subcommand's options."""
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--on-exit",
        dest="every_step",
        action="store_false",
        help="keep the program's cyclic garbage and explain it when the program ends (default)",
    )
    when.add_argument(
        "--every-step",
        dest="every_step",
        action="store_true",
        help="analyse and free garbage at each collection while the program runs (long runs)",
    )
    parser.add_argument(
        "-m",
        dest="module",
        action="store_true",
        help="run library module as a script: the first argument is a module name",
    )
    parser.add_argument("-o", "--output", help="also write the report here (.json, .html, ...)")
    parser.add_argument(
        "--min-bytes",
        type=size_argument,
        default=0,
        metavar="SIZE",
        help="report only cycles holding at least SIZE (1048576, 1MB, 1.5 MiB)",
    )
    parser.add_argument(
        "program", nargs=argparse.REMAINDER, help="script.py [args...] or -m module [args...]"
    )
    parser.set_defaults(every_step=False)


def _compile_script(path: str) -> CodeType:
    try:
        source = Path(path).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot open script {path!r}: {error.strerror}") from None
    try:
        return compile(source, path, "exec")
    except (SyntaxError, ValueError) as error:
        raise UsageError(f"cannot run {path}: {_syntax_words(error)}") from None


def _syntax_words(error: SyntaxError | ValueError) -> str:
    if isinstance(error, SyntaxError):
        # No line for errors about the whole file (NUL bytes on Python 3.12+).
        where = f" at line {error.lineno}" if error.lineno else ""
        return f"syntax error{where}: {error.msg}"
    return str(error)


def _module_runner(name: str, argv: list[str]) -> tuple[Callable[[], None], str | None]:
    """Check the module exists and compiles; a call that runs it as __main__, and its file."""
    import runpy

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as error:
        raise UsageError(f"cannot find module {name!r}: {error}") from None
    if spec is None or spec.loader is None:
        raise UsageError(f"no module named {name!r}")
    get_code = getattr(spec.loader, "get_code", None)
    if get_code is not None and not spec.submodule_search_locations:
        try:
            get_code(name)
        except SyntaxError as error:
            raise UsageError(f"cannot run module {name}: {_syntax_words(error)}") from None

    def run_module() -> None:
        sys.argv[:] = [spec.origin or name, *argv]
        runpy.run_module(name, run_name="__main__", alter_sys=True)

    return run_module, spec.origin if spec.has_location else None


def _script_runner(path: str, argv: list[str], main: ModuleType) -> Callable[[], None]:
    code = _compile_script(path)

    def run_script() -> None:
        sys.argv[:] = [path, *argv]
        sys.path[0] = os.path.dirname(os.path.abspath(path))
        main.__dict__.update(
            __file__=path, __package__=None, __spec__=None, __cached__=None,
            __builtins__=__builtins__,
        )  # fmt: skip
        exec(code, main.__dict__)

    return run_script


@contextlib.contextmanager
def _program_main(filename: str | None) -> Iterator[ModuleType]:
    """``sys.modules["__main__"]`` is the program's module while it runs and is analysed.

    As under ``python script.py``: the program's classes (``__module__ == "__main__"``)
    resolve to its file, so the analysis finds the line that made a cycle of them
    (``a.other = b``). ``-m`` runs put runpy's module there while the module runs; this one,
    naming the module's file, stands in for the analysis after it.
    """
    module = ModuleType("__main__")
    if filename is not None:
        module.__file__ = filename
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        yield module
    finally:
        if saved is None:
            sys.modules.pop("__main__", None)
        else:
            sys.modules["__main__"] = saved


def _call(program: Callable[[], None]) -> tuple[BaseException | None, int | None]:
    """Run the program; return what it raised (not SystemExit) and its exit code."""
    saved_argv, saved_path0 = list(sys.argv), sys.path[0]
    try:
        program()
    except SystemExit as stop:
        code = stop.code
        if code is None:
            return None, EXIT_OK
        if isinstance(code, int):
            return None, code
        sys.stderr.write(f"{code}\n")
        return None, EXIT_FOUND
    except Exception as error:
        return error, None
    finally:
        sys.argv[:] = saved_argv
        sys.path[0] = saved_path0
    return None, None


def _on_exit(
    program: Callable[[], None], where: str, min_bytes: int
) -> tuple[list[Report], BaseException | None, int | None]:
    from whyalive.capture import GarbageWatch

    watch = GarbageWatch()
    try:
        return _watched(watch, program, where, min_bytes)
    finally:
        watch.abandon()  # again: an interrupt (Ctrl-C) may cut the one in _watched


def _watched(
    watch: GarbageWatch, program: Callable[[], None], where: str, min_bytes: int
) -> tuple[list[Report], BaseException | None, int | None]:
    from whyalive.analysis import AnalysisOptions
    from whyalive.report.merge import merge_reports
    from whyalive.report.pipeline import (
        InBlockAnalyses,
        analyze_block,
        prepare_in_collector,
        probe_block,
    )

    options = AnalysisOptions(min_bytes=min_bytes, where=where)
    analyze_now = InBlockAnalyses(lambda: options)

    try:
        # What the program's own collections find is analysed and freed inside them, as
        # in a check: a long program's garbage is not held until it exits.
        prepare_in_collector()
        watch.begin(analyze_now=analyze_now)
        error, code = _call(program)
        captured = watch.end()
        report = analyze_block(captured, options)
        captured.release()
        # With the garbage freed and the baseline still frozen: what is left is alive.
        probed, _ = probe_block(watch, options)
        if probed is not None:
            report = merge_reports([report, probed])
        return [report], error, code
    finally:
        watch.abandon()


def _every_step(
    program: Callable[[], None], where: str, min_bytes: int
) -> tuple[list[Report], BaseException | None, int | None]:
    from whyalive.monitor import GcMonitor

    # No training loop calls step(): a helper thread gives the monitor its safe points.
    monitor = GcMonitor(min_bytes=min_bytes, log=False, poll_interval=0.5)
    monitor.label = f"the run of {where}"
    with monitor:
        error, code = _call(program)
    return monitor.summary_reports(), error, code


def _placed(report: Report, program: str, *, over_a_run: bool = False) -> Report:
    """The report with its place: the line that made the biggest cycle, in the program's terms.

    A whole program has no one line a check ran at; the line a user goes to is where its
    biggest cycle was made (``train.py:14``), said with the program when it is elsewhere.
    ``--every-step`` reports are over the run: ``the run of train.py, made at train.py:14``.
    """
    from dataclasses import replace

    if not report.cycles:
        return report
    top = max(report.cycles, key=lambda c: (c.total_bytes, c.occurrences))
    place = _cycle_line(report, top)
    if over_a_run:
        where = f"the run of {program}"
        if place is not None:
            biggest = "the biggest " if len(report.cycles) > 1 else ""
            where += f", {biggest}made at {place}"
    elif place is None:  # plain containers carry no line; say so rather than end on "train.py:"
        where = f"{program} (line not known)"
    elif place.startswith(f"{program}:"):
        where = place
    else:
        where = f"{place} (in a run of {program})"
    return replace(report, run=replace(report.run, where=where))


def _cycle_line(report: Report, cycle: CycleReport) -> str | None:
    """Where the cycle was made: its cut's statement or the start of its loop, else where the
    first of its heavy objects with a known site was allocated."""
    from whyalive.render.text import cycle_place

    place = cycle_place(report, cycle)
    if place is not None:
        return place
    held = set(cycle.heavy)
    sites = (h.allocation_site for h in report.heavy_objects if h.node_id in held)
    return next((site for site in sites if site), None)


def _write_outputs(reports: list[Report], output: str) -> list[Path]:
    from whyalive.render import write_report

    target = Path(output)
    return [
        write_report(
            report,
            target if number == 1 else target.with_name(f"{target.stem}-{number}{target.suffix}"),
        )
        for number, report in enumerate(reports, 1)
    ]


def run(args: argparse.Namespace) -> int:
    """Run the program under whyalive and return the exit code."""
    if not args.program:
        raise UsageError("run needs a script (whyalive run script.py [args...]) or -m module")
    target, *argv = args.program
    if args.output:
        from whyalive.render import renderer_for_path

        renderer_for_path(args.output)  # a bad suffix is a usage error before the program runs
    if args.module:
        program, filename = _module_runner(target, argv)
        where = f"module {target}"
    else:
        filename, where = target, os.path.basename(target)
    with _program_main(filename) as main:
        if not args.module:
            program = _script_runner(target, argv, main)
        return _run_and_report(args, program, where)


def _run_and_report(args: argparse.Namespace, program: Callable[[], None], where: str) -> int:
    parent = os.getpid()
    if args.every_step:
        reports, error, code = _every_step(program, where, args.min_bytes)
    else:
        reports, error, code = _on_exit(program, where, args.min_bytes)
    reports = [_placed(report, where, over_a_run=args.every_step) for report in reports]
    if os.getpid() != parent:
        # A child the program forked returned here: its parent reports, not it.
        return _program_failed(error, code) if error is not None or code else EXIT_OK
    found = [report for report in reports if report.found]
    for report in found or reports[:1]:
        sys.stderr.write(report.render("text"))
    if found:
        from whyalive.render.text import blind_spot_note

        sys.stderr.write(blind_spot_note())
    if args.output and (found or reports):
        for path in _write_outputs(found or reports[:1], args.output):
            sys.stderr.write(f"Wrote {path}\n")  # as `whyalive render` says it
    if error is not None or code not in (None, EXIT_OK):
        return _program_failed(error, code)
    if found:
        return EXIT_FOUND
    return EXIT_OK


def _program_failed(error: BaseException | None, code: int | None) -> int:
    if error is not None:
        # Printed as the interpreter would, without whyalive's own frames.
        tb = error.__traceback__
        while tb is not None and _is_ours(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb, file=sys.stderr)
    else:
        sys.stderr.write(f"whyalive: the program exited with status {code}; whyalive exits 1\n")
    return EXIT_FOUND


_HERE = os.path.dirname(os.path.abspath(__file__))


def _is_ours(filename: str) -> bool:
    return os.path.dirname(os.path.abspath(filename)) == _HERE or (
        os.path.basename(filename) == "runpy.py"
    )
