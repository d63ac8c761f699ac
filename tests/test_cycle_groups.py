"""find_cycles counts alike cycles group by group: the same groups, to the order of their
storages, as counting them one by one (the loop it replaced, kept here as the oracle)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from whyalive.analysis import CycleGroup, _groups_of, _is_structure
from whyalive.analysis.autograd_share import count_autograd
from whyalive.graph import ObjectGraph
from whyalive.graph.garbage import AlikeRun
from whyalive.kinds import AlikeFacts, HeavyFacts

DEVICES = ["cpu", "cuda:0", "cuda:1"]


def _one_by_one(
    found: list[tuple[object, list[int], list[int]]],
    graph: ObjectGraph,
    facts: dict[int, HeavyFacts],
    estimated: dict[object, list[tuple[int, str]]],
    walked_first: dict[object, int],
) -> dict[object, CycleGroup]:
    """The loop find_cycles ran before, one cycle at a time."""
    quick: dict[object, CycleGroup] = {}
    held_of = {node: (fact.storage, (fact.nbytes, fact.device)) for node, fact in facts.items()}
    walked_nodes = {node for node, fact in facts.items() if fact.through_autograd}
    for key, members, retained in found:
        group = quick.get(key)
        if group is None:
            group = quick[key] = CycleGroup(members, retained, big=_is_structure(key))
        group.occurrences += 1
        group.heavy_nodes.update(retained)
        if graph.alike:
            group.alike.update((n, facts[n].count - 1) for n in retained if n in graph.alike)
        storages = group.storages
        if walked_nodes and not walked_nodes.isdisjoint(retained):
            own = list(map(facts.__getitem__, retained))
            for held in (held for fact in own for held in fact.held()):
                storages[held.storage] = (held.nbytes, held.device)
            count_autograd(group, retained, own)
        else:
            storages.update(map(held_of.__getitem__, retained))
        shares = estimated.get(key)
        if shares is not None and group.occurrences > walked_first[key]:
            for number, share in enumerate(shares):
                storages[("estimated", id(group), group.occurrences, number)] = share
    return quick


def _facts(node: int, device: str, storage: int, through: tuple[HeavyFacts, ...]) -> HeavyFacts:
    return HeavyFacts(
        "torch.Tensor", f"t{node}", 100 + node, device, ("torch", storage), through_autograd=through
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_counting_group_by_group_gives_what_one_by_one_gave(data: st.DataObject) -> None:
    heavy = data.draw(st.integers(1, 12))
    storages = data.draw(st.lists(st.integers(0, 6), min_size=heavy, max_size=heavy))
    devices = data.draw(st.lists(st.sampled_from(DEVICES), min_size=heavy, max_size=heavy))
    walked = data.draw(st.sets(st.integers(0, heavy - 1), max_size=3))
    alike = data.draw(st.sets(st.integers(0, heavy - 1), max_size=2))
    facts: dict[int, HeavyFacts] = {}
    for node in range(heavy):
        through = tuple(
            _facts(100 + node * 10 + i, data.draw(st.sampled_from(DEVICES)), 50 + node + i, ())
            for i in range(data.draw(st.integers(1, 2)))
        )
        fact = _facts(node, devices[node], storages[node], through if node in walked else ())
        if node in alike:
            count = data.draw(st.integers(2, 5))
            fact = HeavyFacts(
                fact.kind,
                fact.description,
                fact.nbytes,
                fact.device,
                fact.storage,
                alike=AlikeFacts(count, 1, frozenset({"x"}), fact),
            )
        facts[node] = fact
    keys: list[Any] = [(1, 2), (3,), ("structure", 7), (4, -2)]
    rows = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(keys),
                st.lists(st.integers(0, heavy - 1), max_size=3, unique=True),
            ),
            max_size=12,
        )
    )
    found = [(key, [1000 + i], retained) for i, (key, retained) in enumerate(rows)]
    estimated = {
        key: [(data.draw(st.integers(1, 50)), data.draw(st.sampled_from(DEVICES)))]
        * data.draw(st.integers(1, 2))
        for key in keys
        if data.draw(st.booleans())
    }
    walked_first = {key: data.draw(st.integers(0, 3)) for key in keys}
    graph = ObjectGraph([], [0], [], 0)
    graph.alike = {node: AlikeRun(node, 0, 2, b"\x03", ()) for node in alike}

    expected = _one_by_one(found, graph, facts, estimated, walked_first)
    got = _groups_of(found, graph, facts, estimated, walked_first)
    assert list(got) == list(expected)
    for key, group in got.items():
        before = expected[key]
        assert group.members == before.members
        assert group.retained == before.retained
        assert group.big == before.big
        assert group.occurrences == before.occurrences
        assert group.heavy_nodes == before.heavy_nodes
        assert group.alike == before.alike
        assert group.autograd_nodes == before.autograd_nodes
        assert group.autograd_storages == before.autograd_storages

        # The estimates are keyed by their group's id: compare them by occurrence.
        def plain(items: dict[object, tuple[int, str]], gid: int) -> list[Any]:
            return [
                (
                    ("estimated", k[2], k[3])
                    if isinstance(k, tuple) and k[:2] == ("estimated", gid)
                    else k,
                    v,
                )
                for k, v in items.items()
            ]

        assert plain(group.storages, id(group)) == plain(before.storages, id(before))
