"""whyalive: why is this tensor still alive?

Find the tensors, arrays and big buffers that only reference cycles keep alive,
explain each cycle in the user's own terms, and guard tests and training runs.
"""

from __future__ import annotations

__version__ = "0.1.0"

from whyalive.check import assert_no_leaks, check_leaks, find_leaks
from whyalive.errors import LeakError, LeakWarning, WhyaliveError
from whyalive.explain import Explanation, explain
from whyalive.monitor import GcMonitor, monitor
from whyalive.report import Report

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
    "monitor",
]
