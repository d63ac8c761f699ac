"""Opt-in allocation sites: the reported `file:line` is the line that made the heavy object."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from whyalive import check_leaks
from whyalive.report import Report

numpy = pytest.importorskip("numpy")

HERE = os.path.basename(__file__)


def line_of(marker: str) -> int:
    """The line number in this file of the line carrying ``marker``."""
    with open(__file__, encoding="utf-8") as source:
        for number, text in enumerate(source, start=1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


def numpy_leak() -> None:
    state = {"weights": numpy.ones((32, 32))}  # numpy allocation here
    state["view"] = state["weights"][1:]
    state["me"] = state


def checked(fn: object, **options: object) -> Report:
    """Run ``fn`` under ``check_leaks(on_leak="ignore", **options)`` and return the report."""
    with check_leaks(on_leak="ignore", **options) as check:  # type: ignore[arg-type]
        fn()  # type: ignore[operator]
    assert check.report is not None
    return check.report


def test_numpy_site_is_the_creating_line() -> None:
    """The array and its view both point at the line that called numpy.ones."""
    report = checked(numpy_leak, record_allocations=True)
    sites = {h.allocation_site for h in report.heavy_objects}
    assert sites == {f"{HERE}:{line_of('# numpy allocation here')}"}


def many_alike() -> None:
    ring: list[object] = [numpy.zeros(64) for _ in range(40)]  # forty alike here
    ring.append(ring)


def test_alike_objects_from_one_site_are_said_once() -> None:
    """Forty arrays made by one line: one `Allocated:` line with their count, which is the
    number of heavy objects the JSON gives that site."""
    report = checked(many_alike, record_allocations=True)
    text = report.render("text", width=200)
    said = [line.strip() for line in text.splitlines() if line.strip().startswith("Allocated:")]
    site = f"{HERE}:{line_of('# forty alike here')}"
    assert said == [f"Allocated: ndarray(float64[64]) at {site} (40 of them)"]
    assert sum(1 for h in report.heavy_objects if h.allocation_site == site) == 40


def test_a_leak_collected_inside_the_block_has_its_site_too() -> None:
    """Collections inside the block are analysed where they run, while the recording is on:
    a leak each of them found is given its allocation site as the closing one's is."""
    import gc

    def leak_and_collect() -> None:
        for _ in range(3):
            numpy_leak()
            gc.collect()

    report = checked(leak_and_collect, record_allocations=True)
    (cycle,) = report.cycles
    assert cycle.occurrences == 3
    held = set(cycle.heavy)
    sites = {h.allocation_site for h in report.heavy_objects if h.node_id in held}
    assert sites == {f"{HERE}:{line_of('# numpy allocation here')}"}
    assert not any("not recorded" in note for note in report.notes)


def test_sites_are_not_recorded_when_off() -> None:
    """Without record_allocations no site is recorded and tracemalloc stays off."""
    report = checked(numpy_leak)
    assert report.found
    assert all(h.allocation_site is None for h in report.heavy_objects)
    assert not tracemalloc.is_tracing()


def test_tracemalloc_is_restored_exactly() -> None:
    """Started only when off and stopped after; a user's tracing is left running as it was."""
    checked(numpy_leak, record_allocations=True)
    assert not tracemalloc.is_tracing()
    tracemalloc.start(3)
    try:
        report = checked(numpy_leak, record_allocations=True)
        assert tracemalloc.is_tracing()
        assert tracemalloc.get_traceback_limit() == 3
        assert report.heavy_objects[0].allocation_site == (
            f"{HERE}:{line_of('# numpy allocation here')}"
        )
    finally:
        tracemalloc.stop()


def test_unrecorded_site_is_said_plainly() -> None:
    """An array made before the block has no site, and a note says why."""
    early = numpy.zeros(64)

    def leak() -> None:
        holder = [early]
        holder.append(holder)

    report = checked(leak, record_allocations=True)
    assert report.heavy_objects[0].allocation_site is None
    assert any("Allocation site not recorded for 1 of 1" in note for note in report.notes)


def test_torch_cpu_tensor_site_is_the_creating_line() -> None:
    """A tensor made by a factory and one made by an op point at their own lines."""
    torch = pytest.importorskip("torch")

    def leak() -> None:
        base = torch.randn(64, 64)  # torch factory here
        doubled = base * 2  # torch op here
        holder = [base, doubled, doubled.view(-1)]
        holder.append(holder)

    report = checked(leak, record_allocations=True)
    sites = {h.description: h.allocation_site for h in report.heavy_objects}
    assert sorted(set(sites.values())) == sorted(
        {f"{HERE}:{line_of('# torch factory here')}", f"{HERE}:{line_of('# torch op here')}"}
    )
    assert sites["Tensor(float32[4096], cpu)"] == f"{HERE}:{line_of('# torch op here')}"


def test_torch_mode_is_only_active_inside_the_block() -> None:
    """After the block no dispatch mode is left on torch's mode stack."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    with check_leaks(record_allocations=True):
        assert _get_current_dispatch_mode() is not None
        torch.ones(3)
    assert _get_current_dispatch_mode() is None


def test_recording_off_imports_nothing() -> None:
    """A check without record_allocations never imports the recorder or starts tracing."""
    import subprocess
    import sys

    code = (
        "import sys, numpy, whyalive\n"
        "with whyalive.check_leaks(on_leak='ignore'):\n"
        "    x = [numpy.ones(8)]; x.append(x)\n"
        "import tracemalloc\n"
        "print('whyalive.analysis.allocations' in sys.modules, tracemalloc.is_tracing())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "False"]


def test_recording_never_initialises_cuda() -> None:
    """CUDA sites come only from a process that already uses CUDA: we never start it."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_initialized():
        pytest.skip("CUDA already initialised in this process")

    def leak() -> None:
        holder = [torch.ones(16)]
        holder.append(holder)

    report = checked(leak, record_allocations=True)
    assert report.found
    assert not torch.cuda.is_initialized()


def test_cuda_tensor_site_is_the_creating_line() -> None:
    """The caching allocator's history names the line; recording is off again afterwards."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    torch.ones(1, device="cuda")  # CUDA in use before the block, as in a training job
    assert not torch._C._cuda_isHistoryEnabled()

    def leak() -> None:
        weights = torch.ones(256, 256, device="cuda")  # cuda allocation here
        holder = [weights, weights[1:]]
        holder.append(holder)

    report = checked(leak, record_allocations=True)
    assert [h.allocation_site for h in report.heavy_objects] == [
        f"{HERE}:{line_of('# cuda allocation here')}"
    ] * len(report.heavy_objects)
    assert report.bytes_by_device == {"cuda:0": 256 * 256 * 4}
    assert not torch._C._cuda_isHistoryEnabled()
    torch.cuda.memory._record_memory_history(enabled="state", context="state", stacks="python")
    try:  # the user's own recording is used and left on
        report = checked(leak, record_allocations=True)
        assert report.heavy_objects[0].allocation_site is not None
        assert torch._C._cuda_isHistoryEnabled()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
