"""explain(obj) and check_leaks(census=True): holder paths from roots, blind spots stated."""

from __future__ import annotations

import gc
import sys
import types
import weakref
from collections.abc import Callable, Iterator

import pytest

from scenarios.modules import throwaway_module
from whyalive import LeakError, Report, check_leaks, explain
from whyalive.errors import MissingToolError, UsageError
from whyalive.graph.heap import user_freeze_count
from whyalive.render import RENDERERS, render_bytes

torch = pytest.importorskip("torch")

MODULE_NAME = "whyalive_explain_holders"


@pytest.fixture
def holders() -> Iterator[types.ModuleType]:
    """A throwaway module in sys.modules: the user's module with globals that hold tensors."""
    with throwaway_module(MODULE_NAME) as module:
        yield module


@pytest.mark.whyalive_skip  # explain() would see the plugin's frozen baseline
def test_module_global_names_module_and_variable(holders: types.ModuleType) -> None:
    """A tensor in a module-level dict is explained by module name, variable and key."""
    holders.CACHE = {"weights": torch.ones(64)}
    explanation = explain(holders.CACHE["weights"])
    assert explanation.alive.root == f"module `{MODULE_NAME}` (a global variable)"
    assert explanation.paths[0] == (
        f"module {MODULE_NAME} --.CACHE--> dict CACHE of 1 --['weights']--> "
        "Tensor(float32[64], cpu)"
    )
    assert explanation.alive.nbytes == 256
    assert explanation.alive.note is None


def test_class_attribute(holders: types.ModuleType) -> None:
    """A tensor stored on a class is explained by the class and the attribute name."""
    registry = type("Registry", (), {"table": torch.zeros(8)})
    holders.Registry = registry
    explanation = explain(registry.table)
    # A class is a loop (its dict, descriptors, MRO): what it holds is dropped here, not
    # left for the suite's own check of whichever test collects the class.
    del registry.table
    assert explanation.alive.root == f"class `{registry.__module__}.Registry` (a class attribute)"
    assert explanation.paths[0] == "class Registry --.table--> Tensor(float32[8], cpu)"


def _make_callback() -> Callable[[], object]:
    weights = torch.ones(4)

    def callback() -> object:
        return weights

    return callback


def test_closure_in_registry_dict(holders: types.ModuleType) -> None:
    """A tensor captured by a closure stored in a registry dict is named by the free variable."""
    holders.REGISTRY = {"on_step": _make_callback()}
    explanation = explain(holders.REGISTRY["on_step"]())
    line = explanation.paths[0]
    assert line.startswith(
        f"module {MODULE_NAME} --.REGISTRY--> dict REGISTRY of 1 --['on_step']-->"
    )
    closure = "--__closure__[0] weights--> cell weights --cell_contents-->"
    assert f"{closure} Tensor(float32[4], cpu)" in line


def _generator() -> Iterator[int]:
    activations = torch.ones(16)
    yield activations.numel()


def test_suspended_generator_frame(holders: types.ModuleType) -> None:
    """A tensor held by a local of a suspended generator is named by that local."""
    generator = _generator()
    next(generator)
    holders.RUNNING = [generator]
    del generator
    target = gc.get_referents(holders.RUNNING[0])[-1]
    explanation = explain(target)
    del target
    assert explanation.paths[0] == (
        f"module {MODULE_NAME} --.RUNNING--> list RUNNING of 1 --[0]--> generator _generator "
        "--local activations--> Tensor(float32[16], cpu)"
    )


def test_untracked_numpy_array_is_explained(holders: types.ModuleType) -> None:
    """An untracked NumPy array inside an untracked dict still gets its holder path."""
    numpy = pytest.importorskip("numpy")
    holders.ARRAYS = {"a": numpy.zeros(32, dtype=numpy.float32)}
    assert not gc.is_tracked(holders.ARRAYS)
    explanation = explain(holders.ARRAYS["a"])
    assert explanation.paths[0].startswith(f"module {MODULE_NAME} --.ARRAYS--> dict ARRAYS of 1")
    assert explanation.alive.nbytes == 128


def test_two_holders_give_two_paths(holders: types.ModuleType) -> None:
    """An object held from two globals gets one path per holder, shortest first."""
    tensor = torch.ones(2)
    holders.FIRST = tensor
    holders.SECOND = [tensor]
    del tensor
    paths = explain(holders.FIRST).paths
    assert paths[0] == f"module {MODULE_NAME} --.FIRST--> Tensor(float32[2], cpu)"
    assert any("--.SECOND--> list SECOND of 1 --[0]-->" in p for p in paths[1:])


def _hook_cycle() -> tuple[weakref.ref[object], object]:
    leaf = torch.ones(3, requires_grad=True)
    output = leaf * 2
    handle = output.grad_fn.register_hook(lambda *grads: output)
    return weakref.ref(output), handle


def test_autograd_hook_cycle_found_by_census_not_by_gc() -> None:
    """A hook that refers back to its tensor is never collected; the census reports it."""
    with check_leaks(census=True, on_leak="ignore") as check:
        output_ref, handle = _hook_cycle()
    gc.collect()
    try:
        assert output_ref() is not None, "the GC freed it: the cycle is not through C++"
        report = check.report
        assert report is not None
        assert not report.cycles, "no cyclic garbage: the GC cannot see this cycle"
        assert [c.pattern for c in report.uncollectable] == ["node-hook-loop"]
        notes = [a.note or "" for a in report.alive]
        assert notes
        assert all("held only by a loop through the autograd graph" in n for n in notes)
        assert report.found
    finally:
        handle.remove()  # breaks the cycle: the hook was the only link back
    gc.collect()
    assert output_ref() is None


def test_census_fails_like_a_leak(holders: types.ModuleType) -> None:
    """A heavy object created in the block and kept by a global fails the check, with bytes."""
    holders.KEEP = []
    with pytest.raises(LeakError) as raised, check_leaks(census=True):
        holders.KEEP.append(torch.zeros(1024))
    alive = raised.value.report.alive
    assert [a.nbytes for a in alive] == [4096]
    assert alive[0].root == f"module `{MODULE_NAME}` (a global variable)"
    assert "Still alive: Tensor(float32[1024], cpu), 4.0 KiB" in str(raised.value)


def test_census_ignores_objects_from_before_and_freed_ones(holders: types.ModuleType) -> None:
    """Heavy objects alive before the block, or freed by its end, are not reported."""
    holders.OLD = torch.zeros(10)
    with check_leaks(census=True) as check:
        holders.OLD.add_(1)
        scratch = torch.ones(100)
        del scratch
    assert check.report is not None
    assert not check.report.alive
    assert not check.report.found


def test_own_frames_and_containers_never_on_a_path(holders: types.ModuleType) -> None:
    """Only the user's holders appear: no whyalive frame, list or dict is ever on a path."""
    holders.VALUE = torch.ones(5)
    report = explain(holders.VALUE).to_report()
    on_paths = {n for a in report.alive for p in a.paths for n in p.nodes}
    labels = [report.node(n).label for n in on_paths]
    assert all("frame" not in label for label in labels), labels
    assert all(
        (report.node(n).location or "").split(":")[0]
        not in ("explain.py", "roots.py", "heap.py", "check.py", "core.py")
        for n in on_paths
    )
    assert len(report.alive[0].paths) == 1


def test_local_of_running_function_is_stated_not_hidden() -> None:
    """A tensor held only by a local of a running frame is reported with its blind spot."""
    local_tensor = torch.ones(7)
    explanation = explain(local_tensor)
    if sys.version_info[:2] in ((3, 11), (3, 12)):
        assert explanation.alive.paths[0].edges == ()
        assert "local variable of a running function" in (explanation.alive.note or "")
        assert "1 reference from outside Python objects" in (explanation.alive.note or "")
    else:  # 3.10 frames show their locals to the GC: the frame is the root
        assert "local local_tensor" in explanation.paths[0]


def test_nothing_kept_alive_after_explain(holders: types.ModuleType) -> None:
    """explain leaves no reference behind: the object is freed as soon as the user drops it."""
    holders.TEMP = torch.ones(9)
    ref = weakref.ref(holders.TEMP)
    explanation = explain(holders.TEMP)
    del holders.TEMP
    assert ref() is None
    assert explanation.alive.description == "Tensor(float32[9], cpu)"


def test_frozen_and_disabled_gc_are_noted(holders: types.ModuleType) -> None:
    """A report says when objects were frozen and when automatic GC was disabled."""
    holders.FROZEN = torch.ones(3)
    if user_freeze_count():
        pytest.skip("objects are already frozen in this process")
    gc.disable()
    gc.freeze()
    try:
        explanation = explain(holders.FROZEN)
    finally:
        gc.unfreeze()
        gc.enable()
    notes = " ".join(explanation.report.notes)
    assert "frozen (gc.freeze())" in notes
    assert "Automatic garbage collection is disabled" in notes
    assert explanation.paths[0] == f"module {MODULE_NAME} --.FROZEN--> Tensor(float32[3], cpu)"
    assert "frozen" in (explanation.alive.note or "")


def test_explanation_renders_everywhere_and_round_trips(holders: types.ModuleType) -> None:
    """The explanation is a plain report: every renderer takes it, JSON gives it back."""
    holders.DATA = torch.ones(3)
    report = explain(holders.DATA).to_report()
    for renderer in RENDERERS.values():
        try:
            assert render_bytes(renderer(), report)
        except MissingToolError:  # svg/png need the Graphviz binary
            continue
    assert Report.from_dict(report.to_dict()) == report
    text = str(explain(holders.DATA))
    assert text.startswith("whyalive: 1 heavy object still alive")
    assert "Held by: module" in text


def test_max_paths_must_be_positive() -> None:
    """A bad max_paths is a usage error, not a silent empty answer."""
    with pytest.raises(UsageError):
        explain(object(), max_paths=0)


def test_long_chain_uses_forward_search(holders: types.ModuleType) -> None:
    """A holder chain deeper than the reverse search's level limit is still found, in full."""
    tensor = torch.ones(1)
    chain: object = tensor
    for _ in range(70):  # past the reverse search's budget of edge-list scans
        chain = [chain]
    holders.DEEP = chain
    del chain
    path = explain(tensor).alive.paths[0]
    assert len(path.edges) == 71
    assert path.edges[0].name == ".DEEP"
    assert all(edge.name == "[0]" for edge in path.edges[1:])


def test_census_of_a_chain_blames_only_the_hidden_owner() -> None:
    """Two new tensors, one holding the other, behind a C++ owner: only the owner is blamed."""
    with check_leaks(census=True, on_leak="ignore") as check:
        output_ref, handle = _hook_cycle()
        output = output_ref()
        assert output is not None
        output.extra = torch.ones(2)  # a second new tensor, held only through the first
        del output
    try:
        report = check.report
        assert report is not None
        extra = next(a for a in report.alive if a.description == "Tensor(float32[2], cpu)")
        assert extra.paths[0].edges[-1].name == ".extra"
        assert "held only by a loop through the autograd graph" in (extra.note or "")
        [loop] = report.uncollectable
        assert loop.pattern == "node-hook-loop"
        assert any(h.where.endswith(".extra") for h in loop.holds), loop.holds
    finally:
        handle.remove()
    gc.collect()
    assert output_ref() is None


def test_a_plain_object_is_not_called_heavy() -> None:
    """explain(5) explains an int: an object still alive, not "1 heavy object"."""
    text = str(explain(5))
    assert text.startswith("whyalive: 1 object still alive")
    assert "heavy" not in text.splitlines()[0]


SHARED_VALUE = 1_000_003  # an ordinary int: a module global holds it


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (5, "small ints -5..256: every `5`"),
        (-5, "every `-5`"),
        (None, "`None` is a singleton"),
        (True, "`True` is a singleton"),
        ("a", "one-character str objects: every `'a'`"),
        (b"", "every `b''`"),
        ((), "the empty tuple"),
    ],
)
def test_an_object_the_interpreter_shares_is_said_so_without_paths(
    value: object, words: str
) -> None:
    """Any reference to 5 anywhere holds the one cached 5: a path through another module's
    constant (``posix.POSIX_FADV_NOREUSE``) would be true and meaningless."""
    explained = explain(value)
    alive = explained.alive
    assert alive.paths == ()
    assert alive.root is None
    assert alive.note is not None
    assert alive.note.startswith("Shared by the whole interpreter")
    assert words in alive.note
    text = str(explained)
    assert "Holder paths" not in text
    assert "Note: Shared by the whole interpreter" in text


def test_an_ordinary_int_held_by_a_global_still_gets_its_path() -> None:
    explained = explain(SHARED_VALUE)
    assert "Shared by the whole interpreter" not in (explained.alive.note or "")
    assert any(".SHARED_VALUE" in path for path in explained.paths)
