"""The standing adversarial suite: random graphs, overlapping checks, finalizer torture.

Each test asserts the same three things, on the C core and on the pure-Python
twin (the ``core`` fixture): nothing live is touched, everything reported is freed
afterwards, and the garbage collector's state is exactly what it was (the
autouse fixture in conftest.py checks debug flags, enabled state, thresholds,
callbacks, freeze count and gc.garbage after every test).
"""

from __future__ import annotations

import asyncio
import gc
import random
import threading
import weakref
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities import CAN_START_THREADS
from whyalive import check_leaks
from whyalive.capture.gcstate import OWNER
from whyalive.graph.heap import user_freeze_count
from whyalive.monitor import GcMonitor


class Node:
    """One vertex of a generated graph: its out-edges live in a list."""

    __slots__ = ("__weakref__", "payload", "refs")

    def __init__(self, payload: int) -> None:
        self.refs: list[Node] = []
        self.payload = bytearray(payload)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]], set[int], set[int]]:
    """(node count, edges, live roots, live nodes the block puts on gc.garbage)."""
    count = draw(st.integers(1, 14))
    node = st.integers(0, count - 1)
    edges = draw(st.lists(st.tuples(node, node), max_size=3 * count))
    roots = draw(st.sets(node, max_size=3))
    listed = draw(st.sets(node, max_size=3))
    return count, edges, roots, listed


def _reachable(count: int, edges: list[tuple[int, int]], roots: set[int]) -> set[int]:
    out: list[list[int]] = [[] for _ in range(count)]
    for source, target in edges:
        out[source].append(target)
    seen, stack = set(roots), list(roots)
    while stack:
        for target in out[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def _cyclic_components(count: int, edges: list[tuple[int, int]], keep: set[int]) -> int:
    """Oracle: components with a cycle among ``keep`` (mutual reachability, brute force)."""
    reach = {v: _reachable(count, [e for e in edges if e[0] in keep], {v}) for v in keep}
    succ = {v: {t for s, t in edges if s == v and t in keep} for v in keep}
    components: set[frozenset[int]] = set()
    for v in keep:
        component = frozenset(w for w in keep if w in reach[v] and v in reach[w])
        if len(component) > 1 or v in succ[v]:
            components.add(component)
    return len(components)


def _assert_untouched(live_nodes: dict[int, Node], expected_edges: dict[int, list[int]]) -> None:
    for index, node in live_nodes.items():
        assert [id(t) for t in node.refs] == expected_edges[index]
        assert len(node.payload) == 64


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(graph=graphs())
def test_random_graphs_leave_live_objects_and_gc_state_alone(
    core: str, graph: tuple[int, list[tuple[int, int]], set[int], set[int]]
) -> None:
    """Cycles are counted as the oracle says, live nodes keep their edges, garbage is freed."""
    count, edges, roots, listed = graph
    live = _reachable(count, edges, roots)
    listed &= live
    state = (gc.get_debug(), len(gc.callbacks), user_freeze_count() > 0)
    start = len(gc.garbage)
    refs: list[weakref.ref[Node]] = []
    kept: list[Node] = []
    try:
        with check_leaks(on_leak="ignore", all_cycles=True) as check:
            nodes = [Node(64) for _ in range(count)]
            for source, target in edges:
                nodes[source].refs.append(nodes[target])
            kept = [nodes[i] for i in sorted(roots)]
            gc.garbage.extend(nodes[i] for i in sorted(listed))
            refs = [weakref.ref(n) for n in nodes]
            expected_edges = {i: [id(t) for t in nodes[i].refs] for i in live}
            live_nodes = {i: nodes[i] for i in live}
            del nodes
        assert check.report is not None
        garbage = set(range(count)) - live
        assert check.report.cycle_count == _cyclic_components(count, edges, garbage)
        _assert_untouched(live_nodes, expected_edges)
        assert gc.garbage[start:] == [live_nodes[i] for i in sorted(listed)]
        assert (gc.get_debug(), len(gc.callbacks), user_freeze_count() > 0) == state
    finally:
        del gc.garbage[start:]
    del kept, live_nodes
    gc.collect()
    assert all(ref() is None for ref in refs)


class Leak:
    """A self-cycle holding a buffer, made by one block."""

    def __init__(self) -> None:
        self.me = self
        self.buffer = bytearray(1 << 16)


@pytest.fixture
def running_monitor() -> Iterator[GcMonitor]:
    """A monitor with a polling thread (where threads start), running the whole test."""
    monitor = GcMonitor(log=False, poll_interval=0.01 if CAN_START_THREADS else None)
    monitor.start()
    try:
        yield monitor
    finally:
        monitor.stop()


@pytest.mark.whyalive_skip  # runs its own overlapping checks next to a monitor
def test_overlapping_checks_in_threads_and_tasks_with_a_monitor(
    core: str, running_monitor: GcMonitor
) -> None:
    """Threads and asyncio tasks open and close checks in any order; state comes back whole.

    Where threads cannot start (WebAssembly), the tasks overlap the monitor alone.
    """
    debug = gc.get_debug()
    live = [bytearray(b"live") for _ in range(8)]
    snapshot = [bytes(item) for item in live]
    made: list[weakref.ref[Leak]] = []
    reports: list[object] = []
    errors: list[BaseException] = []

    def block(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(5):
            with check_leaks(on_leak="ignore") as check:
                made.append(weakref.ref(Leak()))
                if rng.random() < 0.5:
                    gc.collect(rng.choice([0, 1, 2]))
            reports.append(check.report)

    def in_thread(seed: int) -> None:
        try:
            block(seed)
        except BaseException as error:  # surfaced by the assertion below
            errors.append(error)

    async def task(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(5):
            check = check_leaks(on_leak="ignore")
            check.__enter__()
            made.append(weakref.ref(Leak()))
            await asyncio.sleep(rng.random() / 1000)
            check.__exit__(None, None, None)
            reports.append(check.report)

    async def tasks() -> None:
        await asyncio.gather(*(task(seed) for seed in range(4)))

    thread_seeds = range(4) if CAN_START_THREADS else range(0)
    threads = [threading.Thread(target=in_thread, args=(seed,)) for seed in thread_seeds]
    for thread in threads:
        thread.start()
    asyncio.run(tasks())
    for thread in threads:
        thread.join()
    assert not errors
    assert len(reports) == (len(threads) + 4) * 5
    assert gc.get_debug() == debug
    assert not OWNER.saving
    assert [bytes(item) for item in live] == snapshot
    running_monitor.poll()
    gc.collect()
    assert all(ref() is None for ref in made)


class Torturer:
    """A finalizer that does everything a finalizer should not."""

    live: list[object]
    made: list[weakref.ref[Leak]]

    def __init__(self, mode: int, live: list[object], made: list[weakref.ref[Leak]]) -> None:
        self.me = self
        self.mode = mode
        self.live = live
        self.made = made

    def __del__(self) -> None:
        mode = self.mode
        if mode == 0:
            gc.garbage.append(self)  # resurrects itself
        elif mode == 1:
            self.made.append(weakref.ref(Leak()))  # new cyclic garbage mid-collection
        elif mode == 2:
            gc.garbage.append(self.live)  # a live object onto gc.garbage
        elif mode == 3:
            gc.collect()  # a no-op inside a collection
        elif mode == 4:
            del gc.garbage[:0]  # touches the list it is being saved into
        else:
            raise RuntimeError("finalizer failed")


@pytest.mark.whyalive_skip  # its finalizers make and resurrect garbage on purpose
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_finalizer_torture(core: str) -> None:
    """Finalizers that resurrect, allocate cycles and touch gc.garbage harm nothing."""
    start = len(gc.garbage)
    live: list[object] = ["untouched"]
    made: list[weakref.ref[Leak]] = []
    tail: list[object] = []
    resurrected: list[Torturer] = []
    try:
        with check_leaks(on_leak="ignore", all_cycles=True) as check:
            for index in range(120):
                Torturer(index % 6, live, made)
        assert check.report is not None
        assert live == ["untouched"]
        tail = gc.garbage[start:]
        resurrected = [obj for obj in tail if isinstance(obj, Torturer)]
        assert len(resurrected) == 20
        assert all(obj is live for obj in tail if not isinstance(obj, Torturer))
        assert sum(obj is live for obj in tail) == 20
        assert all(obj.me is obj and obj.live is live for obj in resurrected)
    finally:
        for obj in gc.garbage[start:]:
            if isinstance(obj, Torturer):
                obj.me = None  # type: ignore[assignment]  # its __del__ has run: freed now
        del gc.garbage[start:]
        del tail, resurrected
    gc.collect()
    assert len(made) == 20
    assert all(ref() is None for ref in made)
