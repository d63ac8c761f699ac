"""Big strongly connected garbage: trees with parent pointers, rings, linked lists, chains.

Each report is read as a user reads it: the structure is named, the reference to
change is the one that frees it, the printed loop is a real closed loop of a
handful of lines, and the bytes are exact. The cut and the loop are also checked
against brute force on random strongly connected graphs.
"""

from __future__ import annotations

import ast
import gc
import itertools
import re
import sys
import weakref
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import whyalive
from capabilities import chain_length, needs_numpy, needs_subprocess, numpy
from scenarios import heavy, heavy_bytes
from whyalive.analysis import AnalysisOptions
from whyalive.analysis.cuts import _left_alive
from whyalive.analysis.diagnose import diagnose
from whyalive.analysis.edges import EdgeName, is_owned_part, name_edge
from whyalive.analysis.paths import closed_loop, view_cycle
from whyalive.analysis.structure import STRUCTURE_MIN_MEMBERS, find_structure
from whyalive.capture import GarbageWatch
from whyalive.graph import build_graph
from whyalive.graph import core as graphcore
from whyalive.kinds import KindResolver
from whyalive.report import CycleReport, Report
from whyalive.report.pipeline import analyze


class Node:
    """A tree node that knows its parent."""

    def __init__(self, parent: Node | None = None) -> None:
        self.parent = parent
        self.children: list[Node] = []


class Ring:
    """One link of a ring."""

    next: Ring


class Doubly:
    """One element of a doubly linked list."""

    prev: Doubly | None
    next: Doubly | None


def keep_attributes_apart(obj: object) -> None:
    """Give ``obj`` a dict of its own that it holds, as every instance has on 3.10 (3.13+
    can keep a dict asked for by ``vars()`` beside inline values it still reads)."""
    obj.__dict__ = dict(vars(obj))


class Tag:
    """A helper that keeps the node it tags (``node.tag = Tag(node)``)."""

    def __init__(self, node: Node) -> None:
        self.node = node


def make_tree(
    count: int, payload: object, materialise_dicts: bool = False, tag_every: int = 0
) -> weakref.ref[Node]:
    """A tree of ``count`` nodes, fan-out 3, holding ``payload`` at the root; with
    ``tag_every``, every so many nodes keep a `Tag` that points back to them."""
    root = Node()
    root.payload = payload  # type: ignore[attr-defined]
    nodes = [root]
    while len(nodes) < count:
        parent = nodes[(len(nodes) - 1) // 3]
        child = Node(parent)
        parent.children.append(child)
        nodes.append(child)
    for node in nodes[::tag_every] if tag_every else ():
        node.tag = Tag(node)  # type: ignore[attr-defined]
    if materialise_dicts:  # how every instance looks on Python 3.10
        for node in nodes:
            keep_attributes_apart(node)
            if hasattr(node, "tag"):
                keep_attributes_apart(node.tag)
    return weakref.ref(root)


def make_ring(count: int, payload: object, materialise_dicts: bool = False) -> weakref.ref[Ring]:
    """A ring of ``count`` objects, the first holding ``payload``."""
    first = Ring()
    first.payload = payload  # type: ignore[attr-defined]
    current = first
    for _ in range(count - 1):
        following = Ring()
        current.next = following
        if materialise_dicts:  # how every instance looks on Python 3.10
            keep_attributes_apart(current)
        current = following
    current.next = first
    if materialise_dicts:
        keep_attributes_apart(current)
    return weakref.ref(first)


def make_doubly_linked(count: int, payload: object) -> weakref.ref[Doubly]:
    """A doubly linked list of ``count`` elements, the head holding ``payload``."""
    head = Doubly()
    head.prev = None
    head.payload = payload  # type: ignore[attr-defined]
    current = head
    for _ in range(count - 1):
        following = Doubly()
        following.prev = current
        current.next = following
        current = following
    current.next = None
    return weakref.ref(head)


def analyse(make: Any, *args: Any) -> tuple[Report, weakref.ref[Any]]:
    """Make garbage with ``make``, capture and analyse it as check_leaks does, then free it."""
    watch = GarbageWatch()
    watch.begin()
    try:
        ref = make(*args)
        captured = watch.end()
        try:
            report = analyze(captured.objects)
        finally:
            captured.release()
    finally:
        watch.finish()
    return report, ref


def loop_is_closed(cycle: CycleReport) -> bool:
    """Every hop starts where the last ended, and the loop ends where it began."""
    loop = cycle.loop
    if not loop:
        return False
    for index in range(1, len(loop)):
        if cycle.loop_hidden and index == cycle.loop_hidden_after:
            continue  # the gap: hops left out of a long loop
        if loop[index].source != loop[index - 1].target:
            return False
    return loop[-1].target == loop[0].source


def backticked_code_parses(text: str) -> bool:
    """Every `...` span in a sentence is a Python expression or statement."""
    for span in re.findall(r"`([^`]+)`", text):
        try:
            ast.parse(span.strip())
        except SyntaxError:
            return False
    return True


def cycle_section(text: str) -> list[str]:
    """The lines of the printed ``Loop:`` section."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Loop:")
    section = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        section.append(line)
    return section


@pytest.mark.parametrize("materialise_dicts", [False, True], ids=["inline", "dicts"])
def test_tree_with_parent_pointers_is_named_with_its_weak_reference_fix(
    materialise_dicts: bool,
) -> None:
    """A 3,000-node tree is explained by `Node`, `.parent` and `.children`, cut at `.parent`."""
    payload = heavy(1024)
    report, ref = analyse(make_tree, 3000, payload, materialise_dicts)
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.pattern == "parent-child"
    assert cycle.total_bytes == heavy_bytes(1024)
    assert cycle.member_count == 3000 + 1000  # nodes and their children lists
    assert cycle.member_types == {"Node object": 3000, "list": 1000}
    assert "`Node` objects" in cycle.summary
    assert "`.parent`" in cycle.summary
    assert "`.children`" in cycle.summary
    assert cycle.cut is not None
    assert "the attribute `.parent` of every `Node` object (2,999 references)" in (
        cycle.cut.description
    )
    assert "`self.parent = (weakref.proxy(parent) if parent is not None else None)`" in (cycle.fix)
    assert backticked_code_parses(cycle.fix)
    assert loop_is_closed(cycle)
    assert cycle.loop[0].name == ".parent"
    text = report.render("text")
    section = cycle_section(text)
    assert len(section) <= 6
    assert "more objects in the same cycle" in section[-1]


def test_ring_is_cut_at_its_only_link_and_its_loop_is_elided() -> None:
    """A 5,000-object ring names `.next`, prints a short loop with a gap, exact bytes."""
    count = chain_length(5000)
    report, ref = analyse(make_ring, count, heavy(1024))
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.pattern == "linked-structure"
    assert cycle.member_count == count
    assert cycle.total_bytes == heavy_bytes(1024)
    assert cycle.cut is not None
    assert "`.next`" in cycle.cut.description
    assert cycle.loop_hidden + len(cycle.loop) == count
    assert loop_is_closed(cycle)
    assert all(edge.name == ".next" for edge in cycle.loop)
    section = cycle_section(report.render("text"))
    assert any(f"... {cycle.loop_hidden:,} more references ..." in line for line in section)
    assert cycle.loop_hidden > count - 100
    assert len(section) <= 10


@pytest.mark.parametrize("materialise_dicts", [False, True], ids=["inline", "dicts"])
def test_a_rings_store_is_searched_for_once_per_file(
    monkeypatch: pytest.MonkeyPatch, materialise_dicts: bool
) -> None:
    """The line that stores `.next` from outside the class (`current.next = following`) is
    searched for in the module's tree by the first analysis only; the next one (another
    check of the same code) finds it, and the same report, without walking the tree. With
    instance dicts (every instance on 3.10) the reference is still the `Ring`'s: its
    module is the one searched."""
    from whyalive.analysis import sourcelines

    searched: list[object] = []
    outside_store = sourcelines.outside_store

    def counting(parsed: Any, target: Any) -> Any:
        searched.append(target)
        return outside_store(parsed, target)

    monkeypatch.setattr(sourcelines, "outside_store", counting)
    monkeypatch.setattr(sourcelines, "_recent", type(sourcelines._recent)())  # parsed afresh
    first_report = analyse(make_ring, 300, heavy(1024), materialise_dicts)[0]
    assert len(searched) == 1
    reports = [first_report, analyse(make_ring, 300, heavy(1024), materialise_dicts)[0]]
    assert len(searched) == 1
    first, second = (report.cycles[0] for report in reports)
    assert first.fix == second.fix
    assert first.cut == second.cut


class Slot:
    """A list node holding one timer (`.value`), linked both ways."""

    prev: Slot | None
    next: Slot | None

    def __init__(self, value: Timer) -> None:
        self.value = value


class Timer:
    """A timer that knows the list node holding it."""

    node: Slot


def make_timer_list(count: int, payload: object, materialise_dicts: bool) -> weakref.ref[Slot]:
    """``count`` timers in a doubly linked list of slots, each timer pointing back to its slot."""
    slots = [Slot(Timer()) for _ in range(count)]
    slots[0].value.payload = payload  # type: ignore[attr-defined]
    for before, after in itertools.pairwise(slots):
        before.next, after.prev = after, before
    slots[0].prev = slots[-1].next = None
    for slot in slots:
        slot.value.node = slot
        if materialise_dicts:  # how every instance looks on Python 3.10
            keep_attributes_apart(slot)
            keep_attributes_apart(slot.value)
    return weakref.ref(slots[0])


@pytest.mark.parametrize("materialise_dicts", [False, True], ids=["inline", "dicts"])
def test_each_reference_is_named_by_the_class_that_holds_it(materialise_dicts: bool) -> None:
    """Two classes in one structure: `.node` is the `Timer`'s, `.prev` the `Slot`'s, also
    when attributes live in instance dicts (3.10), where the holder is a `dict` object."""
    report, ref = analyse(make_timer_list, 1000, heavy(1024), materialise_dicts)
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.cut is not None
    assert "the attribute `.node` of every `Timer` object (1,000 references)" in (
        cycle.cut.description
    )
    assert "the attribute `.prev` of every `Slot` object (999 references)" in (
        cycle.cut.description
    )
    assert "1,000 `Slot` objects and 1,000 `Timer` objects form one cycle" in cycle.summary
    assert "its attribute `.payload` holds 1 " in cycle.summary  # an array, or a bytearray


class Group:
    """A group keeping its subgroups by name in a plain dict, each knowing its parent."""

    def __init__(self, parent: Group | None) -> None:
        self.parent = parent
        self.members: dict[str, Group] = {}


def make_named_groups(count: int, payload: object, materialise_dicts: bool) -> weakref.ref[Group]:
    """``count`` groups, each a member of its parent's dict under an identifier name."""
    root = Group(None)
    root.payload = payload  # type: ignore[attr-defined]
    groups = [root]
    while len(groups) < count:
        parent = groups[(len(groups) - 1) // 4]
        child = Group(parent)
        parent.members[f"g{len(parent.members)}"] = child
        groups.append(child)
    if materialise_dicts:
        for group in groups:
            keep_attributes_apart(group)
    return weakref.ref(root)


@pytest.mark.parametrize("materialise_dicts", [False, True], ids=["inline", "dicts"])
def test_a_plain_dicts_entries_stay_entries_beside_instance_dicts(materialise_dicts: bool) -> None:
    """With instance dicts as objects, an attribute dict's keys read as attributes, but the
    entries of a dict the user made (`members["g0"]`) are still entries."""
    report, ref = analyse(make_named_groups, 2000, heavy(1024), materialise_dicts)
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.member_types == {"Group object": 2000, "dict": 500}
    linked_by = cycle.summary.split("linked by ")[1].split(";")[0]
    assert "`.parent`" in linked_by
    assert "`['g" in linked_by
    assert "`.g" not in linked_by


@pytest.mark.parametrize("materialise_dicts", [False, True], ids=["inline", "dicts"])
def test_two_classes_with_one_reference_each_are_cut_apart(materialise_dicts: bool) -> None:
    """A leaf's `.parent` and a tag's `.node` are each the one reference its holder has
    into the tree: two labels of the cut, also where both live in instance dicts, whose
    references would otherwise be one class (a dict's only reference to a `Node`)."""
    report, ref = analyse(make_tree, 1000, heavy(1024), materialise_dicts, 10)
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.cut is not None
    assert "the attribute `.parent` of every `Node` object (999 references)" in (
        cycle.cut.description
    )
    assert "the attribute `.node` of every `Tag` object (100 references)" in (cycle.cut.description)


def test_doubly_linked_list_is_cut_at_prev_with_a_two_hop_loop() -> None:
    """A doubly linked list's cut is `.prev` (the back link); its loop is prev then next."""
    report, ref = analyse(make_doubly_linked, chain_length(4000), heavy(512))
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.cut is not None
    assert "`.prev`" in cycle.cut.description
    assert [edge.name for edge in cycle.loop] == [".prev", ".next"]
    assert loop_is_closed(cycle)
    assert cycle.total_bytes == heavy_bytes(512)


def test_chain_of_cycles_blames_each_heavy_object_on_its_nearest_cycle() -> None:
    """10,000 self-referencing objects in a chain: only the one holding the array is reported."""

    class Link:
        pass

    count = chain_length(10_000)

    def make() -> weakref.ref[Any]:
        first = previous = Link()
        first.me = first  # type: ignore[attr-defined]
        for _ in range(count):
            link = Link()
            link.me = link  # type: ignore[attr-defined]
            previous.next = link  # type: ignore[attr-defined]
            previous = link
        previous.payload = heavy(200)  # type: ignore[attr-defined]
        return weakref.ref(first)

    report, ref = analyse(make)
    assert ref() is None
    (cycle,) = report.cycles
    assert cycle.occurrences == 1
    assert cycle.total_bytes == heavy_bytes(200)
    assert report.cycle_count == count + 1
    assert report.light_cycle_count == count


def test_min_bytes_filters_before_a_structure_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A big cycle below min_bytes is never summarised (the costly step is skipped)."""
    calls: list[int] = []

    def spy(*args: Any) -> Any:
        calls.append(1)
        return find_structure(*args)

    monkeypatch.setattr("whyalive.analysis.find_structure", spy)
    watch = GarbageWatch()
    watch.begin()
    try:
        make_tree(1000, heavy(10))
        captured = watch.end()
        try:
            report = analyze(captured.objects, AnalysisOptions(min_bytes=heavy_bytes(10) + 1))
        finally:
            captured.release()
    finally:
        watch.finish()
    assert not report.cycles
    assert not calls
    assert any("below min_bytes" in note for note in report.notes)


def test_long_analysis_says_what_it_does_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """Past the progress threshold each stage is announced on stderr; quiet otherwise."""
    watch = GarbageWatch()
    watch.begin()
    try:
        make_ring(3000, heavy(8))
        captured = watch.end()
        try:
            analyze(captured.objects, AnalysisOptions(progress_after=0.0))
            loud = capsys.readouterr().err
            analyze(captured.objects)
            quiet = capsys.readouterr().err
        finally:
            captured.release()
    finally:
        watch.finish()
    assert re.match(r"whyalive: analysing [36],000 garbage objects", loud)  # 6,000: 3.10's dicts
    assert re.search(r"reading a cycle of [36],000 objects as a structure", loud)
    assert "writing the report" in loud
    assert quiet == ""


def test_check_leaks_on_a_tree_reports_and_frees_it() -> None:
    """check_leaks() explains a tree left as garbage in its block, and frees it."""
    payload = heavy(2048)
    with whyalive.check_leaks(on_leak="ignore") as check:
        ref = make_tree(2500, payload)
    del payload
    assert ref() is None
    (cycle,) = check.report.cycles
    assert cycle.pattern == "parent-child"
    assert cycle.total_bytes == heavy_bytes(2048)


# ------------------------------------------------------------ property tests


class Vertex:
    """A node of a random strongly connected graph; its references are attributes."""


ATTRIBUTES = ("nxt", "a", "b", "parent")


def random_graph(size: int, extra: list[tuple[int, int, int]], materialise: bool) -> None:
    """Garbage: a ring through every vertex (so one component) plus extra attribute links."""
    vertices = [Vertex() for _ in range(size)]
    for index, vertex in enumerate(vertices):
        vertex.nxt = vertices[(index + 1) % size]  # type: ignore[attr-defined]
    for source, target, attribute in extra:
        setattr(vertices[source % size], ATTRIBUTES[1 + attribute % 3], vertices[target % size])
    if materialise:  # instance dicts as separate objects, as on Python 3.10
        for vertex in vertices:
            vars(vertex)


def real_reference(source: object, target: object) -> bool:
    """``target`` is among ``source``'s referents, or inside its instance dict."""
    for referent in gc.get_referents(source):
        if referent is target:
            return True
        if is_owned_part(source, referent) and any(r is target for r in gc.get_referents(referent)):
            return True
    return False


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # On Pyodide (3.14.2) one random run failed after earlier examples (seed
    # 10516206851093286389121159370836571719); its falsifying example alone passes there and
    # everywhere. Not understood yet: there the examples are fixed, so CI says the same each run.
    derandomize=sys.platform == "emscripten",
)
@given(
    size=st.integers(min_value=2, max_value=60),
    extra=st.lists(
        st.tuples(st.integers(0, 59), st.integers(0, 59), st.integers(0, 2)), max_size=90
    ),
    materialise=st.booleans(),
)
def test_structure_cut_breaks_the_component_and_loop_is_real(
    size: int, extra: list[tuple[int, int, int]], materialise: bool
) -> None:
    """On random strongly connected garbage the verified cut leaves no loop; the loop is real."""
    watch = GarbageWatch()
    watch.begin()
    try:
        random_graph(size, extra, materialise)
        captured = watch.end()
        graph = build_graph(captured.objects, KindResolver())
        try:
            _check_structure(graph)
        finally:
            graph.release()
            captured.release()
    finally:
        watch.finish()


def _check_structure(graph: Any) -> None:
    component_of, _, _ = graphcore.find_components(graph.offsets, graph.targets)
    sizes: dict[int, int] = {}
    for node in range(len(graph)):
        sizes[component_of[node]] = sizes.get(component_of[node], 0) + 1
    component = max(sizes, key=lambda c: sizes[c])
    members = [i for i in range(len(graph)) if component_of[i] == component]
    graph.open_workspace(component_of)
    structure = find_structure(graph, members)
    assert structure.member_count == sum(type(graph.nodes[n]) is Vertex for n in members)
    names = {link.name for link in structure.cut}
    owned = {
        v
        for u in members
        for v in graph.successors(u)
        if is_owned_part(graph.nodes[u], graph.nodes[v])
    }
    # Brute force: name every reference (an instance dict's keys read as attributes)
    # and drop those with a cut name.
    left = set()
    for u in members:
        for v in graph.successors(u):
            if component_of[v] != component:
                continue
            name = name_edge(graph.nodes[u], graph.nodes[v])
            if u in owned and name.kind == "key":
                name = EdgeName("attribute", "." + name.name[2:-2])
            if name not in names:
                left.add((u, v))
    if structure.verified:
        assert not _loop_left(set(members), left)
    loop = structure.loop
    assert loop
    for edge in loop:
        assert real_reference(graph.nodes[edge.source], graph.nodes[edge.target])
    if not structure.loop_hidden:
        assert_closed_simple_loop(loop)
    # The small-cycle path on the same component: named patterns, one verified cut.
    view = view_cycle(graph, members)
    diagnosis = diagnose(view)
    assert diagnosis.cut
    assert not _left_alive(view.shown, view.edges, set(diagnosis.cut))
    loop = closed_loop(view, diagnosis.cut[0])
    assert diagnosis.cut[0] in loop
    assert_closed_simple_loop(loop)
    for edge in loop:
        assert real_reference(graph.nodes[edge.source], graph.nodes[edge.target])


def assert_closed_simple_loop(loop: list[Any]) -> None:
    """Each hop leaves where the last arrived, no object twice, back to the start."""
    assert loop[-1].target == loop[0].source
    assert all(b.source == a.target for a, b in itertools.pairwise(loop))
    assert len({edge.source for edge in loop}) == len(loop)


def _loop_left(nodes: set[int], edges: set[tuple[int, int]]) -> bool:
    indegree = dict.fromkeys(nodes, 0)
    for _, v in edges:
        indegree[v] += 1
    queue = [n for n, d in indegree.items() if d == 0]
    peeled = 0
    while queue:
        node = queue.pop()
        peeled += 1
        for u, v in edges:
            if u == node:
                indegree[v] -= 1
                if indegree[v] == 0:
                    queue.append(v)
    return peeled != len(nodes)


def test_threshold_sends_big_components_to_the_structure_reader() -> None:
    """Components at the threshold are read as structures; smaller ones get named patterns."""
    report, _ = analyse(make_ring, STRUCTURE_MIN_MEMBERS, heavy(4))
    assert report.cycles[0].structure is not None
    # Half the threshold: on Python 3.10 each object also has its instance dict.
    report, _ = analyse(make_ring, STRUCTURE_MIN_MEMBERS // 2 - 1, heavy(4))
    assert report.cycles[0].structure is None
    assert loop_is_closed(report.cycles[0])


def test_every_renderer_shows_a_long_loop_with_its_gap() -> None:
    """Text, DOT, JSON and HTML of a ring keep the loop's ends and say how much is left out."""
    report, _ = analyse(make_ring, 1000, heavy(4))
    (cycle,) = report.cycles
    gap = f"{cycle.loop_hidden:,} more references"
    assert cycle.loop_hidden + len(cycle.loop) == 1000
    assert gap in report.render("text")
    assert gap in report.render("dot")
    assert Report.from_dict(report.to_dict()) == report
    assert report.to_dict()["cycles"][0]["loop_hidden"] == cycle.loop_hidden
    assert "Ring" in report.render("html")


@needs_numpy
@needs_subprocess
@pytest.mark.parametrize("frozen_before", [False, True], ids=["plain", "user-froze"])
def test_pytest_plugin_explains_a_big_tree_instead_of_hanging(
    pytester: pytest.Pytester, frozen_before: bool
) -> None:
    """Under --whyalive a test that leaves a 20,000-node tree fails at once, with `.parent`.

    Also when objects were frozen before the session (as Python 3.12 does at startup),
    although the tree was promoted to the oldest generation while the test ran.
    """
    if frozen_before:
        pytester.makeconftest("import gc\n\ngc.freeze()\n")
    pytester.makepyfile(
        test_tree="""
        import numpy as np

        class Node:
            def __init__(self, parent=None):
                self.parent = parent
                self.children = []

        def test_builds_a_tree():
            root = Node()
            root.payload = np.zeros(1 << 16)
            nodes = [root]
            while len(nodes) < 20_000:
                parent = nodes[(len(nodes) - 1) // 3]
                child = Node(parent)
                parent.children.append(child)
                nodes.append(child)
        """
    )
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*parent and child refer to each other*", "*the attribute `.parent` of every `Node`*"]
    )


def _work_for_heavy_objects_in_one_list(
    monkeypatch: pytest.MonkeyPatch, kind: str, count: int
) -> dict[str, Any]:
    """Analyse one cycle holding ``count`` arrays (or tensors) in one list; count the
    per-object work."""
    from whyalive.analysis import edge_namer, edges, paths
    from whyalive.kinds.numpy import NumpyKind
    from whyalive.kinds.torch import TorchKind
    from whyalive.report.builder import cycles, nodes

    make = numpy.zeros if kind == "arrays" else sys.modules["torch"].zeros

    work: dict[str, Any] = {"named paths": 0, "node names": 0, "describe": 0}
    work.update({"list scans": [], "list reads": [], "briefs": []})
    counted = {
        (paths, "named_path", "named paths"),
        (nodes, "name_node", "node names"),
        (NumpyKind if kind == "arrays" else TorchKind, "describe", "describe"),
    }
    for owner, name, key in counted:
        original = getattr(owner, name)

        def counting(*args: Any, _original: Any = original, _key: str = key) -> Any:
            work[_key] += 1
            return _original(*args)

        monkeypatch.setattr(owner, name, counting)
    heavy_brief, container_names, name_one = (
        cycles.heavy_brief,
        edge_namer._container_names,
        edges._name_edge,
    )
    monkeypatch.setattr(cycles, "heavy_brief", lambda d: work["briefs"].append(d) or heavy_brief(d))
    monkeypatch.setattr(
        edge_namer,
        "_container_names",
        lambda source: work["list reads"].append(id(source)) or container_names(source),
    )

    def counting_name_edge(source: Any, target: object) -> Any:
        if type(source) is list:
            work["list scans"].append(len(source))
        return name_one(source, target)

    monkeypatch.setattr(edges, "_name_edge", counting_name_edge)
    watch = GarbageWatch()
    watch.begin()
    holder: dict[str, object] = {"arrays": [make(4) for _ in range(count)]}
    holder["self"] = holder
    work["list"] = id(holder["arrays"])
    del holder
    captured = watch.end()
    try:
        work["report"] = analyze(captured.objects, AnalysisOptions(progress_after=None))
    finally:
        captured.release()
        watch.finish()
    return work


@pytest.mark.parametrize("kind", [pytest.param("arrays", marks=needs_numpy)])
def test_a_list_of_many_heavy_objects_costs_work_per_container_not_per_array(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """One cycle holding 2,000 or 20,000 arrays (or tensors) in one list: one holder path,
    one holding with the range of their indices, one description, a few listed in the
    heavy table; the count of each kind of per-object work is the same for both sizes
    (bytes stay exact, each storage counted once)."""
    small = _work_for_heavy_objects_in_one_list(monkeypatch, kind, 2_000)
    monkeypatch.undo()
    big = _work_for_heavy_objects_in_one_list(monkeypatch, kind, 20_000)
    for work, count in ((small, 2_000), (big, 20_000)):
        report = work["report"]
        assert report.heavy_count == count
        assert report.total_bytes == count * (32 if kind == "arrays" else 16)
        assert len(report.heavy_objects) + report.heavy_objects_unlisted == count
        assert sum(h.counted for h in report.heavy_objects) == len(report.heavy_objects)
        [cycle] = report.cycles
        [holding] = cycle.holds
        assert holding.where == f"['arrays'][0..{count - 1}] of `dict of 2`"
        assert (holding.count, holding.nbytes) == (count, report.total_bytes)
        assert len(cycle.heavy) + cycle.heavy_unlisted == count
        assert set(holding.heavy) <= set(cycle.heavy) == {h.node_id for h in report.heavy_objects}
        assert len(report.nodes) < 40
        assert work["list reads"].count(work["list"]) <= 1  # one pass per container
        assert sum(work["list scans"]) <= count  # never a scan of the list per array
        assert len(work["briefs"]) <= 2  # one description, worded once per place
    for key in ("named paths", "node names", "describe", "briefs"):
        assert small[key] == big[key], key  # per container, not per array
    assert big["named paths"] <= 2
    # The arrays are one node (alike arrays: see tests/test_alike_arrays.py), described
    # alone; tensors are described all at once, never one by one.
    assert big["describe"] == (1 if kind == "arrays" else 0)


def test_a_partials_references_read_as_its_attributes() -> None:
    """A hook ``partial(self.on_grad, mb)`` keeps ``self`` through ``func``; the loop and the
    cut say so instead of an unnamed reference. A subclass that breaks its attributes still
    gets a name, by type. The partial's own slots are read-only: internal, never a cut."""
    import functools

    def on_grad(*args: object, **kwargs: object) -> None:
        """A hook."""

    payload, options = [1], {"scale": 2.0}
    hook = functools.partial(on_grad, payload, **options)
    assert name_edge(hook, on_grad) == EdgeName("internal", "func")
    assert name_edge(hook, hook.args) == EdgeName("internal", "args")
    assert name_edge(hook, hook.keywords) == EdgeName("internal", "keywords")

    class Tagged(functools.partial):  # type: ignore[type-arg]
        """A partial with an instance dict: its own attributes come first."""

    tagged = Tagged(on_grad)
    tagged.owner = payload
    assert name_edge(tagged, payload) == EdgeName("attribute", ".owner")
    assert name_edge(tagged, on_grad) == EdgeName("internal", "func")

    class Hostile(functools.partial):  # type: ignore[type-arg]
        """Reading ``.func`` raises: the slot is read through partial's own descriptor."""

        @property
        def func(self) -> Any:
            raise RuntimeError("no")

    assert name_edge(Hostile(on_grad), on_grad) == EdgeName("internal", "func")
