"""Explanations read right on every scenario: a true loop, a named pattern, code that parses."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import importlib.util
import inspect
import io
import logging
import re
import sys
import threading
import types
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scenarios import Trainer, heavy
from whyalive import find_leaks
from whyalive.report import CycleReport, Report

numpy = pytest.importorskip("numpy")


# scenarios: one leaking function per shape -----------------------------------------------


def recursive_closure() -> None:
    kept = [heavy(), heavy()]

    def walk(value: object) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        else:
            kept.append(value)

    walk([heavy()])


def mutual_recursion() -> None:
    data = heavy()

    def is_even(n: int) -> bool:
        return True if n == 0 else is_odd(n - 1) and data is not None

    def is_odd(n: int) -> bool:
        return False if n == 0 else is_even(n - 1)

    is_even(2)


class HookList:
    def __init__(self) -> None:
        self.activations = heavy()
        self.hooks = [self.on_step]

    def on_step(self) -> None:
        pass


class Scaler:
    def __init__(self) -> None:
        self.x = heavy()
        self.fn = lambda: self.x


class CachedModel:
    def __init__(self) -> None:
        self.weights = heavy()
        self.predict = functools.lru_cache(maxsize=None)(self._predict)

    def _predict(self, n: int) -> int:
        return n


class Step:
    def run(self) -> None:
        activations = heavy()  # noqa: F841 - held by the frame the traceback keeps
        try:
            raise ValueError("boom")
        except ValueError as error:
            self.error = error


def exception_in_local() -> None:
    data = heavy()  # noqa: F841 - held by the frame
    try:
        raise ValueError("boom")
    except ValueError as error:
        kept = error  # noqa: F841 - the leak under test


def frame_in_local() -> None:
    data = heavy()  # noqa: F841 - held by the frame
    frame = inspect.currentframe()  # noqa: F841 - the leak under test


def frame_from_getframe() -> None:
    data = heavy()  # noqa: F841 - held by the frame
    me = sys._getframe()  # noqa: F841 - the leak under test


class Probe:
    pass


def frame_on_an_object() -> None:
    data = heavy()  # noqa: F841 - held by the frame
    probe = Probe()
    probe.frame = sys._getframe()  # type: ignore[attr-defined]


def traceback_in_local() -> None:
    data = heavy()  # noqa: F841 - held by the frame
    try:
        raise ValueError("boom")
    except ValueError:
        tb = sys.exc_info()[2]  # noqa: F841 - the leak under test


class Wrapped:
    def __init__(self) -> None:
        self.weights = heavy()
        self.forward = self.traced(self.forward)  # type: ignore[method-assign]

    def traced(self, fn: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(fn)
        def wrapper(*args: object) -> object:
            return fn(*args)

        return wrapper

    def forward(self, x: object) -> object:
        return x


class Registry:
    pass


def self_in_own_list() -> None:
    registry = Registry()
    registry.data = heavy()  # type: ignore[attr-defined]
    registry.members = [registry]  # type: ignore[attr-defined]


def self_in_own_dict() -> None:
    registry = Registry()
    registry.data = heavy()  # type: ignore[attr-defined]
    registry.by_name = {"me": registry}  # type: ignore[attr-defined]


class Node:
    def __init__(self, parent: Node | None = None) -> None:
        self.parent = parent
        self.children: list[Node] = []
        self.data = heavy()
        if parent is not None:
            parent.children.append(self)


def parent_and_children() -> None:
    root = Node()
    Node(root)
    Node(root)


def list_containing_itself() -> None:
    items: list[object] = [heavy()]
    items.append(items)


def state_dict_referring_back() -> None:
    group: dict[str, object] = {"params": [heavy()]}
    group["intermediates"] = {"group": group}


def self_attribute() -> None:
    registry = Registry()
    registry.data = heavy()  # type: ignore[attr-defined]
    registry.me = registry  # type: ignore[attr-defined]


def closure_through_a_dict() -> None:
    box: dict[str, object] = {}
    data = heavy()

    def read() -> object:
        return data, box

    box["read"] = read


SCENARIOS: dict[str, tuple[Callable[[], object], str]] = {
    "recursive closure": (recursive_closure, "recursive-closure"),
    "mutual recursion": (mutual_recursion, "recursive-closure"),
    "bound method on self": (Trainer, "bound-method-on-self"),
    "bound method in a list on self": (HookList, "bound-method-on-self"),
    "lambda capturing self": (Scaler, "bound-method-on-self"),
    "lru_cache of a bound method": (CachedModel, "method-cache"),
    "exception on self": (lambda: Step().run(), "exception-traceback"),
    "exception in a local": (exception_in_local, "exception-traceback"),
    "inspect.currentframe in a local": (frame_in_local, "frame-kept"),
    "sys._getframe in a local": (frame_from_getframe, "frame-kept"),
    "frame on an object": (frame_on_an_object, "frame-kept"),
    "traceback in a local": (traceback_in_local, "frame-kept"),
    "functools.wraps of a bound method": (Wrapped, "wrapped-method-on-self"),
    "self in its own list": (self_in_own_list, "self-in-own-container"),
    "self in its own dict": (self_in_own_dict, "self-in-own-container"),
    "parent and children": (parent_and_children, "parent-child"),
    "list containing itself": (list_containing_itself, "self-containing-container"),
    "state dict referring back": (state_dict_referring_back, "self-containing-container"),
    "attribute loop": (self_attribute, "attribute-loop"),
    "closure loop": (closure_through_a_dict, "closure-in-captured-container"),
}


def backticked(text: str) -> list[str]:
    """The `...` spans of a sentence."""
    return re.findall(r"`([^`]+)`", text)


def assert_simple_closed_loop(cycle: CycleReport) -> None:
    """The loop: each hop a reference of the cycle, from the previous target, no repeats."""
    loop = cycle.loop
    assert loop, "no loop"
    real = {(e.source, e.target, e.name) for e in cycle.edges}
    for hop, following in zip(loop, (*loop[1:], loop[0]), strict=True):
        assert (hop.source, hop.target, hop.name) in real, hop
        assert hop.target == following.source, (hop, following)
    sources = [hop.source for hop in loop]
    assert len(sources) == len(set(sources)), sources
    if cycle.cut is not None:
        first = cycle.cut.edges[0]
        assert (first.source, first.target, first.name) in {
            (e.source, e.target, e.name) for e in loop
        }


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    """Each scenario's report, analysed once for the module."""
    return {name: find_leaks(make) for name, (make, _) in SCENARIOS.items()}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_cycle_is_named_looped_and_fixed_in_code(
    scenario: str, reports: dict[str, Report]
) -> None:
    """The scenario's cycle has its pattern, a simple closed loop, and a fix that parses."""
    report = reports[scenario]
    assert len(report.cycles) == 1, [c.pattern for c in report.cycles]
    [cycle] = report.cycles
    assert cycle.pattern == SCENARIOS[scenario][1]
    assert_simple_closed_loop(cycle)
    spans = backticked(cycle.fix)
    assert spans, cycle.fix
    for span in spans:
        ast.parse(span.strip())  # raises SyntaxError with the span in the message
    text = report.render("text")
    assert "[unrecognised]" not in text
    assert "->" not in " ".join(spans)


def test_frame_kept_in_its_own_local_says_del_that_local(reports: dict[str, Report]) -> None:
    """`frame = inspect.currentframe()`: cut the local, fix `del frame`, lint rule WAL303."""
    [cycle] = reports["inspect.currentframe in a local"].cycles
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == ["local frame"]
    assert "`del frame`" in cycle.fix
    assert cycle.lint_rule == "WAL303"
    [on_object] = reports["frame on an object"].cycles
    assert "`del probe.frame`" in on_object.fix


def test_wrapper_of_own_method_is_named_and_not_pasted_as_a_path(
    reports: dict[str, Report],
) -> None:
    """`self.forward = wraps(...)`: cut `.forward`, and the fix is code, not a holder path."""
    [cycle] = reports["functools.wraps of a bound method"].cycles
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == [".forward"]
    assert "`del self.forward`" in cycle.fix
    assert "__wrapped__" in cycle.explanation
    assert "__dict__" not in cycle.fix


def test_object_in_its_own_container_is_cut_at_the_entry(reports: dict[str, Report]) -> None:
    """`self.members = [self]`: cut the item that points back; the fix removes it."""
    [in_list] = reports["self in its own list"].cycles
    assert in_list.cut is not None
    assert [e.name for e in in_list.cut.edges] == ["[0]"]
    assert "`registry.members = [weakref.proxy(registry)]`" in in_list.fix
    assert "`registry.members.remove(registry)`" in in_list.fix
    [in_dict] = reports["self in its own dict"].cycles
    assert '`registry.by_name = {"me": weakref.proxy(registry)}`' in in_dict.fix


def test_closure_stored_in_the_container_it_captures(reports: dict[str, Report]) -> None:
    """A function stored in a dict it captures: the entry that holds it is the cut (a plain
    dict cannot be held weakly), and the fix says to pass `box` instead of capturing it."""
    [cycle] = reports["closure loop"].cycles
    assert cycle.cut is not None
    assert cycle.cut.description == "the entry `['read']` of a `dict`"
    assert "function `closure_through_a_dict.<locals>.read`" in cycle.summary
    assert "`box`" in cycle.fix


def line_of(text: str, path: str = __file__) -> str:
    """``test_explanations.py:N  text``: the line of ``path`` that starts with ``text``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    number, line = next(
        (i, ln.strip()) for i, ln in enumerate(lines, 1) if ln.strip().startswith(text)
    )
    return f"{Path(path).name}:{number}  {line}"


def test_cut_names_the_assignment_that_made_it(reports: dict[str, Report]) -> None:
    """`self.callback = self.on_step` is quoted exactly as the file has it; the lint rule
    that flags it is said next to the quote, never written into it."""
    [cycle] = reports["bound method on self"].cycles
    assert cycle.cut is not None
    assigned = line_of("self.callback = self.on_step", inspect.getsourcefile(Trainer) or "")
    assert cycle.cut.source_line == assigned
    assert cycle.cut.source_rule == "WAL201"
    place = assigned.split("  ")[0]
    text = reports["bound method on self"].render("text", width=1000)
    assert (f"made at {place}: `self.callback = self.on_step` (lint rule WAL201 flags it)") in text
    [closure] = reports["closure loop"].cycles
    assert closure.cut is not None
    assert closure.cut.source_line == line_of('box["read"] = read')
    [frame] = reports["frame on an object"].cycles
    assert frame.cut is not None
    assert frame.cut.source_line is not None
    assert frame.cut.source_line.startswith(
        line_of("probe.frame = sys._getframe()  # type: ignore[attr-defined]")[:-30]
    )


def self_by_update() -> None:
    registry = Registry()
    registry.data = heavy()  # type: ignore[attr-defined]
    vars(registry).update(me=registry)  # no statement names `.me`


def test_cut_says_so_when_no_line_stores_it() -> None:
    """An attribute set where no statement names it: no line is guessed, no edit is made;
    the report says what to look for and that recording allocations pins it."""
    report = find_leaks(self_by_update)
    [cycle] = report.cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is None
    assert cycle.fix_edit is None
    note = (
        "no function in the cycle shows where `.me` is stored: look for an assignment to "
        "`.me`; `check_leaks(record_allocations=True)` records where each payload was made"
    )
    assert cycle.cut.source_note == note
    assert f"({note})" in report.render("text", width=1000)


def test_recursive_closure_cut_points_at_its_def(reports: dict[str, Report]) -> None:
    """The closure variable of a recursive helper is made by its `def` line, quoted exactly."""
    [cycle] = reports["recursive closure"].cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line == line_of("def walk(value: object) -> None:")
    assert cycle.cut.source_rule == "WAL101"


def freed_by_reference_counting(run: Callable[[], weakref.ref[Any]]) -> bool:
    """Whether the object ``run`` returns a weak reference to is gone with the collector off:
    what a fix must achieve (reference counting frees the payload)."""
    gc.disable()
    try:
        return run()() is None
    finally:
        gc.enable()


def test_a_fix_on_a_line_of_several_statements_writes_the_one_it_changes(
    tmp_path: Path,
) -> None:
    """`a = A(); a.me = a`: the fix writes the store it makes weak, not the line's first
    statement, and its edit changes that store alone."""
    source = tmp_path / "one_line_module.py"
    source.write_text(
        "class Holder:\n"
        "    pass\n"
        "\n"
        "\n"
        "def make(payload):\n"
        "    holder = Holder(); holder.data = payload; holder.me = holder\n"
        "\n"
        "\n"
    )
    spec = importlib.util.spec_from_file_location(source.stem, source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[source.stem] = module  # the store is looked for in the holder's module
    try:
        spec.loader.exec_module(module)
        report = find_leaks(module.make, heavy())
    finally:
        del sys.modules[source.stem]
    [cycle] = report.cycles
    assert cycle.fix_edit is not None, cycle.fix
    assert "write `holder.me = weakref.proxy(holder)`" in cycle.fix, cycle.fix
    assert cycle.fix_edit.new.strip().splitlines()[-1].strip() == (
        "holder = Holder(); holder.data = payload; holder.me = weakref.proxy(holder)"
    )


def test_a_tree_of_one_class_says_which_node_points_back(reports: dict[str, Report]) -> None:
    """Parent and child of one class: not "the `Node` reaches the `Node`"."""
    [cycle] = reports["parent and children"].cycles
    assert "`Node` reaches the `Node`" not in cycle.explanation
    assert "A `Node` reaches another `Node`, which points back to it through `.parent`" in (
        cycle.explanation
    )
    assert cycle.summary.startswith("`Node` objects refer to each other"), cycle.summary


class ThreadOnSelf:
    def __init__(self) -> None:
        self.data = heavy()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        pass


def test_the_report_claims_a_lint_rule_only_where_it_flags_the_line(
    reports: dict[str, Report],
) -> None:
    """ "`whyalive lint` rule X finds it in source" only where X flags the quoted statement:
    not for `Thread(target=self.run)` (no rule sees that spelling), nor for parent links (no
    rule looks for them; WAL901 is about closures); still for `self.callback = self.on_step`."""
    threaded = find_leaks(ThreadOnSelf)
    [cycle] = threaded.cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None
    assert cycle.cut.source_rule is None
    assert "finds it in source" not in threaded.render("text", width=1000)
    [tree] = reports["parent and children"].cycles
    assert tree.lint_rule is None
    assert "finds it in source" not in reports["parent and children"].render("text", width=1000)
    flagged = reports["bound method on self"]
    [bound] = flagged.cycles
    assert bound.cut is not None
    rule = bound.cut.source_rule
    assert rule == "WAL201"
    assert f"`whyalive lint` rule {rule} finds it in source" in flagged.render("text", width=1000)


class Plain:
    def forward(self, x: object) -> object:
        return x


def add_logging(obj: Plain) -> Plain:
    @functools.wraps(type(obj).forward)
    def forward(*args: object) -> object:
        return type(obj).forward(obj, *args)

    obj.forward = forward  # type: ignore[method-assign]
    obj.data = heavy()  # type: ignore[attr-defined]
    return obj


def logged_model() -> None:
    add_logging(Plain()).forward(1)


def test_a_closure_made_by_functools_wraps_is_named_by_its_def() -> None:
    """`functools.wraps` copies `Plain.forward` into the wrapper's `__qualname__`: the
    closure variable is still `obj` in `add_logging`, where the `def` is, never in
    `Plain.forward` (a method the user would look for in vain)."""
    report = find_leaks(logged_model)
    assert len(report.cycles) == 1
    text = report.render("text", width=1000)
    assert "Cut: the closure variable `obj` in `add_logging`" in text, text
    assert "`Plain.forward`" not in text
    assert "function add_logging.<locals>.forward" in text


def errors_collected(clear: bool = False) -> weakref.ref[Any]:
    data = heavy()
    seen = weakref.ref(data)
    errors: list[BaseException] = []
    try:
        try:
            raise KeyError("first")
        except KeyError as first:
            errors.append(first)
            raise ValueError("second") from None
    except ValueError as second:
        errors.append(second)
    if clear:
        errors.clear()
    return seen


def test_exceptions_collected_in_a_list_are_cleared_together() -> None:
    """Two exceptions in one list, each closing a loop through the frame: advice for one item
    (`del errors[0]`) frees nothing; the fix clears the list, and that frees the payload."""
    [cycle] = find_leaks(errors_collected).cycles
    assert cycle.pattern == "exception-traceback"
    assert "`errors.clear()`" in cycle.fix, cycle.fix
    assert "errors[0]" not in cycle.fix
    assert freed_by_reference_counting(lambda: errors_collected(clear=True))


def error_read_after_try() -> weakref.ref[Any]:
    data = heavy()
    seen = weakref.ref(data)
    error = None
    try:
        raise OSError("missing")
    except OSError as caught:
        error = caught
    if error is not None:
        print(error, file=io.StringIO())
    return seen


def test_del_after_the_last_use_looks_past_the_block_that_bound_it() -> None:
    """`error = caught` in an `except` clause, read by the `if` after the `try`: `del error`
    goes after that `if` (inside the clause it would make the `if` raise
    UnboundLocalError), and a compound last use is named by its keyword and lines, not
    joined onto one line. Applied, the payload is freed."""
    [cycle] = find_leaks(error_read_after_try).cycles
    assert cycle.fix_edit is not None, cycle.fix
    lines = inspect.getsource(error_read_after_try).splitlines()
    first = inspect.getsourcelines(error_read_after_try)[1]
    use = first + next(i for i, line in enumerate(lines) if "if error is not None:" in line)
    assert cycle.fix_edit.line == use + 1  # the if's last line
    assert f"after its last use (the if statement at lines {use}-{use + 1})" in cycle.fix
    assert cycle.fix_edit.new.splitlines()[-1] == "    del error"
    # The edit applied to the function's own lines, run: the payload is freed.
    old = cycle.fix_edit.old.split("\n")
    at = cycle.fix_edit.line - first
    assert lines[at : at + len(old)] == old
    fixed = "\n".join([*lines[:at], *cycle.fix_edit.new.split("\n"), *lines[at + len(old) :]])
    namespace: dict[str, Any] = dict(globals())
    exec(compile(fixed, __file__, "exec"), namespace)
    assert freed_by_reference_counting(lambda: namespace["error_read_after_try"]())


class Encoder:
    def __init__(self) -> None:
        self.data = heavy()
        self.encoders = {"json": self.to_json, "csv": self.to_csv}

    def to_json(self) -> str:
        return "{}"

    def to_csv(self) -> str:
        return ""


def test_removal_of_one_of_several_entries_closing_the_loop_takes_the_container() -> None:
    """Two bound methods in one dict: `del self.encoders['json']` leaves `['csv']` closing the
    loop; the removal offered is the dict's own reference, which frees the payload."""
    [cycle] = find_leaks(Encoder).cycles
    assert "`del self.encoders`" in cycle.fix, cycle.fix
    assert "del self.encoders[" not in cycle.fix
    gc.disable()
    try:
        encoder = Encoder()
        freed = weakref.ref(encoder.data)
        del encoder.encoders
        del encoder
        assert freed() is None  # by reference counting alone
    finally:
        gc.enable()


class Notifier:
    def __init__(self, owner: object) -> None:
        self.owner = owner

    def __call__(self) -> None:
        pass


class Job:
    def __init__(self, callable_hook: bool = False) -> None:
        self.payload = heavy()
        self.hooks: dict[str, object] = (
            {"done": Notifier(self)} if callable_hook else {"done": self.on_done}
        )

    def on_done(self) -> None:
        pass


def test_a_users_own_hooks_dict_is_not_advised_as_torchs_registry() -> None:
    """`self.hooks = {...}`: no handle to remove and no parameters or buffers (torch's words),
    and a hook with no function name is not "the hook the hook"."""
    for callable_hook in (False, True):
        [cycle] = find_leaks(Job, callable_hook).cycles
        assert cycle.pattern == "hook-registry"
        text = f"{cycle.summary} {cycle.explanation} {cycle.fix}"
        assert "handle" not in text, text
        assert "parameters, buffers" not in text
        assert "the hook the hook" not in text
        assert "take it out of `.hooks` again" in cycle.fix


class Runner:
    def __init__(self, weak: bool = False) -> None:
        self.data = heavy()
        self.callback = types.MethodType(type(self).run, weakref.proxy(self)) if weak else self.run

    def run(self) -> None:
        pass


def test_a_weak_method_branch_is_left_as_it_is() -> None:
    """`MethodType(type(self).run, weakref.proxy(self)) if weak else self.run`: only the
    strong branch changes (no `type(weakref.proxy(self))` inside the weak one)."""
    [cycle] = find_leaks(Runner).cycles
    assert cycle.fix_edit is not None, cycle.fix
    assert "type(weakref.proxy(self))" not in cycle.fix_edit.new
    assert cycle.fix_edit.new.count("types.MethodType(type(self).run, weakref.proxy(self))") == 2


class LoadError(Exception):
    pass


def parse_blob(blob: object) -> None:
    raise ValueError("bad header")


def load_blob(blob: object) -> None:
    try:
        parse_blob(blob)
    except ValueError as error:
        raise LoadError("could not load") from error


def failures_kept(drop: bool = False) -> weakref.ref[Any]:
    blob = heavy()
    seen = weakref.ref(blob)
    failures: dict[str, Exception] = {}
    try:
        load_blob(blob)
    except LoadError as err:
        failures["blob"] = err
    if drop:  # the fix's own words
        del failures["blob"]
    return seen


def test_an_exception_that_chains_another_is_not_cut_at_its_own_traceback() -> None:
    """`raise LoadError(...) from error`, the LoadError kept: the Why names it (not the
    ValueError it chains), and no edit drops its own traceback, which leaves the chained
    exception's frames holding the payload; deleting the entry frees it."""
    [cycle] = find_leaks(failures_kept).cycles
    assert cycle.pattern == "exception-traceback"
    assert "Keeping the `LoadError`" in cycle.explanation
    assert cycle.fix_edit is None
    assert "`traceback.format_exception(failures['blob'])`" in cycle.fix, cycle.fix
    assert "`del failures['blob']`" in cycle.fix
    assert freed_by_reference_counting(lambda: failures_kept(drop=True))


class FilteredService:
    def __init__(self, weak: bool = False) -> None:
        self.data = heavy()
        self.seen = 0
        self.handler = logging.StreamHandler(io.StringIO())
        if weak:  # the fix's own words
            self.handler.addFilter(types.MethodType(type(self).only_mine, weakref.proxy(self)))
        else:
            self.handler.addFilter(self.only_mine)

    def only_mine(self, record: logging.LogRecord) -> bool:
        self.seen += 1
        return True


def test_a_method_handed_to_a_library_in_a_later_call_is_cut_at_that_call() -> None:
    """`self.handler.addFilter(self.only_mine)` after `self.handler = StreamHandler()`: the
    reference is made by the call that hands the method over (not by logging's own
    `self.filters.append(filter)`), and the fix rewrites that call. Applied, the filter still
    runs and the payload is freed."""
    [cycle] = find_leaks(FilteredService).cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None
    assert cycle.cut.source_line.endswith("self.handler.addFilter(self.only_mine)")
    bound = "types.MethodType(type(self).only_mine, weakref.proxy(self))"
    assert f"write `self.handler.addFilter({bound})`" in cycle.fix, cycle.fix

    def filtered() -> weakref.ref[Any]:
        fixed = FilteredService(weak=True)
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
        assert fixed.handler.filter(record)
        assert fixed.seen == 1
        return weakref.ref(fixed.data)

    assert freed_by_reference_counting(filtered)


class Scorer:
    def __init__(self, weak: bool = False) -> None:
        self.weights = heavy()
        if weak:  # the fix's own words
            self.predict = functools.lru_cache(maxsize=8)(
                lambda x, *, self=weakref.proxy(self): float(self.weights.sum()) * x  # noqa: B008
            )
        else:
            self.predict = functools.lru_cache(maxsize=8)(lambda x: float(self.weights.sum()) * x)


def scored(weak: bool = False) -> weakref.ref[Any]:
    scorer = Scorer(weak)
    scorer.predict(2)
    return weakref.ref(scorer.weights)


def test_an_lru_cache_around_a_closure_over_self_is_the_closure_loop() -> None:
    """`lru_cache(...)(lambda x: self.weights...)`: `self` is no argument the cache keeps; the
    loop runs through the function's closure (the closure pattern, not the method cache), and
    the removal offered is the attribute, not the wrapper's `__wrapped__` (the cache holds
    the function in a slot of its own too). The fix, applied, still computes and frees."""
    [cycle] = find_leaks(scored).cycles
    assert cycle.pattern != "method-cache"
    assert "keeps every argument" not in cycle.explanation
    assert "__wrapped__`" not in cycle.fix, cycle.fix
    assert "`del self.predict`" in cycle.fix
    assert freed_by_reference_counting(lambda: scored(weak=True))


class FailingTask:
    def __init__(self) -> None:
        self.data = heavy()
        self.exc_info = None

    def run(self) -> None:
        try:
            raise ZeroDivisionError
        except ZeroDivisionError:
            self.exc_info = sys.exc_info()


def failed_task() -> None:
    FailingTask().run()


def failed_task_dropped() -> weakref.ref[Any]:
    task = FailingTask()
    task.run()
    seen = weakref.ref(task.data)
    del task.exc_info  # the fix's own words
    return seen


def test_exc_info_kept_on_an_attribute_is_cut_at_that_attribute() -> None:
    """`self.exc_info = sys.exc_info()`: the cut is the attribute that holds the tuple (its
    store quoted), never the method's `self` (`del self` after a try block) nor the tuple's
    item; deleting the attribute frees the payload."""
    [cycle] = find_leaks(failed_task).cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None
    assert cycle.cut.source_line.endswith("self.exc_info = sys.exc_info()")
    assert "`del self.exc_info`" in cycle.fix, cycle.fix
    assert "`del self`" not in cycle.fix
    assert freed_by_reference_counting(lambda: failed_task_dropped())


class ClosedOnExit:
    def __init__(self, weak: bool = False) -> None:
        self.data = heavy()
        self.stack = contextlib.ExitStack()
        # The fix's own words: the method bound to a weak proxy of the object.
        close = types.MethodType(type(self).close, weakref.proxy(self)) if weak else self.close
        self.stack.callback(close)

    def close(self) -> None:
        pass


def test_a_method_a_library_wraps_is_handed_to_it_weakly() -> None:
    """`ExitStack.callback(self.close)`: the library's wrapper keeps the bound method. The fix
    speaks of what the user handed the library, not of moving a wrapper to the class body
    nor of deleting the library's private entry; applied, it frees the payload."""
    [cycle] = find_leaks(ClosedOnExit).cycles
    assert cycle.pattern == "wrapped-method-on-self"
    bound = "types.MethodType(type(self).close, weakref.proxy(self))"
    assert cycle.fix.startswith(f"Hand the library `{bound}`"), cycle.fix
    assert "class body" not in cycle.fix
    assert "_exit_callbacks" not in cycle.fix
    assert "`_exit_wrapper`" in cycle.explanation
    assert not find_leaks(ClosedOnExit, weak=True).cycles
    gc.disable()
    try:
        fixed = ClosedOnExit(weak=True)
        freed = weakref.ref(fixed.data)
        del fixed
        assert freed() is None  # by reference counting alone
    finally:
        gc.enable()


def exc_info_in_local(fixed: bool = False) -> weakref.ref[Any]:
    data = heavy()
    seen = weakref.ref(data)
    try:
        raise ZeroDivisionError
    except ZeroDivisionError:
        info = sys.exc_info()
    try:
        return seen
    finally:
        if fixed:
            del info


def test_exc_info_kept_in_a_local_is_deleted_whole_not_by_item() -> None:
    """`info = sys.exc_info()`: a tuple takes no `del info[1]`, and its traceback item closes
    the loop without the exception: the fix deletes the tuple, and that frees the payload."""
    report = find_leaks(exc_info_in_local)
    [cycle] = report.cycles
    assert cycle.pattern == "exception-traceback"
    assert "`del info` in a finally block" in cycle.fix, cycle.fix
    text = report.render("text", width=1000)
    assert "Cut: the local variable `info` of the frame of `exc_info_in_local`" in text, text
    assert "del info[" not in cycle.fix
    assert ".with_traceback(None)" not in cycle.fix  # the tuple holds the traceback itself
    assert freed_by_reference_counting(lambda: exc_info_in_local(fixed=True))


class Index:
    pass


def index_holding_itself() -> None:
    index = Index()
    index.data = heavy()  # type: ignore[attr-defined]
    index.me = index  # type: ignore[attr-defined]


def lambdas_in_their_list() -> None:
    data = heavy()
    handlers: list[Callable[[], object]] = []
    for i in range(3):
        handlers.append(lambda i=i: (data, handlers[i]))


def test_a_lambda_is_never_spelled_as_code() -> None:
    """`<lambda>` is no Python: a lambda kept in the list it captures is "the lambda" in the
    words, never a backticked name."""
    [cycle] = find_leaks(lambdas_in_their_list).cycles
    assert cycle.pattern == "closure-in-captured-container"
    assert "`<lambda>`" not in cycle.fix + cycle.explanation
    assert cycle.fix.startswith("Do not keep the lambda in the list it captures")
    for span in backticked(cycle.fix + cycle.explanation):
        ast.parse(span.strip())


class Watched:
    pass


class Watcher:
    def __init__(self, target: Watched) -> None:
        self.data = heavy()
        self.gone = 0
        self.ref = weakref.ref(target, self.on_gone)

    def on_gone(self, ref: object) -> None:
        self.gone += 1


class WeakWatcher(Watcher):
    def __init__(self, target: Watched) -> None:
        self.data = heavy()
        self.gone = 0
        # The fix's own words.
        self.ref = weakref.ref(target, types.MethodType(type(self).on_gone, weakref.proxy(self)))


WATCHED = Watched()  # alive for the whole run, as an application object is


def watching() -> None:
    Watcher(WATCHED)


def test_the_callback_of_a_weak_reference_is_the_strong_part_to_fix() -> None:
    """`weakref.ref(target, self.on_gone)`: the referent is weak, the callback is not; the fix
    hands the weak reference a weak method (the call's weak referent left as it is). Applied,
    the callback still fires and the payload is freed."""
    [cycle] = find_leaks(watching).cycles
    assert [e.name for e in cycle.loop if e.name == "__callback__"] == ["__callback__"]
    bound = "types.MethodType(type(self).on_gone, weakref.proxy(self))"
    assert f"write `self.ref = weakref.ref(target, {bound})`" in cycle.fix, cycle.fix

    def fired() -> weakref.ref[Any]:
        target = Watched()
        watcher = WeakWatcher(target)
        del target
        assert watcher.gone == 1
        return weakref.ref(watcher.data)

    assert freed_by_reference_counting(fired)


class PartsRegistry:
    def __init__(self) -> None:
        self.parts: dict[str, object] = {"layer": {"weight": heavy()}}
        self.parts["owner"] = self


def test_a_holding_under_a_members_attribute_dict_reads_from_its_object() -> None:
    """A dict the cycle runs through, kept as an object's attribute (`self.parts`, as a
    module keeps `_modules`): what it holds reads `self.parts['layer']['weight']`, not
    "['layer']['weight'] of `dict of 2`"."""
    [cycle] = find_leaks(PartsRegistry).cycles
    assert [holding.where for holding in cycle.holds] == ["self.parts['layer']['weight']"]


def test_a_name_opening_with_an_acronym_takes_the_article_of_its_spelled_letters() -> None:
    """ "an `LLNode`" (el), "an `SGD`", "an `HTTPServer`", "a `UUIDField`" (you), "a `URLError`";
    other names by their first letter ("an `Index`", "a `Node`")."""
    from whyalive.words.basics import a_code

    expected = {
        "LLNode": "an", "SGD": "an", "HTTPServer": "an", "RNN": "an", "MLP": "an",
        "UUIDField": "a", "URLError": "a", "GPTModel": "a",
        "Index": "an", "Node": "a", "list": "a", "Adam": "an",
    }  # fmt: skip
    for name, article in expected.items():
        assert a_code(name) == f"{article} `{name}`"


def test_articles_and_plurals_read_right() -> None:
    """Articles and plurals agree: "an `Index` object", "1 object", "1 reference cycle keeps"."""
    report = find_leaks(index_holding_itself)
    text = report.render("text")
    assert "an `Index` object" in text
    assert "a `Index`" not in text
    assert "1 objects" not in text
    assert ": 1 object, " in text
    assert "1 reference cycle keeps 1 array alive" in text


class TorchTrainer:
    def __init__(self) -> None:
        import torch

        self.model = torch.nn.Linear(64, 64)
        self.model.trainer = self


def test_a_link_set_on_a_library_object_is_the_one_pointing_back() -> None:
    """`self.model.trainer = self`: whatever `.model` says by its name, the link the user set
    on torch's module points back. The fix, its "Or clear it" and the Why all speak of
    `.trainer`, spelled as the statement spells its holder (`self.model`)."""
    pytest.importorskip("torch")
    [cycle] = find_leaks(TorchTrainer).cycles
    assert cycle.pattern == "parent-child"
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == [".trainer"]
    assert "write `self.model.trainer = weakref.proxy(self)`" in cycle.fix, cycle.fix
    assert "Or clear it (`self.model.trainer = None`) when the `Linear` is detached" in cycle.fix
    assert "the `Linear` points back through `.trainer`" in cycle.explanation


def dataset_holding_its_loader(weak: bool = False) -> object:
    from torch.utils.data import DataLoader, Dataset

    class Rows(Dataset):  # type: ignore[misc]
        def __init__(self) -> None:
            self.x = heavy()
            # The fix's own words: the loader holds a weak proxy of the dataset.
            self.loader = DataLoader(weakref.proxy(self) if weak else self, batch_size=4)

        def __len__(self) -> int:
            return 10

        def __getitem__(self, index: int) -> object:
            return self.x[index]

    return Rows()


def test_a_librarys_own_link_back_is_explained_and_the_users_link_is_fixed() -> None:
    """`self.loader = DataLoader(self)`: the loader's `.dataset` is torch's own attribute. The
    Why names it; the fix hands the loader a weak proxy at the user's line (a branch already
    weak left alone), and never offers to clear `.dataset`. Applied, the loader still
    iterates and the payload is freed."""
    pytest.importorskip("torch")
    [cycle] = find_leaks(dataset_holding_its_loader).cycles
    assert cycle.pattern == "parent-child"
    assert "points back through `.dataset`" in cycle.explanation
    # The branch that is weak already stays as it is (no proxy of a proxy).
    fixed_line = "self.loader = DataLoader(weakref.proxy(self) if weak else weakref.proxy(self), "
    assert f"write `{fixed_line}batch_size=4)`" in cycle.fix, cycle.fix
    assert "dataset = None" not in cycle.fix

    def loaded() -> weakref.ref[Any]:
        fixed: Any = dataset_holding_its_loader(weak=True)
        assert [len(batch) for batch in fixed.loader] == [4, 4, 2]
        return weakref.ref(fixed.x)

    assert freed_by_reference_counting(loaded)


class FitLoop:
    def __init__(self) -> None:
        self.model: Any = None


def connect(loop: FitLoop, model: Any) -> None:
    loop.model = model
    model.loop = loop


def connected() -> None:
    import torch

    connect(FitLoop(), torch.nn.Linear(64, 64))


def test_a_link_set_on_a_library_object_by_a_helper_is_found_in_the_users_module() -> None:
    """`model.loop = loop` in a helper function, on a torch module: the store is looked for
    in the module of the object it refers to (the user's), not only in torch's, so the cut
    and the fix are the link back, not the owner's forward `.model`."""
    pytest.importorskip("torch")
    [cycle] = find_leaks(connected).cycles
    assert cycle.cut is not None
    assert cycle.cut.source_line is not None, cycle.cut.source_note
    assert cycle.cut.source_line.endswith("model.loop = loop")
    assert "weakref.proxy(loop)" in cycle.fix


class Net:
    pass


class HookOnNet:
    def __init__(self) -> None:
        self.model = Net()
        self.model.hook = self  # type: ignore[attr-defined]
        self.data = heavy()


def test_another_cut_does_not_bring_the_patterns_own_clearing_advice() -> None:
    """The pattern's cut (`.model`, made inline: nothing to weaken) gives way to `.hook`; the
    pattern's "clear `self.model`" is about the other reference and is not appended."""
    [cycle] = find_leaks(HookOnNet).cycles
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == [".hook"]
    assert "write `self.model.hook = weakref.proxy(self)`" in cycle.fix, cycle.fix
    assert "self.model = None" not in cycle.fix


def test_cycles_made_by_torch_fx_tracing_read_right() -> None:
    """`torch.fx.symbolic_trace` leaves cycles: each named, looped, fixed in code that parses."""
    torch = pytest.importorskip("torch")

    class Small(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)

        def forward(self, x: object) -> object:
            return torch.relu(self.lin(x)) + 1

    def trace() -> None:
        torch.fx.symbolic_trace(Small())(torch.randn(2, 64))

    report = find_leaks(trace)
    assert report.cycles
    text = report.render("text")
    assert "---> " not in text  # no reference prints as an empty label
    for cycle in report.cycles:
        assert cycle.pattern != "unrecognised"
        assert_simple_closed_loop(cycle)
        for span in backticked(cycle.fix):
            ast.parse(span.strip())
        assert "`del self`" not in cycle.fix
        assert "->" not in " ".join(backticked(cycle.fix + cycle.explanation))
        # The fix is torch's to make: the text says so before the cut, as the plugin does.
        assert cycle.made_inside is not None
        assert f"Made inside {cycle.made_inside}, not in your code" in text


def lazy_pipeline() -> None:
    rows = [heavy(), heavy()]
    pipeline = None
    pipeline = map(lambda row: row.size + (pipeline is None), rows)  # noqa: C417
    next(pipeline)


def test_no_weak_reference_is_offered_to_what_cannot_have_one() -> None:
    """A closure over a `map` object (no weak references): the fix passes it as an argument
    or clears it, and never offers `weakref.ref(pipeline)`, which would raise TypeError."""
    [cycle] = find_leaks(lazy_pipeline).cycles
    assert cycle.pattern == "closure-loop"
    assert "weakref" not in cycle.fix
    assert "`pipeline = None`" in cycle.fix
    assert cycle.fix_edit is None
