"""What this platform can run, and the marks that skip a test where it cannot.

CPython 3.14 is tested through Pyodide (CPython compiled to WebAssembly, run by
node): it has no threads, no fork, no subprocesses, no torch, no C compiler, and NumPy
only where a registry has a wheel for its ABI (scripts/test-pyodide.sh looks). A test that
needs one of those says so with a mark or reason from here, and skips there with that
reason; nothing else may skip on that leg. Tests of the C extension are deselected there instead
(``tests/conftest.py``): there is no C extension to test.

    from capabilities import needs_threads, numpy

    @needs_threads
    def test_two_threads() -> None: ...
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from types import ModuleType

import pytest

WEBASSEMBLY = sys.platform in {"emscripten", "wasi"}


def _threads_start() -> bool:
    # Emscripten builds without pthreads import threading, then refuse to start one.
    thread = threading.Thread(target=lambda: None)
    try:
        thread.start()
    except RuntimeError:
        return False
    thread.join()
    return True


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# Pyodide's os has fork() and the subprocess module, but both fail: ask the platform.
CAN_START_THREADS = _threads_start()
CAN_FORK = hasattr(os, "fork") and not WEBASSEMBLY
CAN_RUN_SUBPROCESSES = not WEBASSEMBLY

numpy = _optional("numpy")
"""NumPy, or None where it is not installed (on Pyodide: where scripts/test-pyodide.sh found
no wheel for its ABI on PyPI or npm)."""


def _missing(what: str) -> str:
    if WEBASSEMBLY:
        return f"{what}: this is CPython on WebAssembly (Pyodide), which has none"
    return f"{what}: not available here"


LONGEST_CHAIN_FREED = 2_500 if WEBASSEMBLY else 1_000_000
"""The longest chain of objects this platform can free. On Pyodide (CPython 3.14.2 on
WebAssembly) freeing a chain or ring of 4,000 plain objects overflows the stack and kills
the interpreter, whether reference counting or the collector frees it, with or without
whyalive: its deallocator recursion is not bounded there as on native builds."""


def chain_length(wanted: int) -> int:
    """``wanted`` links, or fewer where the platform cannot free that many in a row."""
    return min(wanted, LONGEST_CHAIN_FREED)


needs_threads = pytest.mark.skipif(not CAN_START_THREADS, reason=_missing("needs threads"))
needs_fork = pytest.mark.skipif(not CAN_FORK, reason=_missing("needs os.fork"))
needs_subprocess = pytest.mark.skipif(
    not CAN_RUN_SUBPROCESSES, reason=_missing("needs subprocesses")
)
# On Pyodide, scripts/test-pyodide.sh says what it asked the registries, and when.
NUMPY_MISSING = os.environ.get("WHYALIVE_NUMPY_MISSING") or (
    "needs NumPy: not installed in this Pyodide" if WEBASSEMBLY else "needs NumPy: not installed"
)
"""Also the reason for ``pytest.importorskip("numpy", reason=NUMPY_MISSING)``, in modules
whose every test needs NumPy."""
needs_numpy = pytest.mark.skipif(numpy is None, reason=NUMPY_MISSING)
TORCH_MISSING = (
    "needs torch: Pyodide has no build of it (not in its lock, no wheel for its ABI on PyPI)"
    if WEBASSEMBLY
    else "needs torch: not installed"
)
"""The reason for ``pytest.importorskip("torch", reason=TORCH_MISSING)``."""
needs_torch_installed = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason=TORCH_MISSING
)
"""For a pytester test whose subprocess imports torch: torch is not imported here. pytester
takes what a test imported out of ``sys.modules`` again, and torch's C extension, imported a
second time in one process, fails (``SystemError: ... bad call flags``)."""
JSONSCHEMA_MISSING = "needs jsonschema: not installed"
"""The reason for ``pytest.importorskip("jsonschema", reason=JSONSCHEMA_MISSING)``."""

needs_c = pytest.mark.c_extension
"""Tests of the C graph core: skipped where it is not compiled, deselected on WebAssembly."""
