"""Suite-wide guards: every test leaves the garbage collector exactly as it found it."""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capabilities import WEBASSEMBLY, needs_c
from whyalive.graph import core as graphcore
from whyalive.graph.heap import user_freeze_count


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "c_extension: tests the C graph core (skipped where it is not compiled)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of the C graph core skip where it is not compiled; on WebAssembly, where no C
    extension can be built, they are deselected: nothing there to test."""
    if graphcore.c_implementation() is not None:
        return
    needs = [item for item in items if item.get_closest_marker("c_extension")]
    if WEBASSEMBLY:
        config.hook.pytest_deselected(items=needs)
        items[:] = [item for item in items if not item.get_closest_marker("c_extension")]
        return
    for item in needs:
        item.add_marker(pytest.mark.skip(reason="C extension not compiled"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"whyalive graph core: {graphcore.IMPLEMENTATION}"]
    if WEBASSEMBLY and graphcore.c_implementation() is None:
        lines.append("C extension tests deselected: no C extension is built on WebAssembly")
    return lines


@pytest.fixture(scope="session", autouse=True)
def _hypothesis_started() -> None:
    """Let hypothesis add its gc timing callback once, before the per-test snapshots."""
    try:
        from hypothesis import given, settings
        from hypothesis import strategies as st
    except ImportError:  # the core tests also run where hypothesis is not installed
        return

    @settings(max_examples=1, database=None)
    @given(st.none())
    def start(_: None) -> None:
        """Nothing: running it installs hypothesis's callback now."""

    start()


@pytest.fixture(autouse=True)
def _terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text wraps to the terminal: every test sees the same 100 columns, whatever runs it."""
    monkeypatch.setenv("COLUMNS", "100")


def _gc_state() -> tuple[object, ...]:
    return (
        gc.get_debug(),
        gc.isenabled(),
        gc.get_threshold(),
        list(gc.callbacks),
        user_freeze_count(),
    )


@pytest.fixture(autouse=True)
def gc_state_unchanged() -> Iterator[None]:
    """Assert debug flags, enabled state, thresholds, callbacks, freeze count and gc.garbage."""
    garbage = gc.garbage
    before = _gc_state()
    garbage_contents = list(garbage)
    yield
    assert _gc_state() == before, "a test changed the garbage collector's state"
    assert gc.garbage is garbage, "a test replaced gc.garbage"
    assert len(gc.garbage) == len(garbage_contents), "a test changed the length of gc.garbage"
    assert all(a is b for a, b in zip(gc.garbage, garbage_contents, strict=True)), (
        "a test changed the contents of gc.garbage"
    )


NOTEBOOK = Path(__file__).resolve().parent / "notebooks" / "whyalive_in_a_notebook.ipynb"


@pytest.fixture(scope="session")
def executed_notebook(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tests/notebooks/whyalive_in_a_notebook.ipynb run by nbclient on a real ipykernel, once."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for needed in ("ipykernel", "torch"):  # the kernel imports them; this process need not
        if importlib.util.find_spec(needed) is None:
            pytest.skip(f"{needed} is not installed")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    workdir = tmp_path_factory.mktemp("notebook")
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    notebook.metadata["workdir"] = str(workdir)
    return notebook


_FUNCTIONS = (
    "build_graph",
    "find_components",
    "nodes_reaching",
    "cycle_candidates",
    "clear_objects",
    "reverse_edges",
    "take_tail",
    "saved_start",
    "workspace",
)


@pytest.fixture(params=[pytest.param("c", marks=needs_c), "python"])
def core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Route whyalive's graph core through the C extension or the Python twin."""
    chosen = (
        graphcore.c_implementation() if request.param == "c" else graphcore.python_implementation()
    )
    assert chosen is not None  # the c_extension mark skipped it otherwise
    for name in _FUNCTIONS:
        monkeypatch.setattr(graphcore, name, getattr(chosen, name))
    return request.param
