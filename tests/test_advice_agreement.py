"""The cut, the Why and the fix_edit say the same thing, on the shapes an audit found them
disagreeing on (each scenario is also run, fixed, by tests/test_fix_proof.py)."""

from __future__ import annotations

import pytest

from scenarios.catalog import SCENARIOS, Scenario
from whyalive import check_leaks
from whyalive.report import CycleReport

pytest.importorskip("numpy")
BY_NAME = {s.name: s for s in SCENARIOS}


def cycle_of(name: str) -> CycleReport:
    scenario: Scenario = BY_NAME[name]
    with check_leaks(on_leak="ignore", record_allocations=scenario.record_allocations) as check:
        scenario.load()(*scenario.arguments())
    assert check.report is not None
    [cycle] = [*check.report.cycles, *check.report.uncollectable][:1]
    assert cycle.cut is not None
    assert cycle.cut.proven
    return cycle


def test_an_object_only_its_list_owns_is_never_made_weak() -> None:
    """Timers whose only owner is the linked list: the back references (`.prev`, the timer's
    `.node`) are cut and held weakly, never the node's `.value` nor the `self` handed to
    `append` (every timer would die at once)."""
    cycle = cycle_of("case_llist_timer_wheel")
    assert cycle.cut is not None
    assert "the attribute `.prev` of every `ListNode` object" in cycle.cut.description
    assert "the attribute `.node` of every `Timer` object" in cycle.cut.description
    assert ".value" not in cycle.cut.description
    assert cycle.fix_edit is not None
    assert "self.node = weakref.proxy(table.append(self))" in cycle.fix_edit.new
    assert "append(weakref.proxy(self))" not in cycle.fix_edit.new


def test_a_dict_entry_back_to_its_owner_is_the_cut_the_why_and_the_edit() -> None:
    """`LoggerAdapter(..., {"service": self})`: the entry is the back reference; the Why says
    the adapter points back through it, and the edit weakens that entry alone."""
    cycle = cycle_of("shapes.logger_adapter")
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == ["['service']"]
    assert "points back through `.extra['service']`" in cycle.explanation
    assert "through `.log`" not in cycle.explanation
    assert cycle.fix_edit is not None
    assert '{"service": weakref.proxy(self)}' in cycle.fix_edit.new


def test_a_future_reraised_synchronously_is_fixed_where_it_is_caught() -> None:
    """`set_exception(err)` then `run_until_complete(fut)`: dropping the traceback at
    `set_exception` leaves the re-raise's frames, so the proof removes the whole traceback
    and the edit drops it in the handler that caught the re-raise."""
    cycle = cycle_of("shapes.future_reraised")
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == ["__traceback__"]
    assert cycle.cut.source_line is not None
    assert cycle.cut.source_line.endswith("except ValueError as error:")
    assert cycle.fix_edit is not None
    assert "error.__traceback__ = None" in cycle.fix_edit.new
    assert "with_traceback" not in cycle.fix_edit.new


def test_a_future_handed_the_exception_is_fixed_where_it_is_handed() -> None:
    """When dropping the traceback at `set_exception` frees every heavy object, that is the
    edit, and the cut is only that part of the traceback (what the edit removes)."""
    cycle = cycle_of("case_cpython_asyncio_future_exception")
    assert cycle.cut is not None
    assert [e.name for e in cycle.cut.edges] == ["tb_next"]
    assert "from the frame of `Protocol.connection_lost` on" in cycle.cut.description
    assert cycle.fix_edit is not None
    assert "set_exception(exc.with_traceback(None))" in cycle.fix_edit.new


def test_a_task_whose_coroutine_raised_gets_an_edit() -> None:
    """No `set_exception` in the code: the handler of `await self.task` is named and drops
    the traceback (words a user can act on, and the edit)."""
    cycle = cycle_of("shapes.task_exception")
    assert cycle.fix_edit is not None
    assert "except ConnectionError as error:" in cycle.fix_edit.new
    assert "`error.__traceback__ = None`" in cycle.fix


def test_a_function_bound_from_outside_is_not_called_a_method_of_self() -> None:
    """`optimizer.step = types.MethodType(counted_step, optimizer)`: the Why names the
    function bound, and the holder as the statement spells it."""
    cycle = cycle_of("case_pytorch_lr_scheduler_methodtype")
    assert "Binding `counted_step` to the `Optimizer` object" in cycle.explanation
    assert "self.counted_step" not in cycle.explanation
    assert "`optimizer.step`" in cycle.explanation
