"""``whyalive lint`` run in-process, as the test files that drive its command line need it."""

from __future__ import annotations

import argparse
import io

from whyalive.lint import command


def run_lint(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``whyalive lint *argv``."""
    parser = argparse.ArgumentParser(prog="whyalive lint")
    command.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    code = command.run(parser.parse_args(list(argv)), out=out, err=err)
    return code, out.getvalue(), err.getvalue()
