"""whyalive.unittest.LeakCheckMixin: unittest tests that leak heavy objects fail, with why."""

from __future__ import annotations

import gc
import unittest
import weakref
from typing import ClassVar

import pytest

from whyalive.graph.heap import user_freeze_count
from whyalive.unittest import LeakCheckMixin, whyalive_skip

numpy = pytest.importorskip("numpy")

kept: list[weakref.ref[object]] = []


def make_cycle(nbytes: int) -> None:
    """A list that holds itself and an array of nbytes."""
    array = numpy.zeros(nbytes // 8)
    kept.append(weakref.ref(array))
    holder = [array]
    holder.append(holder)


class Cases(LeakCheckMixin, unittest.TestCase):
    __test__ = False  # run by the tests below, not collected by pytest

    def test_clean(self) -> None:
        numpy.zeros(10)

    def test_leaks(self) -> None:
        make_cycle(8000)

    @whyalive_skip
    def test_opted_out(self) -> None:
        make_cycle(64000)

    def test_after_opted_out(self) -> None:
        gc.collect()

    @unittest.skip("never runs")
    def test_skipped(self) -> None:
        make_cycle(8)


class SetUpLeaks(LeakCheckMixin, unittest.TestCase):
    __test__ = False
    whyalive_min_bytes = 0

    def setUp(self) -> None:
        make_cycle(800)

    def test_nothing(self) -> None:
        pass


class HighThreshold(LeakCheckMixin, unittest.TestCase):
    __test__ = False
    whyalive_min_bytes = 10**9

    def test_small_leak(self) -> None:
        make_cycle(8000)


class CollectsItsOwn(LeakCheckMixin, unittest.TestCase):
    __test__ = False
    freed: ClassVar[list[bool]] = []

    def test_collects_each_step(self) -> None:
        for _ in range(20):
            make_cycle(8000)
            gc.collect()
            # Without whyalive the collection frees the array: so it must with it.
            self.freed.append(kept[-1]() is None)


def run_case(case: type[unittest.TestCase], name: str) -> unittest.TestResult:
    """Run one test of a case class and return its result."""
    result = unittest.TestResult()
    case(name).run(result)
    return result


def test_leaking_test_fails_with_the_explanation() -> None:
    """A unittest test that leaks fails (not errors) and the message explains the cycle."""
    kept.clear()
    result = run_case(Cases, "test_leaks")
    assert not result.errors
    ((_, message),) = result.failures
    assert "whyalive: 7.8 KiB, cut list[1] at " in message
    assert " (self-containing-container)\n" in message
    assert "Leak found in " in message
    assert "Cases.test_leaks" in message
    assert "self-containing-container" in message
    assert [ref() for ref in kept] == [None], "the check kept the array alive"


@pytest.mark.whyalive_skip  # the opted-out case leaves garbage on purpose
def test_clean_skipped_and_opted_out_tests_pass() -> None:
    """Clean, unittest-skipped and whyalive_skip tests pass, and gc is restored after each."""
    frozen = user_freeze_count()
    for name in ("test_clean", "test_skipped", "test_opted_out"):
        result = run_case(Cases, name)
        assert result.wasSuccessful(), name
        assert user_freeze_count() == frozen
    gc.collect()


@pytest.mark.whyalive_skip  # the opted-out case leaves garbage on purpose
def test_earlier_garbage_is_not_blamed_on_the_next_test() -> None:
    """Garbage left by an unchecked test is not reported by the checked test after it."""
    run_case(Cases, "test_opted_out")
    assert run_case(Cases, "test_after_opted_out").wasSuccessful()
    gc.collect()


def test_leak_in_setup_fails_and_min_bytes_is_honoured() -> None:
    """A leak in setUp fails the test; whyalive_min_bytes above the leak lets it pass."""
    assert len(run_case(SetUpLeaks, "test_nothing").failures) == 1
    assert run_case(HighThreshold, "test_small_leak").wasSuccessful()


def test_a_tests_own_collections_free_as_without_whyalive_and_still_fail_it() -> None:
    """A test that leaks and collects at each of 20 steps sees each array freed by its own
    gc.collect(), as without the mixin, and still fails, the leak explained once."""
    kept.clear()
    CollectsItsOwn.freed.clear()
    result = run_case(CollectsItsOwn, "test_collects_each_step")
    assert CollectsItsOwn.freed == [True] * 20
    assert not result.errors
    ((_, message),) = result.failures
    assert "20 reference cycles (1 signature) keep 20 arrays alive" in message
    assert message.count("Cycle 1: ") == 1
