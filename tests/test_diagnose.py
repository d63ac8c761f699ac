"""Each named pattern: leaking code yields it with its cut and fix; fixed code yields nothing."""

from __future__ import annotations

import ast
import asyncio
import collections
import concurrent.futures
import functools
import gc
import re
import subprocess
import sys
import textwrap
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from capabilities import needs_numpy, needs_subprocess
from scenarios import Trainer, heavy, heavy_bytes, stage_backward, stage_backward_fixed
from whyalive import check_leaks, find_leaks
from whyalive.analysis.diagnose import diagnose
from whyalive.analysis.paths import CycleView, view_cycle
from whyalive.graph import build_graph
from whyalive.kinds import KindResolver
from whyalive.report import CycleReport
from whyalive.words import FINALIZED_LOOPS


def only_cycle(fn: Callable[..., object], *args: object, **kwargs: object) -> CycleReport:
    """The one cycle ``fn`` leaves behind, checked to read right (named, looped, fixed in code)."""
    report = find_leaks(fn, *args, **kwargs)
    assert len(report.cycles) == 1, [c.summary for c in report.cycles]
    cycle = report.cycles[0]
    assert cycle.pattern != "unrecognised"
    loop = cycle.loop
    real = {(e.source, e.target, e.name) for e in cycle.edges}
    assert all((e.source, e.target, e.name) in real for e in loop)
    assert all(a.target == b.source for a, b in zip(loop, (*loop[1:], loop[0]), strict=True))
    assert len({e.source for e in loop}) == len(loop)
    for span in re.findall(r"`([^`]+)`", cycle.fix):
        ast.parse(span.strip())
    return cycle


def cut_names(cycle: CycleReport) -> list[str]:
    """The names of the references the cut removes."""
    assert cycle.cut is not None
    return [edge.name for edge in cycle.cut.edges]


# recursive nested function ---------------------------------------------------------------


def test_recursive_closure_cuts_the_self_reference_not_the_list() -> None:
    """The seed case: the cut is the closure variable of the function, not the data list."""
    cycle = only_cycle(stage_backward, [heavy(), heavy()])
    assert cycle.pattern == "recursive-closure"
    assert cut_names(cycle) == ["cell_contents"]
    assert cycle.cut is not None
    assert cycle.cut.description == (
        "the closure variable `extract_tensors_with_grads` in `stage_backward`"
    )
    assert "del extract_tensors_with_grads" in cycle.fix
    assert "stage_output_tensors" in cycle.fix
    assert not find_leaks(stage_backward_fixed, [heavy()]).found


def parity(data: list[object], *, fixed: bool) -> None:
    held = list(data)

    def is_even(n: int) -> bool:
        return True if n == 0 else is_odd(n - 1)

    def is_odd(n: int) -> bool:
        return bool(held) and (False if n == 0 else is_even(n - 1))

    is_even(3)
    if fixed:
        del is_even, is_odd


def test_mutual_recursion_between_nested_functions() -> None:
    """Two nested functions calling each other are named, and the fix names both."""
    cycle = only_cycle(parity, [heavy()], fixed=False)
    assert cycle.pattern == "recursive-closure"
    assert "is_even" in cycle.summary
    assert "is_odd" in cycle.summary
    assert "del is_even, is_odd" in cycle.fix or "del is_odd, is_even" in cycle.fix
    assert cut_names(cycle) == ["cell_contents"]
    assert cycle.cut is not None
    assert "in `parity`" in cycle.cut.description
    assert not find_leaks(parity, [heavy()], fixed=True).found


# callable stored on its own instance -----------------------------------------------------


def test_bound_method_stored_on_self() -> None:
    """`self.callback = self.on_step`: cut `.callback`; the fix binds `on_step` to a weak
    proxy (called the same way, with the same arguments), never a `WeakMethod` that every
    caller would have to dereference first."""
    cycle = only_cycle(Trainer, cycle=True)
    assert cycle.pattern == "bound-method-on-self"
    assert cut_names(cycle) == [".callback"]
    assert "types.MethodType(type(self).on_step, weakref.proxy(self))" in cycle.fix
    assert "WeakMethod" not in cycle.fix
    assert "self.callback" in cycle.fix
    assert not find_leaks(Trainer, cycle=False).found


class Scaler:
    def __init__(self, *, cycle: bool) -> None:
        self.x = heavy()
        if cycle:
            self.fn = lambda: self.x
        else:
            x = self.x
            self.fn = lambda: x


def test_lambda_capturing_self_stored_on_self() -> None:
    """`self.fn = lambda: self.x`: cut the closure's `self`; the fix gives the lambda `self`
    as a weak keyword-only default, and says `del self.fn` as the other way."""
    cycle = only_cycle(Scaler, cycle=True)
    assert cycle.pattern == "bound-method-on-self"
    assert cut_names(cycle) == ["cell_contents"]
    assert cycle.cut is not None
    assert cycle.cut.description == "the closure variable `self` in `Scaler.__init__`"
    assert "`self`" in cycle.summary
    assert "lambda *, self=weakref.proxy(self): self.x" in cycle.fix
    assert "del self.fn" in cycle.fix
    assert not find_leaks(Scaler, cycle=False).found


# exception kept with its traceback -------------------------------------------------------


class Step:
    def run(self, *, cycle: bool) -> None:
        activations = heavy()  # noqa: F841 - held by the frame the traceback keeps
        try:
            raise ValueError("boom")
        except ValueError as error:
            if cycle:
                self.error = error
            else:
                self.error_text = str(error)


def test_exception_stored_on_self() -> None:
    """`self.error = error` inside a method: cut `.error`, frame and local named."""
    cycle = only_cycle(lambda cycle: Step().run(cycle=cycle), cycle=True)
    assert cycle.pattern == "exception-traceback"
    assert cut_names(cycle) == [".error"]
    # 3.10 code objects have no co_qualname: the method is found on its module's class.
    assert "Step.run" in cycle.summary
    assert "activations" in cycle.explanation
    # The exact local on every Python (3.10 read it by slot, where `error` is unbound).
    names = [edge.name for path in cycle.holder_paths for edge in path.edges]
    assert names == ["local activations"]
    assert "traceback.clear_frames" in cycle.fix
    assert not find_leaks(lambda: Step().run(cycle=False)).found


def keep_in_local(*, cycle: bool) -> None:
    activations = heavy()  # noqa: F841
    try:
        raise ValueError("boom")
    except ValueError as error:
        if cycle:
            kept = error  # noqa: F841


def test_exception_in_a_local_of_the_same_frame() -> None:
    """`kept = error`: the cut is the local `kept`, the frame is named."""
    cycle = only_cycle(keep_in_local, cycle=True)
    assert cycle.pattern == "exception-traceback"
    assert cycle.cut is not None
    ((kind, name),) = [(e.kind, e.name) for e in cycle.cut.edges]
    assert kind == "local"
    assert "kept" in name
    assert "keep_in_local" in cycle.summary
    assert not find_leaks(keep_in_local, cycle=False).found


def keep_in_list(*, cycle: bool) -> None:
    activations = heavy()  # noqa: F841
    errors: list[object] = []
    try:
        raise KeyError("boom")
    except KeyError as error:
        errors.append(error if cycle else repr(error))


def test_exception_in_a_list() -> None:
    """`errors.append(error)`: the cut is the list entry holding the exception."""
    cycle = only_cycle(keep_in_list, cycle=True)
    assert cycle.pattern == "exception-traceback"
    assert cut_names(cycle) == ["[0]"]
    assert "KeyError" in cycle.summary
    assert not find_leaks(keep_in_list, cycle=False).found


def fail_into_future(*, cycle: bool) -> None:
    activations = heavy()  # noqa: F841
    future: concurrent.futures.Future[None] = concurrent.futures.Future()
    try:
        raise RuntimeError("worker failed")
    except RuntimeError as error:
        future.set_exception(error)
    if not cycle:
        del future


def test_exception_in_a_future() -> None:
    """An exception set on a Future the failing frame still holds: cut the exception's
    traceback, at the `set_exception` call the fix rewrites."""
    cycle = only_cycle(fail_into_future, cycle=True)
    assert cycle.pattern == "exception-in-future"
    assert cut_names(cycle) == ["__traceback__"]
    assert "RuntimeError" in cycle.summary
    assert "`future.set_exception(error.with_traceback(None))`" in cycle.fix
    assert not find_leaks(fail_into_future, cycle=False).found


# parent <-> child ------------------------------------------------------------------------


class TreeNode:
    def __init__(self, parent: TreeNode | None = None, *, weak: bool = False) -> None:
        self.parent: object = weakref.ref(parent) if weak and parent is not None else parent
        self.children: list[TreeNode] = []
        self.weights = heavy()
        if parent is not None:
            parent.children.append(self)


def tree(*, weak: bool) -> None:
    root = TreeNode()
    TreeNode(root, weak=weak)
    TreeNode(root, weak=weak)


def test_parent_child_back_reference() -> None:
    """Children holding `.parent` strongly: cut `.parent`, fix says weakref."""
    cycle = only_cycle(tree, weak=False)
    assert cycle.pattern == "parent-child"
    assert cut_names(cycle) == [".parent", ".parent"]  # one per child: minimal, not one
    assert cycle.cut is not None
    assert cycle.cut.description == "the attribute `.parent` of a `TreeNode` object (each of 2)"
    assert "TreeNode" in cycle.summary
    assert "weakref.proxy(parent)" in cycle.fix
    assert ".parent" in cycle.fix
    assert not find_leaks(tree, weak=True).found


# attributes set on a function -------------------------------------------------------------


class Registry:
    def __init__(self) -> None:
        self.payload = heavy()
        self.handlers: list[Callable[[object], object]] = []


def register_handler(*, cycle: bool) -> None:
    registry = Registry()

    def handler(event: object) -> object:
        return event

    if cycle:
        handler.registry = registry  # type: ignore[attr-defined]
    registry.handlers.append(handler)


def test_an_attribute_set_on_a_function_reads_as_one_and_its_store_is_quoted() -> None:
    """`handler.registry = registry`, the registry listing the handler: the function's
    attribute is `.registry` (its __dict__ hidden, as an instance's), not an entry `['registry']`
    of a dict, and the cut quotes the line that stored it."""
    cycle = only_cycle(register_handler, cycle=True)
    assert cycle.pattern == "attribute-loop"
    assert cut_names(cycle) == [".registry"]
    assert sorted(e.name for e in cycle.loop) == [".handlers", ".registry", "[0]"]
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None
    assert "handler.registry = registry" in cycle.cut.source_line
    assert not find_leaks(register_handler, cycle=False).found


def test_a_functions_own_slots_are_named() -> None:
    """Every reference the interpreter keeps for a function reads by its slot's name, read
    without evaluating lazy annotations (3.14's `__annotate__` is named, never called)."""
    from whyalive.analysis.edges import name_edge

    namespace: dict[str, object] = {"__name__": "made_here"}
    # Compiled here, without this module's `from __future__ import annotations`.
    exec("def made(x: list) -> None:\n    'Its doc.'\n", namespace)
    made = cast(types.FunctionType, namespace["made"])
    made.__annotations__ = {"x": list}  # also what 3.10-3.13 made at the def
    made.__qualname__ = "outer.made"  # not the very string __name__ is
    expected = {
        "__builtins__": made.__builtins__,
        "__module__": made.__module__,
        "__doc__": made.__doc__,
        "__name__": made.__name__,
        "__qualname__": made.__qualname__,
        "__annotations__": made.__annotations__,
        "__code__": made.__code__,
        "__globals__": made.__globals__,
    }
    if sys.version_info >= (3, 14):
        exec("def lazy(x: undefined_name) -> None: pass", namespace)
        lazy = cast(types.FunctionType, namespace["lazy"])
        expected["__annotate__"] = vars(types.FunctionType)["__annotate__"].__get__(lazy)
        assert name_edge(lazy, expected["__annotate__"]).name == "__annotate__"
    for slot, value in expected.items():
        if slot != "__annotate__":
            assert name_edge(made, value).name == slot, slot
    made.owner = expected  # type: ignore[attr-defined]
    assert name_edge(made, expected).name == ".owner"
    namespace.clear()  # the functions' globals: a loop through them otherwise


@needs_numpy  # the scenario reads its payload's shape
def test_what_a_frame_past_the_cycle_holds_reads_from_its_variable() -> None:
    """A frame kept by its own local (`frame = inspect.currentframe()`) reaches its caller's
    frame by `f_back`, out of the cycle: the payload reads as the caller's local `batch`,
    with the frame it is a local of, not as the steps to it (`f_back local batch of ...`)."""
    from scenarios.case_goggles_caller_frame import log_step

    cycle = only_cycle(log_step, 3)
    assert [holding.where for holding in cycle.holds] == [
        "batch in frame of `log_step` (case_goggles_caller_frame.py:26)"
    ]


@pytest.mark.parametrize(
    ("scenario_name", "named"),
    [
        ("shapes.container_loop", "[0]"),  # a deque's item
        ("shapes.future_reraised", "_exception"),  # a C asyncio future's exception
        ("shapes.task_exception", "_exception"),  # a C asyncio task's exception
        ("case_cpython_class_in_loop", "__dict__"),  # a class's namespace
        ("case_cpython_class_in_loop", "__objclass__"),  # its descriptors' class
    ],
)
@needs_numpy  # the catalogue's scenarios use it
@pytest.mark.skipif(sys.platform == "emscripten", reason="Pyodide's event loop is its own")
def test_references_builtin_types_hold_in_slots_are_named(scenario_name: str, named: str) -> None:
    """A deque's items, a C future's slots, a class's namespace and its descriptors' class read
    by the names the interpreter gives them: no reference of these cycles is left unnamed."""
    from scenarios.catalog import SCENARIOS

    scenario = next(s for s in SCENARIOS if s.name == scenario_name)
    with check_leaks(on_leak="ignore", record_allocations=scenario.record_allocations) as check:
        scenario.load()(*scenario.arguments())
    assert check.report is not None
    cycle = check.report.cycles[0]
    assert named in [edge.name for edge in cycle.loop]
    assert [edge.name for edge in cycle.edges if edge.kind == "unknown"] == []


@pytest.mark.skipif(sys.platform == "emscripten", reason="Pyodide's event loop is its own")
def test_a_c_tasks_exception_is_named_by_its_slot() -> None:
    """A C asyncio task's `_exception` (on 3.14 its getter is the base future's)."""
    from whyalive.analysis.edges import name_edge

    async def fails() -> None:
        raise ConnectionError("peer went away")

    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(fails())
        with pytest.raises(ConnectionError) as raised:
            loop.run_until_complete(task)
    finally:
        loop.close()
    assert name_edge(task, raised.value).name == "_exception"
    assert name_edge(task, loop).name == "_loop"


class Marker:
    """Weakly referenceable, unlike the payload where NumPy is missing (a bytearray): what a
    proof watches, kept beside the payload so that both go together."""


class CountsWithDefault:
    def __init__(self) -> None:
        self.data = heavy()
        self.marker = Marker()
        self.counts: collections.defaultdict[str, int] = collections.defaultdict(
            lambda: self.zero()
        )

    def zero(self) -> int:
        return 0


def test_a_defaultdicts_factory_is_named_and_its_removal_works() -> None:
    """`defaultdict(lambda: self.zero())` on self: the factory reads as `.default_factory`, and
    the removal the fix offers (`del self.counts.default_factory`) frees the payload."""
    cycle = only_cycle(CountsWithDefault)
    assert ".default_factory" in [edge.name for edge in cycle.loop]
    assert [edge.name for edge in cycle.edges if edge.kind == "unknown"] == []
    assert "`del self.counts.default_factory`" in cycle.fix, cycle.fix
    gc.disable()
    try:
        counts = CountsWithDefault()
        freed = weakref.ref(counts.marker)
        del counts.counts.default_factory
        del counts
        assert freed() is None
    finally:
        gc.enable()


@pytest.mark.skipif(sys.platform == "emscripten", reason="Pyodide's event loop is its own")
def test_a_c_futures_done_callback_is_named() -> None:
    """`future.add_done_callback(self._on_done)`: the C future keeps it in a slot of its own."""
    from whyalive.analysis.edges import name_edge

    class Fetcher:
        def on_done(self, future: object) -> None:
            pass

    loop = asyncio.new_event_loop()
    try:
        future = loop.create_future()
        callback = Fetcher().on_done
        future.add_done_callback(callback)
        assert name_edge(future, callback).name == "done callback"
    finally:
        loop.close()


def test_a_weak_references_callback_is_named() -> None:
    """`weakref.ref(target, self._gone)` holds its callback strongly: `__callback__`."""
    from whyalive.analysis.edges import name_edge

    class Target:
        pass

    target = Target()
    callback = print
    ref = weakref.ref(target, callback)
    assert name_edge(ref, callback).name == "__callback__"
    assert name_edge(ref, target).kind == "unknown"  # the referent is not held


# container that contains itself ----------------------------------------------------------


def list_with_itself(*, cycle: bool) -> None:
    items: list[object] = [heavy()]
    if cycle:
        items.append(items)


def dict_tree(children: int, *, detach: bool = False) -> weakref.ref[Any] | None:
    root: dict[str, Any] = {"name": "root", "children": [], "data": heavy(), "marker": Marker()}
    seen = weakref.ref(root["marker"])
    for number in range(children):
        root["children"].append({"name": f"child {number}", "parent": root})
    if detach:  # the fix: no child keeps `['parent']` once the tree is done
        for child in root["children"]:
            del child["parent"]
        return seen
    return None


def test_a_tree_of_dicts_is_cut_at_each_childs_parent_key() -> None:
    """Dicts whose children keep `['parent']`: that key points back (not the root's
    `['children']`, which is the tree itself); the fix says a dict takes no weak reference,
    small tree or big, and removing the key from each child frees the tree."""
    cycle = only_cycle(dict_tree, 3)
    assert cycle.pattern == "self-containing-container"
    assert cut_names(cycle) == ["['parent']"] * 3
    assert "entry `['parent']` refers back to it" in cycle.summary
    assert "cannot be held weakly" in cycle.fix
    assert "keeps the container above it in its entry `['parent']`" in cycle.explanation
    assert "optimizer" not in cycle.explanation
    # Read as a structure: the same key, and no `WeakValueDictionary` for values that are dicts.
    [big] = find_leaks(dict_tree, 3000).cycles
    assert big.cut is not None
    assert {edge.name for edge in big.cut.edges} == {"['parent']"}
    assert "cannot be held weakly" in big.fix
    assert "WeakValueDictionary" not in big.fix
    gc.disable()
    try:
        seen = dict_tree(3, detach=True)
        assert seen is not None
        assert seen() is None  # by reference counting alone
    finally:
        gc.enable()


def test_list_containing_itself_directly() -> None:
    """A list appended to itself: the cut is that item."""
    cycle = only_cycle(list_with_itself, cycle=True)
    assert cycle.pattern == "self-containing-container"
    assert cut_names(cycle) == ["[1]"]
    assert not find_leaks(list_with_itself, cycle=False).found


def param_group_state(*, cycle: bool) -> None:
    group: dict[str, object] = {"params": [heavy()], "lr": 0.1}
    intermediates: dict[str, object] = {"acts": heavy()}
    if cycle:
        intermediates["group"] = group
    group["intermediates"] = intermediates


def test_state_dict_referring_back_to_its_group() -> None:
    """`group["intermediates"]` refers back to the group: the cut is that entry."""
    cycle = only_cycle(param_group_state, cycle=True)
    assert cycle.pattern == "self-containing-container"
    assert cut_names(cycle) == ["['intermediates']"]
    assert "['intermediates']" in cycle.fix
    assert not find_leaks(param_group_state, cycle=False).found


# generator / coroutine -------------------------------------------------------------------


def worker(payload: object) -> Iterator[object]:
    data = payload  # noqa: F841 - kept by the suspended frame
    me = yield
    yield me


# While true, stubborn_worker swallows close(); the test turns it off to clean up.
STUBBORN = [True]


def stubborn_worker(payload: object) -> Iterator[object]:
    data = payload  # noqa: F841 - kept by the suspended frame
    me = yield
    while True:
        try:
            yield me
        except GeneratorExit:  # the bug that keeps the frame: close() is swallowed
            if STUBBORN:
                continue
            return


def close_stubborn_workers() -> None:
    """The collector can never free a generator that refuses to close: free ours by hand."""
    STUBBORN.clear()
    try:
        for obj in gc.get_objects():
            if type(obj) is types.GeneratorType and obj.gi_code is stubborn_worker.__code__:
                obj.close()
        gc.collect()
    finally:
        STUBBORN.append(True)


def generator_holding_itself(*, cycle: bool, make: Callable[[object], Iterator[object]]) -> None:
    gen = make(heavy())
    next(gen)
    gen.send(gen if cycle else None)


def test_closable_generator_cycle_is_broken_by_the_collector() -> None:
    """The collector closes a self-referring suspended generator, which clears its frame."""
    held: list[weakref.ref[object]] = []

    def make(payload: object) -> Iterator[object]:
        # Only the generator's frame holds the payload: the frame gone, the payload is freed.
        gen = worker(payload)
        held.append(weakref.ref(gen))
        return gen

    report = find_leaks(generator_holding_itself, cycle=True, make=make)
    assert not report.found
    assert held
    assert held[0]() is None
    # The payload waited for the collector: the clean report does not say none was made.
    assert "no cyclic garbage holding heavy objects was captured" in str(report)
    assert FINALIZED_LOOPS in report.notes
    assert "gc.disable()" in str(report)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.whyalive_skip  # the generator refuses to close: a real cycle, on purpose
def test_generator_whose_frame_refers_to_it() -> None:
    """A suspended generator holding itself in a local (and refusing close): cut that local."""
    try:
        cycle = only_cycle(generator_holding_itself, cycle=True, make=stubborn_worker)
        assert cycle.pattern == "generator-frame"
        assert cycle.cut is not None
        ((kind, name),) = [(e.kind, e.name) for e in cycle.cut.edges]
        assert kind == "local"
        assert "me" in name
        assert "worker" in cycle.summary
        assert "GeneratorExit" in cycle.fix
        # The fixed code closes properly. The collector can never free the stubborn
        # one, so without freeing it here a later collection would see it again.
        close_stubborn_workers()
        assert not find_leaks(generator_holding_itself, cycle=False, make=worker).found
    finally:
        close_stubborn_workers()


# lru_cache on a method -------------------------------------------------------------------


class Model:
    def __init__(self, *, cycle: bool) -> None:
        self.weights = heavy()
        if cycle:
            self.predict = functools.lru_cache(maxsize=None)(self._predict)

    def _predict(self, n: int) -> int:
        return n


def test_lru_cache_on_a_method() -> None:
    """`self.predict = lru_cache(self._predict)`: the cache pattern, cut `.predict`."""
    cycle = only_cycle(Model, cycle=True)
    assert cycle.pattern == "method-cache"
    assert cut_names(cycle) == [".predict"]
    assert "Model._predict" in cycle.summary
    # Callers call `model.predict(n)`: a cached_property would break them.
    assert "cached_property" not in cycle.fix
    assert "a dict on `self` keyed by the arguments" in cycle.fix
    assert "module-level function" in cycle.fix  # `_predict` never reads `self`
    assert not find_leaks(Model, cycle=False).found


class MemoModel:
    """`Model` with the fix the report gives applied: a dict on `self` keyed by the
    arguments, filled on the first call; `predict(n)` is called as before."""

    def __init__(self) -> None:
        self.weights = heavy()
        self._predict_results: dict[int, int] = {}

    def predict(self, n: int) -> int:
        if n not in self._predict_results:
            self._predict_results[n] = self._predict(n)
        return self._predict_results[n]

    def _predict(self, n: int) -> int:
        return n + len(self.weights)


def test_lru_cache_advice_applied_keeps_calls_and_frees() -> None:
    """The advised per-instance memo: same answers, calls unchanged, nothing left."""
    model = MemoModel()
    assert [model.predict(2), model.predict(2)] == [2 + len(model.weights)] * 2
    assert not find_leaks(MemoModel).found


class Scaling:
    def __init__(self) -> None:
        self.weights = heavy()

    @functools.cache  # noqa: B019 - the leak under test
    def factor(self, n: int) -> int:
        return n * 2


def scaling_factor(n: int) -> int:
    return n * 2


class ScalingFixed:
    """`Scaling` with the module-level fix: the method does not read `self`."""

    def __init__(self) -> None:
        self.weights = heavy()

    def factor(self, n: int) -> int:
        return cached_scaling_factor(n)


cached_scaling_factor = functools.cache(scaling_factor)


def scaling(*, fixed: bool) -> int:
    made = ScalingFixed() if fixed else Scaling()
    return made.factor(3)


def test_method_cache_not_reading_self_offers_a_module_function() -> None:
    """A cached method that never reads `self`: the module-level cache is offered, and
    applying it gives the same answer with nothing kept."""
    from whyalive.analysis.diagnose.patterns.caches import _cache_alternatives

    memo, module = _cache_alternatives(Scaling.factor.__wrapped__)
    assert "a dict on `self` keyed by the arguments" in memo
    assert "module-level function" in module
    assert "module-level" not in _cache_alternatives(MemoModel._predict)[1]  # reads `self`

    def value(self: object) -> int:
        return 1

    assert "an attribute of `self` set on the first call" in _cache_alternatives(value)[0]
    assert "module-level function" in _cache_alternatives(value)[1]

    def flags(self: object) -> list[int]:
        return [n for n in range(3) if self]  # inlined on 3.12+: a paired load of `self`

    assert _cache_alternatives(flags)[1] == ""

    class Hostile:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(name)

    assert _cache_alternatives(Hostile()) == (
        "the results on the instance instead (a dict on `self` keyed by the arguments, "
        "filled on the first call)",
        "",
    )
    assert scaling(fixed=True) == scaling(fixed=False) == 6
    Scaling.factor.cache_clear()
    assert not find_leaks(scaling, fixed=True).found


def class_level_cache(*, cycle: bool) -> None:
    class Encoder:
        def __init__(self) -> None:
            self.weights = heavy()

        @functools.cache  # noqa: B019 - the leak under test
        def features(self) -> int:
            return 1

    encoder = Encoder()
    encoder.features()
    if not cycle:
        Encoder.features.cache_clear()


def test_class_level_cache_of_a_local_class() -> None:
    """`@functools.cache` on a method: the cut is the cache entry, the fix says cache_clear."""
    cycle = only_cycle(class_level_cache, cycle=True)
    assert cycle.pattern == "method-cache"
    assert cycle.cut is not None
    assert [e.kind for e in cycle.cut.edges] == ["key"]
    assert "`Encoder.features.cache_clear()`" in cycle.fix
    assert not find_leaks(class_level_cache, cycle=False).found


# named by the family of the cut ----------------------------------------------------------


class Blob:
    pass


def self_attribute(*, cycle: bool) -> None:
    blob = Blob()
    blob.data = heavy()  # type: ignore[attr-defined]
    if cycle:
        blob.me = blob  # type: ignore[attr-defined]


def test_otherwise_unnamed_cycle_is_named_by_its_cut_family() -> None:
    """An object holding itself in `.me` is an attribute loop, cut at `.me`, fixed in code."""
    cycle = only_cycle(self_attribute, cycle=True)
    assert cycle.pattern == "attribute-loop"
    assert cut_names(cycle) == [".me"]
    assert "Blob" in cycle.summary
    assert "`blob.me = weakref.proxy(blob)`" in cycle.fix
    assert not find_leaks(self_attribute, cycle=False).found


# hostile objects -------------------------------------------------------------------------


class HostileMeta(type):
    """A metaclass whose `cls.__module__` runs user code that raises."""

    @property
    def __module__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("module")


class Hostile(metaclass=HostileMeta):
    def __getattr__(self, name: str) -> object:
        raise RuntimeError("getattr")

    def __getattribute__(self, name: str) -> object:
        raise RuntimeError("getattribute")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __repr__(self) -> str:
        raise RuntimeError("repr")


def hostile_cycle() -> None:
    first, second = Hostile(), Hostile()
    object.__setattr__(first, "peer", second)
    object.__setattr__(second, "peer", first)
    object.__setattr__(first, "data", heavy())


def test_hostile_objects_degrade_to_a_report() -> None:
    """Raising dunders and names inside a cycle never raise out of the analysis."""
    report = find_leaks(hostile_cycle)
    assert report.found
    assert report.total_bytes == heavy_bytes()
    assert report.cycles[0].pattern
    assert str(report)


class RaisingPattern:
    """A pattern that always fails, as a matcher tripping on a hostile object would."""

    name = "raising"
    title = "raises"

    def match(self, view: CycleView) -> None:
        raise RuntimeError("matcher bug")


def test_matcher_error_degrades_to_unrecognised() -> None:
    """When a matcher raises, the cycle is diagnosed as unrecognised with a cut."""
    items: list[object] = []
    items.append(items)
    graph = build_graph([items], KindResolver())
    try:
        view = view_cycle(graph, [0])
        diagnosis = diagnose(view, patterns=(RaisingPattern(),))
    finally:
        graph.release()
    assert diagnosis.match.pattern == "unrecognised"
    assert [e.name.name for e in diagnosis.cut] == ["[0]"]


# signatures ------------------------------------------------------------------------------


def test_signature_equal_for_the_same_cycle_made_twice() -> None:
    """The same code makes the same signature; different code a different one."""
    first = only_cycle(stage_backward, [heavy()]).signature
    second = only_cycle(stage_backward, [heavy(), heavy(), heavy()]).signature
    other = only_cycle(parity, [heavy()], fixed=False).signature
    tree_sig = only_cycle(tree, weak=False).signature
    assert first == second
    assert len({first, other, tree_sig}) == 3


SCENARIO = textwrap.dedent(
    """
    import numpy
    from whyalive import find_leaks

    def stage_backward(outputs):
        stage_output_tensors = []

        def extract_tensors_with_grads(value):
            if isinstance(value, list):
                for item in value:
                    extract_tensors_with_grads(item)
            else:
                stage_output_tensors.append(value)

        extract_tensors_with_grads(outputs)

    report = find_leaks(stage_backward, [numpy.zeros(N)])
    print(report.cycles[0].signature)
    """
)


def _signature_in_subprocess(size: int, tmp_path: object) -> str:
    script = SCENARIO.replace("N", str(size))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout.strip()


@needs_numpy
@needs_subprocess
def test_signature_equal_across_processes(tmp_path: object) -> None:
    """Two processes running the same scenario report the same signature."""
    assert _signature_in_subprocess(10, tmp_path) == _signature_in_subprocess(2000, tmp_path)


def test_allow_by_signature_and_by_pattern() -> None:
    """`check_leaks(allow=[signature])` and `allow=[pattern]` suppress exactly that cycle."""
    signature = only_cycle(stage_backward, [heavy()]).signature
    with check_leaks(allow=[signature]) as check:
        stage_backward([heavy()])
    assert check.report is not None
    assert not check.report.found
    with check_leaks(allow=["recursive-closure"]) as check:
        stage_backward([heavy()])
    assert check.report is not None
    assert not check.report.found
    with check_leaks(allow=[signature], on_leak="ignore") as check:
        tree(weak=False)
    assert check.report is not None
    assert check.report.found


# cuts ------------------------------------------------------------------------------------


def two_loops_view(objects: list[object]) -> tuple[object, CycleView]:
    """The view of one cycle made of every object in ``objects`` (graph kept by caller)."""
    graph = build_graph(objects, KindResolver())
    return graph, view_cycle(graph, list(range(len(objects))))


def test_multi_edge_cut_is_minimal() -> None:
    """When no single reference frees a cycle, the cut frees it and no smaller subset does."""
    from whyalive.analysis.cuts import _is_acyclic, choose_cut

    first: list[object] = []
    second: list[object] = []
    first.extend([second, first])
    second.append(first)
    graph, view = two_loops_view([first, second])
    try:
        cut, proof = choose_cut(view)
        assert proof.proven
        assert _is_acyclic(view.shown, view.edges, set(cut))
        assert len(cut) == 2
        for edge in cut:
            assert not _is_acyclic(view.shown, view.edges, set(cut) - {edge})
    finally:
        graph.release()  # type: ignore[attr-defined]
    first.clear()
    second.clear()


def test_cut_ties_are_broken_by_bytes_freed() -> None:
    """Of two equally user-written references, the one freeing the heavy object ranks first."""
    from whyalive.analysis.cuts import bytes_freed, choose_cut

    weights = heavy(1024)
    left: dict[str, object] = {}
    right: dict[str, object] = {"weights": weights}
    left["right"] = right
    right["left"] = left
    left["self"] = left
    graph, view = two_loops_view([left, right])
    try:
        nodes = graph.nodes  # type: ignore[attr-defined]
        index = {id(obj): n for n, obj in enumerate(nodes)}
        view.holder_paths = [([index[id(right)], index[id(weights)]], [])]
        view.heavy_bytes = {index[id(weights)]: 4096}
        edges = {e.name.name: e for e in view.edges}
        assert bytes_freed(view, {edges["['right']"]}) == 4096
        assert bytes_freed(view, {edges["['self']"]}) == 0
        cut, proof = choose_cut(view)
        assert proof.proven
        assert [e.name.name for e in cut] == ["['right']", "['self']"]
    finally:
        graph.release()  # type: ignore[attr-defined]
    left.clear()
    right.clear()
