"""End-to-end checks of the core: each leak shape is found, named, sized and freed."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from collections.abc import Callable
from typing import Any

import pytest

import whyalive
from capabilities import needs_c, needs_numpy, needs_subprocess, numpy
from scenarios import (
    Trainer,
    counts_said,
    heavy,
    heavy_bytes,
    shared_parameters,
    stage_backward,
    stage_backward_fixed,
)
from whyalive import LeakError, LeakWarning, Report, check_leaks, find_leaks
from whyalive.report import CycleReport


@needs_numpy
def test_seed_pattern_found_with_bytes_names_and_cut() -> None:
    """The recursive closure is found, holding 4 x 16 KiB, named by the user's variables."""

    def step() -> None:
        stage_backward([heavy(16, 256) for _ in range(4)])

    report = find_leaks(step)
    assert len(report.cycles) == 1
    cycle = report.cycles[0]
    assert cycle.pattern == "recursive-closure"
    assert report.total_bytes == 4 * 16 * 256 * 4
    assert "extract_tensors_with_grads" in cycle.summary
    assert "stage_output_tensors" in cycle.summary
    assert "4 arrays float32[16, 256], 64.0 KiB" in cycle.summary
    assert cycle.cut is not None
    assert (
        cycle.cut.description
        == "the closure variable `extract_tensors_with_grads` in `stage_backward`"
    )
    assert [e.name for e in cycle.cut.edges] == ["cell_contents"]
    path_names = [e.name for e in cycle.holder_paths[0].edges]
    assert path_names[0].endswith("stage_output_tensors")


@needs_numpy
def test_heavy_objects_shared_by_cycles_are_counted_once() -> None:
    """Three cycles that share 14 arrays keep 14 arrays alive, not 42; text, JSON, HTML agree."""
    report = find_leaks(shared_parameters)
    assert sorted(c.pattern for c in report.cycles) == [
        "bound-method-on-self",
        "recursive-closure",
        "self-containing-container",
    ]
    assert all(c.heavy_count == 14 for c in report.cycles)
    said = counts_said(report)
    assert (said.cycles, said.heavy, said.size) == (3, 14, "56.0 KiB")


@needs_numpy
def test_the_json_counts_the_headlines_cycles_beside_every_cycle_found() -> None:
    """Light cycles and one under min_bytes are in the JSON's cycle_count; its
    reported_cycle_count is the headline's (text, JSON and HTML agree on it)."""
    import numpy

    def leaks() -> None:
        for _ in range(3):
            light: list[object] = []
            light.append(light)
        small: list[object] = [numpy.zeros(16)]
        small.append(small)
        for _ in range(2):
            big: list[object] = [numpy.zeros(8192)]
            big.append(big)

    with check_leaks(on_leak="ignore", min_bytes="32 KiB") as check:
        leaks()
    assert check.report is not None
    said = counts_said(check.report)
    assert (said.cycles, said.heavy, said.size) == (2, 2, "128.0 KiB")
    data = check.report.to_dict()
    assert data["reported_cycle_count"] == 2
    assert data["cycle_count"] == 6
    assert data["light_cycle_count"] == 3


@pytest.mark.parametrize("size", [4096, "4096", "4 KiB", "4KB", "0.004 MB", "4k"])
def test_min_bytes_takes_sizes_with_units(size: object) -> None:
    """min_bytes=4096, "4 KiB", "4KB" (1024-based, as pytest-memray reads them) are one size."""
    check = check_leaks(min_bytes=size)  # type: ignore[arg-type]
    assert check.min_bytes == (4096 if size != "0.004 MB" else round(0.004 * 2**20))


@pytest.mark.parametrize("size", [-1, "-1", "1 XB", "many", True, 1.5])
def test_a_bad_min_bytes_is_one_usage_line(size: object) -> None:
    """A size that is not one is a UsageError of one line naming min_bytes and the forms."""
    with pytest.raises(whyalive.errors.UsageError) as raised:
        check_leaks(min_bytes=size)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("min_bytes must be a size such as 1048576, 1MB or 1.5 MiB")


class Marker:
    """Instances are GC-tracked, so gc.get_objects() finds any that survive."""


def test_reported_objects_are_freed_after_the_check() -> None:
    """Nothing the check captured survives it: no marker object is alive afterwards."""

    def leak() -> None:
        holder: list[object] = [Marker(), heavy(1000)]
        holder.append(holder)

    with check_leaks(on_leak="ignore") as check:
        leak()
    assert check.report is not None
    assert check.report.found
    assert not [o for o in gc.get_objects() if type(o) is Marker]


@needs_numpy
def test_release_frees_heavy_objects_weakref_after_capture() -> None:
    """Weakrefs taken after capture (the capture clears older ones) die on release."""
    from whyalive.capture import GarbageWatch
    from whyalive.report.pipeline import analyze

    watch = GarbageWatch()
    watch.begin()
    try:
        stage_backward([heavy(16, 256) for _ in range(4)])
        captured = watch.end()
        report = analyze(captured.objects)
        lists = [o for o in captured.objects if type(o) is list and len(o) == 4]
        refs = [weakref.ref(a) for lst in lists for a in lst]
        # By name: on 3.14 the annotated function also holds its lazy __annotate__ function.
        recursive = [
            o
            for o in captured.objects
            if getattr(o, "__name__", None) == "extract_tensors_with_grads"
        ]
        refs += [weakref.ref(o) for o in recursive]
        del recursive
        del lists
        assert report.total_bytes == 4 * 16 * 256 * 4
        assert len(refs) == 5
        captured.release()
        assert all(r() is None for r in refs), "released garbage is still alive"
    finally:
        watch.finish()


def test_seed_pattern_fixed_reports_nothing() -> None:
    """With `del extract_tensors_with_grads` the same code leaves nothing to report."""
    report = find_leaks(lambda: stage_backward_fixed([heavy(16, 256)]))
    assert not report.found
    assert report.total_bytes == 0


def test_bound_method_on_own_instance() -> None:
    """`self.callback = self.on_step` is named, with the attribute path to the tensor."""
    report = find_leaks(Trainer, cycle=True)
    (cycle,) = report.cycles
    assert cycle.pattern == "bound-method-on-self"
    assert "`self.callback`" in cycle.summary
    assert [e.name for e in cycle.holder_paths[0].edges] == [".activations"]
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == [".callback"]
    assert not find_leaks(Trainer, cycle=False).found


def keep_exception(*, cycle: bool) -> None:
    activations = heavy(2048)
    try:
        raise ValueError("boom")
    except ValueError as error:
        if cycle:
            kept = error  # noqa: F841 - the frame now holds its own exception
    del activations


def keep_exception_with_tensor(*, cycle: bool) -> None:
    activations = heavy(2048)  # noqa: F841 - held by the frame
    try:
        raise ValueError("boom")
    except ValueError as error:
        if cycle:
            kept = error  # noqa: F841


def test_exception_kept_with_traceback() -> None:
    """A local holding the caught exception ties the frame (and its tensor) into a cycle."""
    report = find_leaks(keep_exception_with_tensor, cycle=True)
    (cycle,) = report.cycles
    assert cycle.pattern == "exception-traceback"
    assert report.total_bytes == heavy_bytes(2048)
    (local,) = [e.name for e in cycle.holder_paths[0].edges if e.kind == "local"]
    # `error` is unbound after its except block; gc cannot tell which slot is empty.
    assert local in ("local activations", "local (one of activations, error)")
    assert cycle.cut is not None
    ((cut_kind, cut_name),) = [(e.kind, e.name) for e in cycle.cut.edges]
    assert cut_kind == "local"
    assert "kept" in cut_name
    assert not find_leaks(keep_exception_with_tensor, cycle=False).found


def dict_with_itself(*, cycle: bool) -> None:
    state = {"intermediates": [heavy(512)]}
    if cycle:
        state["self"] = state


def test_dict_containing_itself() -> None:
    """A dict that holds itself is found, with the key that leads to the tensor."""
    report = find_leaks(dict_with_itself, cycle=True)
    (cycle,) = report.cycles
    assert cycle.pattern == "self-containing-container"
    assert [e.name for e in cycle.holder_paths[0].edges] == ["['intermediates']", "[0]"]
    assert not find_leaks(dict_with_itself, cycle=False).found


class TreeNode:
    def __init__(self, parent: TreeNode | None = None) -> None:
        self.parent = parent
        self.children: list[TreeNode] = []
        self.weights = heavy(256)
        if parent is not None:
            parent.children.append(self)


def parent_and_child(*, cycle: bool) -> None:
    root = TreeNode()
    child = TreeNode(root if cycle else None)
    del root, child


def test_parent_child_back_reference() -> None:
    """The child's `.parent` is named as the back reference to cut."""
    report = find_leaks(parent_and_child, cycle=True)
    (cycle,) = report.cycles
    assert cycle.pattern == "parent-child"
    assert report.total_bytes == 2 * heavy_bytes(256)
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == [".parent"]
    assert not find_leaks(parent_and_child, cycle=False).found


def buffer_cycle() -> None:
    """A dict that contains itself and a 2 MiB buffer: the leak the check tests below make."""
    holder: dict[str, object] = {"buffer": bytearray(2 << 20)}
    holder["me"] = holder


@needs_numpy
def test_numpy_array_in_cycle_is_found() -> None:
    """NumPy arrays are not GC-tracked, yet the cycle holding one is found with its bytes."""

    def numpy_cycle() -> None:
        holder = {"array": numpy.ones((64, 64))}
        holder["me"] = holder

    report = find_leaks(numpy_cycle)
    assert report.total_bytes == 64 * 64 * 8
    assert report.heavy_objects[0].kind == "numpy.ndarray"


@needs_numpy
def test_numpy_views_count_base_once() -> None:
    """An array and its view held by one cycle count the base's bytes once."""

    def views() -> None:
        base = numpy.zeros(1000)
        holder = [base, base[10:], base[:5]]
        holder.append(holder)

    report = find_leaks(views)
    assert report.total_bytes == 8000


@needs_numpy
def test_numpy_in_untracked_tuple_is_found() -> None:
    """An untracked tuple of arrays between the cycle and the array does not hide it."""

    def hidden() -> None:
        pair = (numpy.zeros(100), numpy.zeros(100))
        gc.collect(0)  # lets the GC untrack the tuple of untracked arrays
        holder = [pair]
        holder.append(holder)

    with check_leaks(on_leak="ignore") as check:
        hidden()
    assert check.report is not None
    assert check.report.total_bytes == 1600


def test_big_buffers_are_heavy_small_ones_are_not() -> None:
    """bytes/bytearray above 1 MiB are heavy objects; small ones are not."""

    def buffers(size: int) -> None:
        holder = [bytearray(size)]
        holder.append(holder)

    assert find_leaks(buffers, 2 << 20).total_bytes == 2 << 20
    assert not find_leaks(buffers, 1000).found


@pytest.mark.whyalive_skip  # leaks on purpose, then collects it itself
def test_garbage_from_before_the_block_is_not_blamed() -> None:
    """Cyclic garbage made before `with check_leaks()` is not reported by it."""
    buffer_cycle()
    with check_leaks() as check:
        pass
    assert check.report is not None
    assert not check.report.found
    gc.collect()


def test_automatic_collection_inside_block_is_still_caught() -> None:
    """A collection that runs inside the block does not hide the block's cycles."""
    with check_leaks(on_leak="ignore") as check:
        buffer_cycle()
        gc.collect()
    assert check.report is not None
    assert check.report.found


def _one_leak_in_every_collection(times: int) -> tuple[Report, CycleReport]:
    """A check around ``times`` collections, each after one more buffer cycle: its report
    and the one cycle entry they make, with every occurrence and its bytes counted."""
    with check_leaks(on_leak="ignore") as check:
        for _ in range(times):
            buffer_cycle()
            gc.collect()
    report = check.report
    assert report is not None
    (cycle,) = report.cycles
    assert cycle.occurrences == times
    assert cycle.total_bytes == report.total_bytes == times * (2 << 20)
    return report, cycle


@needs_c  # a collection's garbage is analysed where it runs only where the C core frees it
def test_many_collections_of_one_leak_merge_into_one_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A leak repeated across 30 collections inside the block is one cycle entry with 30
    occurrences and their bytes; only its first sighting is renumbered into the merged
    report (a check of a long loop merges one report per collection)."""
    from whyalive.report import merge

    renumbered: list[str] = []
    shift_cycle = merge.shift_cycle

    def counting(cycle: object, shift: int) -> object:
        renumbered.append(cycle.signature)  # type: ignore[attr-defined]
        return shift_cycle(cycle, shift)  # type: ignore[arg-type]

    monkeypatch.setattr(merge, "shift_cycle", counting)
    report, cycle = _one_leak_in_every_collection(30)
    assert renumbered == [cycle.signature]
    assert all(0 <= n < len(report.nodes) for n in cycle.members)
    assert len({n.node_id for n in report.nodes}) == len(report.nodes)
    assert cycle.members
    assert cycle.cut is not None
    assert "contains itself" in cycle.title


def test_a_leak_repeated_in_many_collections_gets_its_words_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each collection inside the block is analysed where it runs; a signature already
    written is only counted there: 40 collections of one leak write one full report."""
    from whyalive.report import pipeline

    written: list[int] = []
    build_report = pipeline.build_report

    def counting(findings: Any, options: Any) -> Report:
        written.append(len(findings.kept))
        return build_report(findings, options)

    monkeypatch.setattr(pipeline, "build_report", counting)
    report, cycle = _one_leak_in_every_collection(40)
    assert report.heavy_count == 40
    assert cycle.members
    assert cycle.fix
    assert [kept for kept in written if kept] == [1]


def test_merging_keeps_the_first_report_with_words_of_a_signature() -> None:
    """A report that only counts a signature (its words were written elsewhere) adds its
    counts to the one with words, whichever comes first."""
    import dataclasses

    from whyalive.report.merge import merge_reports

    worded = find_leaks(buffer_cycle)
    (cycle,) = worded.cycles
    counted = dataclasses.replace(
        worded,
        nodes=(),
        heavy_objects=(),
        cycles=(dataclasses.replace(cycle, members=(), edges=(), title="", fix="", cut=None),),
    )
    for reports in ([counted, worded], [worded, counted], [counted, counted, worded]):
        (merged,) = merge_reports(reports).cycles
        assert merged.members
        assert merged.title == cycle.title
        assert merged.fix == cycle.fix
        assert merged.occurrences == len(reports)
        assert merged.total_bytes == len(reports) * cycle.total_bytes
        assert all(0 <= n < len(merge_reports(reports).nodes) for n in merged.members)


def test_overlapping_blocks_each_get_the_words_of_their_leak() -> None:
    """Two checks that overlap without nesting: the first to end claims every collection
    since it began, the other's words with them; the other's later collections write the
    words again, so neither report has a leak without its explanation."""
    first, second = check_leaks(on_leak="ignore"), check_leaks(on_leak="ignore")
    first.__enter__()
    second.__enter__()
    for _ in range(2):
        buffer_cycle()
        gc.collect()  # analysed by the newest check: its words, then only counts
    first.__exit__(None, None, None)  # takes both collections, words and all
    for _ in range(2):
        buffer_cycle()
        gc.collect()
    second.__exit__(None, None, None)
    for check in (first, second):
        assert check.report is not None
        (cycle,) = check.report.cycles
        assert cycle.occurrences == 2
        assert cycle.members
        assert cycle.fix
        assert "contains itself" in check.report.render("text")


@needs_c  # a collection's garbage is analysed where it runs only where the C core frees it
def test_a_block_opened_later_gets_the_words_of_a_leak_seen_before_it() -> None:
    """The innermost check analyses the collections of every open block; a block opened
    after a leak's words were written receives its next reports with the words again."""
    from whyalive.capture import GarbageWatch

    with check_leaks(on_leak="ignore") as outer:
        buffer_cycle()
        gc.collect()  # the outer check writes this signature's words
        inner = GarbageWatch()  # no analysis of its own: the outer check's serves it
        inner.begin()
        try:
            buffer_cycle()
            gc.collect()
            captured = inner.end()
            records = [r for r in captured.records if isinstance(r, Report)]
            captured.release()
        finally:
            inner.abandon()
    ((cycle,),) = [r.cycles for r in records if r.cycles]
    assert cycle.members
    assert cycle.fix
    assert cycle.occurrences == 1
    assert outer.report is not None  # the collection the inner block claimed is not its
    (first,) = outer.report.cycles
    assert first.occurrences == 1
    assert first.members


def test_raise_gives_leak_error_with_report_and_explanation() -> None:
    """on_leak='raise' raises LeakError (an AssertionError) carrying the report."""
    with pytest.raises(LeakError) as info, check_leaks():
        buffer_cycle()
    assert isinstance(info.value, AssertionError)
    assert info.value.report.found
    assert "self-containing-container" in str(info.value)


def test_warn_points_at_the_users_with_line() -> None:
    """on_leak='warn' emits LeakWarning located at this file's `with` line, not contextlib."""
    with pytest.warns(LeakWarning) as record:  # noqa: SIM117 - own line for the check
        with check_leaks(on_leak="warn"):  # the line the warning must point at
            buffer_cycle()
    (warning,) = record
    assert warning.filename == __file__
    with open(__file__, encoding="utf-8") as source:
        line = source.read().splitlines()[warning.lineno - 1]
    assert "the line the warning must point at" in line


def test_decorator_checks_every_call() -> None:
    """@check_leaks() raises on a leaking call and passes a clean one."""

    @check_leaks()
    def leaky(make: bool) -> str:
        if make:
            buffer_cycle()
        return "done"

    assert leaky(False) == "done"
    with pytest.raises(LeakError):
        leaky(True)


def test_assert_no_leaks_returns_result_or_raises() -> None:
    """assert_no_leaks passes the result through and raises on a leak."""
    assert whyalive.assert_no_leaks(lambda: 42) == 42
    with pytest.raises(LeakError):
        whyalive.assert_no_leaks(buffer_cycle)


def test_min_bytes_and_allow_filter_reports() -> None:
    """min_bytes hides small cycles; allow= hides a known signature or pattern."""
    report = find_leaks(buffer_cycle)
    signature = report.cycles[0].signature
    with check_leaks(min_bytes=1 << 30) as check:
        buffer_cycle()
    assert check.report is not None
    assert not check.report.found
    with check_leaks(allow=[signature]) as check:
        buffer_cycle()
    assert check.report is not None
    assert not check.report.found
    with check_leaks(allow=["self-containing-container"]):
        buffer_cycle()


def test_gc_settings_and_user_garbage_are_restored() -> None:
    """Disabled GC, custom thresholds, debug flags and user gc.garbage entries survive."""
    sentinel = object()
    gc.garbage.append(sentinel)
    old_threshold = gc.get_threshold()
    gc.disable()
    gc.set_threshold(1234, 5, 6)
    thresholds = gc.get_threshold()  # (1234, 5, 0) on 3.14.0-3.14.4: two thresholds
    gc.set_debug(gc.DEBUG_UNCOLLECTABLE)
    try:
        with check_leaks(on_leak="ignore") as check:
            buffer_cycle()
        assert check.report is not None
        assert check.report.found
        assert any("disabled" in note for note in check.report.notes)
        assert gc.get_debug() == gc.DEBUG_UNCOLLECTABLE
        assert not gc.isenabled()
        assert gc.get_threshold() == thresholds
        assert gc.garbage[-1] is sentinel
    finally:
        gc.set_debug(0)
        gc.set_threshold(*old_threshold)
        gc.enable()
        gc.garbage.remove(sentinel)


@pytest.mark.whyalive_skip  # freezes inside the plugin's frozen baseline
def test_user_frozen_objects_use_the_collect_baseline() -> None:
    """When the user froze objects, the check still works and leaves them frozen."""
    marker: list[object] = []
    gc.freeze()
    try:
        with check_leaks(on_leak="ignore") as check:
            buffer_cycle()
        assert check.report is not None
        assert check.report.found
        # Not an exact freeze count: other threads (xdist's) free frozen objects meanwhile.
        # gc.get_objects() never lists the permanent generation.
        assert not any(obj is marker for obj in gc.get_objects())
        assert any("frozen" in note for note in check.report.notes)
    finally:
        gc.unfreeze()
        gc.collect()  # 3.12 keeps immortal objects in the permanent generation: put them back


@pytest.mark.whyalive_skip  # a user's SAVEALL looks like the plugin's
def test_user_saveall_keeps_garbage_in_their_gc_garbage() -> None:
    """A user who runs with DEBUG_SAVEALL still gets the garbage in gc.garbage."""
    start = len(gc.garbage)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with check_leaks(on_leak="ignore") as check:
            buffer_cycle()
        assert check.report is not None
        assert check.report.found
        assert len(gc.garbage) > start
    finally:
        gc.set_debug(0)
        del gc.garbage[start:]
        gc.collect()


class Hostile:
    """Every dunder a careless tool might call raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __getattr__(self, name: str) -> object:
        raise RuntimeError("getattr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")


resurrected: list[object] = []


class Resurrector:
    def __del__(self) -> None:
        resurrected.append(self)


@needs_numpy
def test_hostile_objects_never_crash_the_analysis() -> None:
    """Raising dunders, a dead weakref.proxy and a resurrecting __del__ are survived."""

    class Target:
        pass

    def hostile_cycle() -> None:
        target = Target()
        proxy = weakref.proxy(target)
        del target
        hostile = Hostile()
        holder = {"h": hostile, "proxy": proxy, "t": heavy(100), "r": Resurrector()}
        object.__setattr__(hostile, "back", holder)

    report = find_leaks(hostile_cycle)
    assert report.found
    assert report.total_bytes == 400
    assert str(report)
    resurrected.clear()
    gc.collect()


@needs_numpy
def test_report_round_trips_through_json() -> None:
    """Report.from_dict(report.to_dict()) is equal, and JSON is deterministic."""
    report = find_leaks(lambda: stage_backward([heavy(8)]))
    again = whyalive.Report.from_dict(report.to_dict())
    assert again == report
    assert again.to_json() == report.to_json()


def test_report_from_bad_data_is_one_clear_error() -> None:
    """A wrong schema version is a ReportFormatError naming the problem."""
    from whyalive.errors import ReportFormatError

    with pytest.raises(ReportFormatError, match="schema_version"):
        whyalive.Report.from_dict({"schema_version": 99})
    with pytest.raises(ReportFormatError, match="not a valid"):
        whyalive.Report.from_dict({"schema_version": 1, "nodes": [{"bogus": 1}]})


@needs_subprocess
def test_core_imports_no_third_party_module() -> None:
    """Importing whyalive in a fresh interpreter imports neither torch nor numpy."""
    import subprocess

    code = "import sys, whyalive; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@needs_numpy
def test_array_over_a_bytearray_counts_once() -> None:
    """A NumPy array viewing a big bytearray in the same cycle shares its memory: counted once."""

    def leak() -> None:
        buffer = bytearray(2 << 20)
        holder: list[object] = [buffer, numpy.frombuffer(buffer, dtype=numpy.uint8)]
        holder.append(holder)

    report = find_leaks(leak)
    assert report.total_bytes == 2 << 20
    assert sum(h.counted for h in report.heavy_objects) == 1


def _views_of_one_bytearray(*kinds: str) -> Callable[[], None]:
    def leak() -> None:
        buffer = bytearray(4 << 20)
        made = {
            "bytearray": lambda: buffer,
            "memoryview": lambda: memoryview(buffer),
            "small memoryview": lambda: memoryview(buffer)[:1000],
            "frombuffer": lambda: numpy.frombuffer(buffer, dtype=numpy.uint8),  # type: ignore[union-attr]
        }
        holder: list[object] = [made[kind]() for kind in kinds]
        holder.append(holder)

    return leak


@needs_numpy
@pytest.mark.parametrize(
    "kinds",
    [
        ("memoryview", "frombuffer"),
        ("bytearray", "memoryview", "frombuffer"),
        ("small memoryview",),
        ("small memoryview", "frombuffer"),
    ],
)
def test_one_memory_range_counts_once_across_kinds(kinds: tuple[str, ...]) -> None:
    """A memoryview, an np.frombuffer array and the bytearray they view are one 4 MiB range;
    a view keeps its whole buffer alive, so a 1000-byte slice of it holds 4 MiB too."""
    report = find_leaks(_views_of_one_bytearray(*kinds))
    assert report.total_bytes == 4 << 20
    assert sum(h.counted for h in report.heavy_objects) == 1


@needs_numpy
def test_own_collection_inside_check_frees_and_is_still_reported() -> None:
    """gc.collect() in a block frees what it would free without whyalive; both leaks are found."""
    from whyalive.report.schema import validate_report

    payload = object()
    before = sys.getrefcount(payload)

    def stage() -> None:
        activations = [numpy.zeros(512), payload]

        def keep(value: object) -> object:
            activations.append(value)
            return keep

        keep(1)

    check = check_leaks(on_leak="ignore")
    with check:
        stage()
        gc.collect()
        assert sys.getrefcount(payload) == before
        assert gc.garbage == []
        holder: list[object] = [numpy.zeros(64)]
        holder.append(holder)
        del holder
    report = check.report
    assert report is not None
    assert sorted(c.pattern for c in report.cycles) == [
        "recursive-closure",
        "self-containing-container",
    ]
    assert report.total_bytes == 4096 + 512
    for cycle in report.cycles:
        assert all(report.node(n).heavy for n in cycle.heavy)
    validate_report(json.loads(report.to_json()))
    assert "recursive nested function" in report.render("text")


def test_a_clean_report_prints_its_notes() -> None:
    """Why a report may be clean (automatic collection off, a freeze, other threads) is said
    in its text too, not only when something was found."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        with check_leaks() as check:
            pass
    finally:
        if enabled:
            gc.enable()
    assert check.report is not None
    assert not check.report.found
    assert "Note: Automatic garbage collection was disabled during the check." in str(check.report)
