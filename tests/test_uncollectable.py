"""Uncollectable leaks: loops through the autograd graph (C++), found by a check at defaults.

Every leaky scenario of ``scenarios.autograd_loops`` makes the check raise and name its
pattern with at least the payload's bytes; every fixed twin passes; ``explain`` of the
leaked tensor prints the same loop and fix. The leaks these tests make cannot be freed
(that is what they are), so the suite's own ``--whyalive`` check is off for this module.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scenarios import autograd_loops as loops
from test_diagnose import cut_names, only_cycle
from whyalive import LeakError, check_leaks, explain, find_leaks
from whyalive.capture.gcstate import OWNER
from whyalive.kinds.autograd_graph import AutogradReader
from whyalive.report import Report
from whyalive.report.schema import validate_report
from whyalive.words import holding_words, size_to_words

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.whyalive_skip

LEAKY = [(pattern, fn) for pattern, fns in loops.LEAKY.items() for fn in fns]
LEAKY_BY_FN = [(fn, pattern) for pattern, fn in LEAKY]


def _name(value: object) -> str:
    return getattr(value, "__name__", str(value))


def reads_right(report: Report) -> None:
    """Each loop is a real closed loop with a C++ hop, and its fix's code spans parse."""
    for cycle in report.uncollectable:
        real = {(e.source, e.target, e.name) for e in cycle.edges}
        assert all((e.source, e.target, e.name) in real for e in cycle.loop)
        loop = cycle.loop
        assert all(a.target == b.source for a, b in zip(loop, (*loop[1:], loop[0]), strict=True))
        assert any(e.kind == "autograd" for e in loop)
        for span in re.findall(r"`([^`]+)`", cycle.fix):
            ast.parse(span.strip())


@pytest.mark.parametrize(("pattern", "fn"), LEAKY, ids=lambda v: _name(v))
def test_every_leaky_scenario_fails_the_check_naming_its_pattern(
    pattern: str, fn: Callable[[], None]
) -> None:
    with pytest.raises(LeakError) as raised, check_leaks():
        fn()
    report = raised.value.report
    found = [*report.cycles, *report.uncollectable]
    assert [c.pattern for c in found] == [pattern]
    assert found[0].total_bytes >= loops.PAYLOAD_BYTES
    assert f"[{pattern}]" in str(raised.value)
    reads_right(report)
    validate_report(report.to_dict())
    assert Report.from_dict(report.to_dict()) == report


@pytest.mark.parametrize("fn", list(loops.FIXED.values()), ids=_name)
def test_every_fixed_scenario_passes_the_check(fn: Callable[[], None]) -> None:
    with check_leaks():
        fn()


def test_loops_the_collector_never_frees_are_in_their_own_section() -> None:
    """The tensor hook: never freed by two collections; the report says where, with bytes."""
    report = find_leaks(loops.tensor_hook)
    assert not report.cycles
    [loop] = report.uncollectable
    # `y`, the leaf `x` its graph holds, and `x.grad` (held in C++ by `x`): all three stay.
    assert loop.bytes_by_device == {"cpu": 3 * loops.PAYLOAD_BYTES}
    assert sum(h.nbytes for h in loop.holds) == loop.total_bytes  # each tensor at one place
    names = [e.name for e in loop.loop]
    assert ".grad_fn" in names
    assert "hooks of the tensor" in names
    assert loop.cut is not None
    assert loop.cut.proven
    # The edit: the hook holds `y` weakly (proven and applied by tests/test_fix_proof.py).
    assert loop.fix_edit is not None
    assert loop.fix_edit.old.strip() == "y.register_hook(lambda grad: grad * y.sum())"
    assert "y=weakref.proxy(y)" in loop.fix_edit.new
    assert loop.lint_rule == "WAL401"
    text = report.render("text")
    assert "Uncollectable: loops through the autograd graph (C++)" in text
    assert "--.grad_fn (C++)--> ExpBackward0" in text
    assert text.startswith("whyalive: 1 loop through the autograd graph (C++), never freed")
    html = report.render("html")
    assert "Uncollectable loop 1: tensor hook that refers back to its tensor" in html


def test_grad_cam_is_cut_and_located_where_its_fix_edits() -> None:
    """The cut is what the fix changes (the stored output, the hook registrations), not the
    model the object also holds; the loop is placed at the user's line, not torch's."""
    import inspect

    report = find_leaks(loops.grad_cam)
    [loop] = report.uncollectable
    assert loop.cut is not None
    assert loop.cut.proven
    names = [e.name for e in loop.cut.edges]
    assert names[0] == ".activations"
    assert len(names) == 3  # and the two hook registrations, each an entry of a hook dict
    assert ".model" not in names
    description = loop.cut.description
    assert "`self.activations`" in description
    assert "register_forward_hook" in description
    assert "register_full_backward_hook" in description
    assert "`self.activations`" in loop.fix
    assert "register_forward_hook" in loop.fix
    assert sorted(line.split("  ", 1)[1] for line in loop.cut.source_lines) == [
        "layer.register_forward_hook(self.save_activation)",
        "layer.register_full_backward_hook(self.save_gradient)",
        "self.activations = output",
    ]
    lines, first = inspect.getsourcelines(loops.GradCam)
    stored = first + next(n for n, t in enumerate(lines) if "self.activations = output" in t)
    heading = report.render("text").split("Uncollectable loop 1:", 1)[1].split("Cut:")[0]
    assert f"at autograd_loops.py:{stored}" in " ".join(heading.split())
    assert loop.loop[0].source == next(
        n.node_id for n in report.nodes if n.label.startswith("bound method GradCam.")
    )


def test_bytes_count_what_the_loop_keeps_and_not_what_lives_anyway() -> None:
    """Every tensor left alive is counted (leaves' gradients included), once; a live model's
    parameters and their gradients are not, although the leaked graph reaches them."""
    model = torch.nn.Linear(256, 256)
    weight_grads: list[Any] = []

    def leak() -> None:
        x = torch.randn(256, 256, requires_grad=True)
        y = model(x).exp()
        y.register_hook(lambda grad: grad * y.sum())
        y.sum().backward()
        weight_grads.append(model.weight.grad)

    gc.collect()
    before = {id(o) for o in gc.get_objects() if issubclass(type(o), torch.Tensor)}
    report = find_leaks(leak)
    gc.collect()
    left = [
        o for o in gc.get_objects() if issubclass(type(o), torch.Tensor) and id(o) not in before
    ]
    kept = {o.untyped_storage().data_ptr(): o.untyped_storage().nbytes() for o in left}
    for live in (model.weight, model.bias, *weight_grads, model.bias.grad):
        kept.pop(live.untyped_storage().data_ptr(), None)
    [loop] = report.uncollectable
    # y, the leaf x (saved by the linear layer) and x.grad: 256 KiB each.
    assert sum(kept.values()) == 3 * 256 * 256 * 4
    assert loop.total_bytes == sum(kept.values())


def test_a_report_of_cycles_and_loops_totals_both() -> None:
    """A block that leaves a reference cycle and a loop through C++: the JSON's totals and
    the one headline cover both, each counted with what its autograd graph holds."""

    def both() -> None:
        loops.tensor_hook()
        box: list[Any] = [torch.ones(loops.PAYLOAD)]
        box.append(box)

    report = find_leaks(both)
    [cycle] = report.cycles
    [loop] = report.uncollectable
    data = report.to_dict()
    assert data["total_bytes"] == cycle.total_bytes + loop.total_bytes
    assert data["bytes_by_device"] == {"cpu": data["total_bytes"]}
    assert data["heavy_count"] == cycle.heavy_count + loop.heavy_count == 1 + 3
    headline = report.render("text").split(".\n", 1)[0].replace("\n  ", " ")
    assert headline.startswith(
        "whyalive: 1 reference cycle and 1 loop through the autograd graph (C++), never freed "
        "by the collector, keep 4 tensors alive"
    ), headline
    assert headline.endswith(f"{size_to_words(data['total_bytes'])} on cpu"), headline


def _survivors_nbytes(fn: Callable[[], None]) -> int:
    """Bytes of the tracked tensors ``fn`` leaves alive with the collector off, and of their
    gradients (the leaves' ``.grad``, held in C++): what a leak keeps, read without whyalive."""
    from scenarios import payload

    gc.collect()
    payload.reset()
    enabled = gc.isenabled()
    gc.disable()
    try:
        fn()
        alive = [ref() for ref in payload._made if ref() is not None]
        grads = [t.grad for t in alive if t.is_leaf and t.grad is not None]
        nbytes = sum(t.untyped_storage().nbytes() for t in (*alive, *grads))
        del alive, grads
    finally:
        if enabled:
            gc.enable()
        gc.collect()
        payload.reset()
    return nbytes


@pytest.mark.parametrize("fn", [loops.stage_prehook, loops.prehook_on_node], ids=_name)
def test_what_a_garbage_node_holds_in_cpp_is_counted(fn: Callable[[], None]) -> None:
    """A structure that keeps an autograd node keeps, through C++, what the node saved and
    the leaves its graph accumulates into, with their gradients: the collector lists none
    of them as garbage, yet frees them with the loop. They are counted (headline, cycle,
    JSON), each once, and the node is not counted as a tensor."""
    survivors = _survivors_nbytes(fn)
    report = find_leaks(fn)
    [cycle] = report.cycles
    assert cycle.total_bytes >= survivors > 0
    assert report.total_bytes == cycle.total_bytes
    held = [h for h in cycle.holds if "autograd node" in holding_words(h)]
    assert held, [holding_words(h) for h in cycle.holds]
    tensors = cycle.heavy_count
    assert tensors == sum(h.autograd_count for h in cycle.holds) + sum(
        h.count for h in cycle.holds if h not in held
    )
    assert report.heavy_count == tensors
    assert f"keeps {tensors} tensors alive" in report.render("text").replace("\n  ", " ")
    if fn is loops.stage_prehook:  # the prehook is a partial of the stage's bound method
        assert "func" in [edge.name for edge in cycle.loop]


@pytest.mark.parametrize("fn", [loops.stage_prehook, loops.stage_prehook_logged], ids=_name)
def test_a_stage_keeping_its_nodes_is_cut_at_the_store_in_its_own_method(
    fn: Callable[[], None],
) -> None:
    """The stage's ``forward`` (a method of an object of the loop, not a function the loop
    runs) stores the node by a computed key, ``self.pending[microbatch] = node``: that line
    is quoted, not another store by the same key into another dict (``self.shapes``), and
    the fix names the stage's own dict."""
    report = find_leaks(fn)
    [cycle] = report.cycles
    assert cycle.cut is not None
    assert cycle.cut.proven
    assert cycle.cut.source_line is not None, cycle.cut.source_note
    place, _, text = cycle.cut.source_line.partition("  ")
    assert text == "self.pending[microbatch] = node"
    lines = Path(loops.__file__).read_text(encoding="utf-8").splitlines()
    assert lines[int(place.rpartition(":")[2]) - 1].strip() == text
    assert "`self.pending[1]`" in cycle.fix
    assert "`self.pending.clear()`" in cycle.fix
    assert "through `self`" in cycle.explanation


def test_a_live_models_parameters_held_by_a_garbage_node_are_not_counted() -> None:
    """A garbage node whose graph reaches a live model's parameters (and their gradients)
    counts only what dies with it: the input it saved."""
    model = torch.nn.Linear(256, 256)

    def leak() -> None:
        out = model(torch.randn(256, 256))
        pending = {"node": out.grad_fn}
        out.grad_fn.register_prehook(lambda grads: pending.clear())
        model(torch.randn(256, 256)).sum().backward()  # the parameters get gradients

    report = find_leaks(leak)
    [cycle] = report.cycles
    # The input `addmm` saved (256 KiB); not the weight (256 KiB), its gradient, the bias.
    assert cycle.total_bytes == 256 * 256 * 4
    assert cycle.heavy_count == 1


def _leaked_tensors(fn: Callable[[], None], *, collect: bool = True) -> list[weakref.ref[Any]]:
    """The tensors ``fn`` leaves alive (the baseline frozen around it, as a check does),
    weakly: a strong reference here would be a root that explains them. Without
    ``collect``, the collector stays off: its garbage is still there to explain."""
    gc.collect()
    holder = object()
    OWNER.freeze.hold(holder)
    enabled = gc.isenabled()
    gc.disable()
    try:
        fn()
        if collect:
            gc.collect()
        return [weakref.ref(o) for o in gc.get_objects() if type(o) is torch.Tensor]
    finally:
        if enabled:
            gc.enable()
        OWNER.freeze.drop(holder)


@pytest.mark.parametrize(("pattern", "fn"), LEAKY, ids=lambda v: _name(v))
def test_explain_of_a_leaked_tensor_gives_the_same_loop_and_fix(
    pattern: str, fn: Callable[[], None]
) -> None:
    checked = find_leaks(fn)
    [by_check] = [*checked.cycles, *checked.uncollectable]
    # A loop the collector frees is explained while it is garbage, before a collection.
    freed = not checked.uncollectable
    explained: list[Report] = []
    for ref in _leaked_tensors(fn, collect=not freed):  # one by one until one shows its loop
        explained.append(explain(ref()).report)
        if explained[-1].uncollectable or explained[-1].cycles:
            break
    found = explained[-1].cycles if freed else explained[-1].uncollectable
    assert found, [r.alive[0].note for r in explained]
    by_explain = found[0]
    assert by_explain.pattern == by_check.pattern == pattern
    assert by_explain.fix == by_check.fix
    assert by_explain.cut is not None
    assert by_check.cut is not None
    assert by_explain.cut.source_line == by_check.cut.source_line
    # Hook dict keys are handle ids, new for each registration: compared as kinds.
    hops = [(e.kind, re.sub(r"\[\d+\]", "[i]", e.name)) for e in by_explain.loop]
    assert hops == [(e.kind, re.sub(r"\[\d+\]", "[i]", e.name)) for e in by_check.loop]
    note = explained[-1].alive[0].note or ""
    if freed:  # a true note: the next collection frees it
        assert "the next collection frees" in note
        assert "never" not in explained[-1].render("text")
    else:
        assert "loop through the autograd graph" in note


def test_what_a_root_reaches_is_not_a_leak() -> None:
    """The same loop kept in a module-level dict (frozen), or by a running frame: reachable."""
    cache = sys.modules[__name__].__dict__.setdefault("_CACHE", {})

    def keep() -> None:
        x = torch.randn(1000, requires_grad=True)
        y = x.exp()
        y.register_hook(lambda grad: grad * y.sum())
        cache["y"] = y

    assert not find_leaks(keep).found
    with check_leaks():
        x = torch.randn(1000, requires_grad=True)
        y = x.exp()
        y.register_hook(lambda grad: grad * y.sum())
    assert y is not None  # a local of this running frame: reachable


def test_allow_and_min_bytes_apply() -> None:
    report = find_leaks(loops.node_metadata)
    [loop] = report.uncollectable
    with check_leaks(allow=[loop.signature]) as allowed:
        loops.node_metadata()
    assert allowed.report is not None
    assert not allowed.report.found
    with check_leaks(allow=["node-metadata"]):
        loops.node_metadata()
    with check_leaks(min_bytes=loop.total_bytes + 1):
        loops.node_metadata()


def test_census_says_what_holds_a_survivor_truly() -> None:
    """No "waiting for a collection" for what a collection never frees."""
    with check_leaks(on_leak="ignore", census=True) as check:
        loops.tensor_hook()
    report = check.report
    assert report is not None
    assert report.uncollectable
    notes = [a.note or "" for a in report.alive]
    assert not any("waiting for a collection" in note for note in notes)
    assert any("loop through the autograd graph" in note for note in notes)


def test_no_warning_from_reading_tensors() -> None:
    """No `.grad` of a non-leaf, nothing deprecated: the analysis is silent under -W error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _, fn in LEAKY:
            find_leaks(fn)
        explain(torch.randn(3, requires_grad=True).exp())


def test_the_tool_adds_no_reference_to_what_it_reports() -> None:
    holder: list[weakref.ref[Any]] = []

    def leak() -> None:
        x = torch.randn(1000, requires_grad=True)
        y = x.exp()
        y.register_hook(lambda grad: grad * y.sum())
        holder.append(weakref.ref(y))

    leak()
    gc.collect()
    plain = sys.getrefcount(holder[0]())
    holder.clear()
    with check_leaks(on_leak="ignore") as check:
        leak()
    assert check.report is not None
    assert check.report.uncollectable
    gc.collect()
    after = sys.getrefcount(holder[0]())  # outside the assert: its rewriting adds temporaries
    assert after == plain


def test_hook_dicts_are_read_without_changing_the_graph() -> None:
    """The registration spy refuses: no hook is added, torch's method comes back."""
    from torch.autograd.function import Function

    reader = AutogradReader(torch)
    x = torch.randn(4, requires_grad=True)
    y = x.relu()
    assert reader.hook_dicts([y.grad_fn]) == {}
    handle = y.grad_fn.register_prehook(lambda grads: None)
    [(key, held)] = reader.hook_dicts([y.grad_fn]).items()
    assert key == id(y.grad_fn)
    assert list(held) == ["prehooks"]
    assert len(held["prehooks"]) == 1
    assert "_register_hook" not in Function.__dict__
    handle.remove()
    y.sum().backward()
    assert x.grad is not None


def test_another_thread_registers_hooks_while_the_spy_reads() -> None:
    """The spy answers only its own thread: hooks registered meanwhile elsewhere work."""
    reader = AutogradReader(torch)
    stop = threading.Event()
    registered: list[object] = []

    def register() -> None:
        while not stop.is_set():
            node = torch.randn(2, requires_grad=True).relu().grad_fn
            registered.append(node.register_prehook(lambda grads: None))

    thread = threading.Thread(target=register)
    thread.start()
    try:
        nodes = [torch.randn(2, requires_grad=True).relu().grad_fn for _ in range(200)]
        for _ in range(20):
            reader.hook_dicts(nodes)
    finally:
        stop.set()
        thread.join()
    assert registered


def test_saved_tensors_are_read_without_an_error_after_backward() -> None:
    """`_raw_saved_*`: nothing to read once backward() freed them, and nothing raised."""
    reader = AutogradReader(torch)
    x = torch.randn(4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    out = (x * w).sum()
    node = out.grad_fn.next_functions[0][0]
    assert {id(t) for _, t in reader.saved(node)} == {id(x), id(w)}
    out.backward()
    assert reader.saved(node) == []


def test_the_walk_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import whyalive.kinds.autograd_graph as autograd_graph

    monkeypatch.setattr(autograd_graph, "MAX_NODES", 10)
    reader = AutogradReader(torch)
    t = torch.randn(2, requires_grad=True)
    for _ in range(50):
        t = t * 1.5
    assert len(list(reader.walk([t.grad_fn], {}))) == 10


@pytest.mark.parametrize("fn", [loops.tensor_hook, loops.grad_cam], ids=_name)
def test_monitor_probes_and_logs_each_signature_once(
    caplog: pytest.LogCaptureFixture, fn: Callable[[], None]
) -> None:
    import whyalive

    with (
        caplog.at_level("WARNING", logger="whyalive"),
        whyalive.monitor(probe_every=5, log_interval=3600) as mon,
    ):
        for _ in range(12):
            fn()
            mon.step()
    first = [r for r in caplog.records if "first seen" in r.getMessage()]
    assert len(first) == 1
    assert "uncollectable loop" in first[0].getMessage()
    assert mon.stats.probes == 2
    [loop] = mon.report().uncollectable
    assert loop.pattern == dict(LEAKY_BY_FN)[fn]
    assert loop.occurrences == 10  # what the last probe saw alive, not a sum over probes


def _register_other_hooks() -> None:
    """Hooks registered and removed elsewhere: every handle id from now on is new."""
    for _ in range(3):
        t = torch.randn(2, requires_grad=True).exp()
        t.register_hook(lambda grad: grad).remove()
        t.grad_fn.register_prehook(lambda grads: None).remove()
        layer = torch.nn.Linear(2, 2)
        layer.register_forward_hook(lambda *args: None).remove()
        layer.register_full_backward_hook(lambda *args: None).remove()


@pytest.mark.parametrize(("pattern", "fn"), LEAKY, ids=lambda v: _name(v))
def test_a_signature_does_not_depend_on_hook_handle_ids(
    pattern: str, fn: Callable[[], None]
) -> None:
    """Hook dicts are keyed by handle ids, which count up across the process: the same
    leak has the same signature whatever was registered before it, and `allow=` holds."""
    before = find_leaks(fn)
    [first] = [c.signature for c in (*before.cycles, *before.uncollectable)]
    said = [c.cut.description for c in (*before.cycles, *before.uncollectable) if c.cut]
    _register_other_hooks()
    report = find_leaks(fn)
    assert [c.signature for c in (*report.cycles, *report.uncollectable)] == [first]
    # No handle id in the cut's words either (a key of the user's own, `pending[1]`, stays).
    assert [c.cut.description for c in (*report.cycles, *report.uncollectable) if c.cut] == said
    for cycle in (*report.cycles, *report.uncollectable):
        assert cycle.cut is not None
        assert "hook" not in cycle.cut.description or not re.search(
            r"\[\d+\]", cycle.cut.description
        ), cycle.cut.description
    _register_other_hooks()
    with check_leaks(allow=[first]) as allowed:
        fn()
    assert allowed.report is not None
    assert not allowed.report.found


def test_hostile_tensor_subclass_does_not_break_the_probe() -> None:
    class Hostile(torch.Tensor):
        @classmethod
        def __torch_function__(cls, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("no")

        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("no")

    def leak() -> None:
        x = torch.randn(1000, requires_grad=True)
        with torch._C.DisableTorchFunctionSubclass():
            y = x.exp().as_subclass(Hostile)
            y.register_hook(lambda grad: grad if y is None else grad * 2)

    report = find_leaks(leak)
    assert [c.pattern for c in report.uncollectable] == ["tensor-hook-loop"]


def test_probe_never_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import whyalive.report.pipeline as pipeline

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("probe bug")

    monkeypatch.setattr(pipeline, "probe_uncollectable", broken)
    report = find_leaks(loops.tensor_hook)
    assert any("could not look for uncollectable leaks (RuntimeError)" in n for n in report.notes)


def test_unittest_mixin_fails_on_a_loop_through_autograd() -> None:
    import unittest

    from whyalive.unittest import LeakCheckMixin

    class Case(LeakCheckMixin, unittest.TestCase):
        def test_leaky(self) -> None:
            loops.tensor_hook()

        def test_fixed(self) -> None:
            loops.tensor_hook_fixed()

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
    assert result.testsRun == 2
    [(test, message)] = result.failures
    assert test.id().endswith("test_leaky")
    assert "[tensor-hook-loop]" in message


def test_whyalive_run_reports_a_loop_and_exits_1(tmp_path: Any) -> None:
    import subprocess

    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "def step():\n"
        "    x = torch.randn(1000, requires_grad=True)\n"
        "    y = x.exp()\n"
        "    y.register_hook(lambda g: g * y.sum())\n"
        "    y.sum().backward()\n"
        "step()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "whyalive", "run", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    said = " ".join(done.stderr.split())  # the text wraps to the terminal's width
    assert "Uncollectable loop 1: tensor hook that refers back to its tensor" in said
    assert "`y.register_hook(lambda g, *, y=weakref.proxy(y): g * y.sum())`" in said


PLUGIN_SUITE = """
import torch

CACHE = {}


def test_leaks_a_loop():
    x = torch.randn(4096, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda grad: grad * y.sum())
    y.sum().backward()


def test_removes_its_hook():
    x = torch.randn(4096, requires_grad=True)
    y = x.exp()
    handle = y.register_hook(lambda grad: grad * y.sum())
    y.sum().backward()
    handle.remove()


def test_keeps_the_loop_in_a_global():
    x = torch.randn(4096, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda grad: grad * y.sum())
    CACHE["y"] = y
"""


def test_pytest_plugin_fails_only_the_test_that_leaks_a_loop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_loops=PLUGIN_SUITE)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tensor-hook-loop, loop through the autograd graph, never freed*",
            "*FAILED test_loops.py::test_leaks_a_loop*",
        ]
    )
    # A baseline file knows it from then on, as it knows cycles.
    written = pytester.runpytest_subprocess("--whyalive", "--whyalive-update-baseline")
    written.assert_outcomes(passed=3)
    known = pytester.runpytest_subprocess(
        "--whyalive", "--whyalive-baseline=.whyalive-baseline.json"
    )
    known.assert_outcomes(passed=3)


OTHER_HOOKS_FIRST = """
import torch


def test_a_registers_other_hooks():
    for _ in range(3):
        t = torch.randn(4, requires_grad=True).exp()
        t.register_hook(lambda grad: grad).remove()


def test_b_leaks_a_loop():
    x = torch.randn(4096, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda grad: grad * y.sum())
    y.sum().backward()
"""


def test_a_baseline_knows_a_loop_whatever_ran_before(pytester: pytest.Pytester) -> None:
    """The baseline written by the whole suite still knows the loop when it runs alone
    (its hook then gets another handle id), and the other way round."""
    pytester.makepyfile(test_hooks=OTHER_HOOKS_FIRST)
    written = pytester.runpytest_subprocess("--whyalive", "--whyalive-update-baseline")
    written.assert_outcomes(passed=2)
    baseline = "--whyalive-baseline=.whyalive-baseline.json"
    alone = pytester.runpytest_subprocess("--whyalive", baseline, "-k", "test_b")
    alone.assert_outcomes(passed=1, deselected=1)
    pytester.runpytest_subprocess("--whyalive", baseline).assert_outcomes(passed=2)
    (pytester.path / ".whyalive-baseline.json").unlink()
    pytester.runpytest_subprocess(
        "--whyalive", "--whyalive-update-baseline", "-k", "test_b"
    ).assert_outcomes(passed=1, deselected=1)
    pytester.runpytest_subprocess("--whyalive", baseline).assert_outcomes(passed=2)


CTX_SHAPES = """
import torch


class KeepsAndSaves(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.save_for_backward(x)
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 + 0 * ctx.y + 0 * x


class KeepsAList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.ys = [y]
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * 2 + 0 * ctx.ys[0]


def run(function):
    x = torch.randn(1000, requires_grad=True)
    function.apply(x).sum().backward()
"""


@pytest.mark.parametrize("function", ["KeepsAndSaves", "KeepsAList"])
def test_ctx_attribute_edit_only_where_it_is_safe(tmp_path: Any, function: str) -> None:
    """`save_for_backward` is written only for one tensor in a class that saves nothing
    else (the index `[0]` would be wrong); otherwise the fix stays in words."""
    import importlib.util

    path = tmp_path / f"ctx_shapes_{function.lower()}.py"
    path.write_text(CTX_SHAPES)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with check_leaks(on_leak="ignore", min_bytes=0) as check:
        module.run(getattr(module, function))
    report = check.report
    assert report is not None
    [cycle] = [*report.cycles, *report.uncollectable]
    assert cycle.pattern == "ctx-attribute"
    assert cycle.fix_edit is None
    assert "save_for_backward" in cycle.fix
    # A size follows another only when it says whose it is (the tensor's, not its graph's).
    text = report.render("text", detail="full")
    assert not re.search(r"B \([\d.]+ [KMGT]?i?B\)", text), text
    assert ", the tensor alone)" in text
    if function == "KeepsAList":  # only tensors can be saved: the list's tensor is named
        assert "the tensor kept in `ctx.ys[0]`" in cycle.fix
        assert "not the list" in cycle.fix
        assert "ctx.save_for_backward(ys)" not in cycle.fix


# diagnosed as the core diagnoses a cycle (moved here: the core tests run without torch) ---


def test_autograd_ctx_attribute_holding_the_output() -> None:
    """A custom Function storing its output on `ctx`: the cut is that ctx attribute."""

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, x: object, keep: bool) -> object:
            out = x * 2  # type: ignore[operator]
            if keep:
                ctx.out = out  # type: ignore[attr-defined]
            return out

        @staticmethod
        def backward(ctx: object, grad: object) -> tuple[object, None]:
            return grad * 2, None  # type: ignore[operator]

    def step(keep: bool) -> None:
        x = torch.randn(64, 64, requires_grad=True)
        Double.apply(x, keep)

    cycle = only_cycle(step, True)
    assert cycle.pattern == "ctx-attribute"
    assert cut_names(cycle) == [".out"]
    assert "`Double`" in cycle.summary
    assert "ctx.save_for_backward(out)" in cycle.fix
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None
    assert cycle.cut.source_line.endswith("ctx.out = out  # type: ignore[attr-defined]")
    assert not find_leaks(step, False).found


@pytest.mark.whyalive_skip  # the loop it makes is never freed: the suite's own check sees it
def test_hooks_on_autograd_nodes_are_uncollectable_loops_not_cyclic_garbage() -> None:
    """A grad_fn hook capturing its tensor is owned by C++: not cyclic garbage, but a loop
    through the autograd graph, reported as uncollectable (the blind spot note says so)."""

    def step() -> None:
        x = torch.randn(8, requires_grad=True)
        t = x * 2
        t.grad_fn.register_hook(lambda *args: t)

    report = find_leaks(step)
    assert not report.cycles
    assert [c.pattern for c in report.uncollectable] == ["node-hook-loop"]
    assert any("uncollectable loops" in note for note in report.notes)


def test_garbage_of_classes_that_cannot_be_hashed_is_read_for_autograd_nodes() -> None:
    """Which garbage types are autograd nodes is decided by identity and from type's own
    descriptors (torch's Node subclass hook would read the class's name, a set of the
    types would hash them): a cycle of such a class holding a graph's output is reported."""
    from test_gc_safety import Unhashable

    def make() -> None:
        owner = Unhashable()
        owner.me = owner  # type: ignore[attr-defined]
        owner.out = torch.randn(4096, requires_grad=True).exp()  # type: ignore[attr-defined]

    report = find_leaks(make)
    assert report.found
    assert report.total_bytes >= 2 * 4096 * 4  # the output and the input its graph saved
    assert "Unhashable" in report.render("text")


def node_hook_capturing_its_node() -> None:
    x = torch.randn(64, 64, requires_grad=True)
    y = torch.sigmoid(x @ x)
    node = y.grad_fn
    seen: list[str] = []
    node.register_hook(lambda grad_in, grad_out: seen.append(node.name()))
    y.sum().backward()


def attach_debug(state: dict[str, Any], out: Any) -> None:
    state["node"] = out.grad_fn
    state["handle"] = out.grad_fn.register_prehook(
        lambda grad_outputs: state.setdefault("seen", []).append(len(grad_outputs))
    )


def node_prehook_keeping_its_node(clear: bool = False) -> weakref.ref[Any]:
    w = torch.randn(64, 64, requires_grad=True)
    out = (w @ w).relu()
    state: dict[str, Any] = {}
    attach_debug(state, out)
    out.sum().backward()
    seen = weakref.ref(w)
    if clear:  # the fix's own words
        del state["node"]
    return seen


def test_node_hook_advice_offers_only_what_works_on_a_node() -> None:
    """An autograd node takes no weak reference, so no `weakref.ref(node)`; the hook's own
    variable is not deleted (`del state` frees nothing, and the hook still reads it): the
    entry is (`del state['node']`), which frees the payload."""
    report = find_leaks(node_hook_capturing_its_node)
    [loop] = [*report.cycles, *report.uncollectable]
    assert loop.pattern == "node-hook-loop"
    assert "weakref.ref(node)" not in loop.fix, loop.fix
    assert "let the hook use the gradients it is given instead of `node`" in loop.fix
    report = find_leaks(node_prehook_keeping_its_node)
    [kept] = [*report.cycles, *report.uncollectable]
    assert "`del state['node']`" in kept.fix, kept.fix
    assert "`del state`" not in kept.fix
    gc.disable()
    try:
        assert node_prehook_keeping_its_node(clear=True)() is None  # by reference counting
    finally:
        gc.enable()


class _Gate(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any, layer: Any) -> Any:
        ctx.layer = layer
        return x * layer.gain

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        ctx.layer.grad_calls += 1
        return grad * ctx.layer.gain, None


class _WeakGate(_Gate):
    @staticmethod
    def forward(ctx: Any, x: Any, layer: Any) -> Any:
        ctx.layer = weakref.proxy(layer)  # the fix's own words
        return x * layer.gain


class GateLayer:
    def __init__(self, gate: Any = _Gate) -> None:
        self.gain, self.grad_calls, self.last, self.gate = 3.0, 0, None, gate

    def __call__(self, x: Any) -> Any:
        self.last = self.gate.apply(x, self)
        return self.last


def gate_step(gate: Any = _Gate) -> tuple[int, weakref.ref[Any]]:
    layer = GateLayer(gate)
    layer(torch.randn(64, 16, requires_grad=True)).sum().backward()
    return layer.grad_calls, weakref.ref(layer.last)


def test_a_ctx_attribute_holding_an_owner_is_held_weakly_not_saved() -> None:
    """`ctx.layer = layer`, the layer keeping the output: the ctx holds an owner, not a tensor,
    so the fix is a weak proxy of it (`save_for_backward` takes tensors only); applied,
    backward still runs and the output is freed."""
    [cycle] = find_leaks(gate_step).cycles
    assert cycle.pattern == "autograd-node"
    assert "save_for_backward" not in cycle.fix
    assert "write `ctx.layer = weakref.proxy(layer)`" in cycle.fix, cycle.fix
    gc.disable()
    try:
        calls, output = gate_step(_WeakGate)
        assert calls == 1
        assert output() is None  # by reference counting alone
    finally:
        gc.enable()


class GradProbe:
    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.norm: float | None = None

    def watch(self, t: Any) -> None:
        self.state = {"tensor": t, "step": 0}
        t.register_hook(self.on_grad)

    def on_grad(self, grad: Any) -> None:
        self.norm = float(grad.norm())


class WeakGradProbe(GradProbe):
    def watch(self, t: Any) -> None:
        self.state = {"tensor": t, "step": 0}
        # The fix's own words (with a branch already weak, an edit leaves it as it is).
        t.register_hook(types.MethodType(type(self).on_grad, weakref.proxy(self)))


def probed_step(weak: bool = False) -> tuple[float | None, weakref.ref[Any]]:
    probe = WeakGradProbe() if weak else GradProbe()
    h = torch.nn.functional.linear(torch.randn(8, 32), torch.randn(32, 32, requires_grad=True))
    probe.watch(h)
    h.sum().backward()
    return probe.norm, weakref.ref(h)


def test_a_tensor_hook_that_is_a_bound_method_is_a_tensor_hook_loop() -> None:
    """`t.register_hook(self.on_grad)`, the object keeping `t`: a tensor's own
    `_backward_hooks` is no module's hook dict, so this is the tensor-hook loop (not Grad-CAM's
    module hooks), and its Why spells the tensor from the object (`self.state['tensor']`), not
    from `t`. The fix, applied, still runs the hook and frees the tensor."""
    report = find_leaks(probed_step)
    [loop] = [*report.cycles, *report.uncollectable]
    assert loop.pattern == "tensor-hook-loop"
    bound = "types.MethodType(type(self).on_grad, weakref.proxy(self))"
    assert f"write `t.register_hook({bound})`" in loop.fix, loop.fix
    assert "t.state" not in loop.explanation
    assert "`self.state['tensor']`" in loop.explanation
    gc.disable()
    try:
        norm, tensor = probed_step(weak=True)
        assert norm is not None
        assert tensor() is None  # by reference counting alone
    finally:
        gc.enable()


class RaisingNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: Any) -> Any:
        h = self.fc(x)
        raise ValueError(f"bad shape {tuple(h.shape)}")


class FailureLog:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.failures: list[BaseException] = []

    def step(self, x: Any) -> Any:
        try:
            return self.model(x).sum()
        except ValueError as e:
            self.failures.append(e)
            return None


def failing_step() -> None:
    FailureLog(RaisingNet()).step(torch.randn(4, 16))


def test_a_cut_through_torchs_frames_quotes_the_users_store() -> None:
    """An exception raised in `forward` and kept by the caller: the traceback's frames include
    torch's `_call_impl`, whose lines store items too; the item `[0]` is made by the user's
    `self.failures.append(e)`, which the cut quotes."""
    [cycle] = find_leaks(failing_step).cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None, cycle.cut.source_note
    place, _, text = cycle.cut.source_line.partition("  ")
    assert text == "self.failures.append(e)", cycle.cut.source_line
    assert place.startswith("test_uncollectable.py:")
