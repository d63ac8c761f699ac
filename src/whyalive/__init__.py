"""whyalive: why is this tensor still alive?

Find the tensors, arrays and big buffers that only reference cycles keep alive,
explain each cycle in the user's own terms, and guard tests and training runs.
"""

from __future__ import annotations

from typing import Any

from whyalive.check import assert_no_leaks, check_leaks, find_leaks
from whyalive.errors import LeakError, LeakWarning, WhyaliveError
from whyalive.explain import Explanation, explain
from whyalive.kinds.builtin import register_builtin_kinds as _register_builtin_kinds
from whyalive.monitor import GcMonitor, monitor
from whyalive.report import Report
from whyalive.report.displays import load_displays_with as _load_displays_with
from whyalive.version import __version__


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext whyalive``: register ``%%whyalive`` and ``%whyalive_explain`` (docs/notebook.md).

    IPython is imported here, when IPython itself loads the extension, never by ``import whyalive``.
    """
    from whyalive.ipython import load_ipython_extension as load

    load(ipython)


def _load_renderers() -> None:
    """Import the renderers, which register the reports' display functions."""
    import whyalive.render  # noqa: F401


# Registries of lower layers that this package, the top layer, fills: the reports' displays
# come from whyalive.render on first use, the built-in heavy kinds are registered now.
_load_displays_with(_load_renderers)
_register_builtin_kinds()

__all__ = [
    "Explanation",
    "GcMonitor",
    "LeakError",
    "LeakWarning",
    "Report",
    "WhyaliveError",
    "__version__",
    "assert_no_leaks",
    "check_leaks",
    "explain",
    "find_leaks",
    "load_ipython_extension",
    "monitor",
]
