"""Bytes counted once per memory range: ranges that overlap, on one device, are one storage."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whyalive.kinds import HeavyFacts, merge_shared_memory

# (device, start, length, storage): low addresses, and ones past 2**53 (not exact in a float).
_RANGE = st.tuples(
    st.sampled_from(["cpu", "cuda:0"]),
    st.one_of(st.integers(1, 200), st.integers(2**60, 2**60 + 200)),
    st.integers(0, 40),
    st.integers(0, 12),
)


def _expected(ranges: list[tuple[str, int, int, int]]) -> dict[int, tuple[object, int]]:
    """By brute force: storages joined when their ranges overlap (transitively, per device);
    a joined group of two storages or more is one ``("memory", device, start)`` of the
    union's bytes."""
    spans = {(d, s, s + n, k) for d, s, n, k in ranges if n > 0}
    group = {span: {span} for span in spans}
    for a in spans:
        for b in spans:
            if a[0] == b[0] and max(a[1], b[1]) < min(a[2], b[2]) and group[a] is not group[b]:
                joined = group[a] | group[b]
                for member in joined:
                    group[member] = joined
    result: dict[int, tuple[object, int]] = {}
    for index, (device, start, length, storage) in enumerate(ranges):
        if length == 0:
            continue
        members = group[(device, start, start + length, storage)]
        if len({m[3] for m in members}) > 1:
            low, high = min(m[1] for m in members), max(m[2] for m in members)
            result[index] = (("memory", device, low), high - low)
    return result


@settings(max_examples=300, deadline=None)
@given(st.lists(_RANGE, max_size=25))
def test_overlapping_ranges_are_one_storage_and_others_stay_apart(
    ranges: list[tuple[str, int, int, int]],
) -> None:
    # One storage has one range (it is one allocation): its first range stands.
    first: dict[int, tuple[str, int, int]] = {}
    ranges = [(*first.setdefault(k, (d, s, n)), k) for d, s, n, k in ranges]
    facts = {
        index: HeavyFacts(
            "bytearray", "", length, device, ("buffer", storage), memory=(s, s + length)
        )
        for index, (device, s, length, storage) in enumerate(ranges)
    }
    merged = merge_shared_memory(facts)
    expected = _expected(ranges)
    for index, fact in merged.items():
        if index in expected:
            assert (fact.storage, fact.nbytes) == expected[index]
        else:
            assert fact is facts[index]


def test_an_owning_facts_record_is_the_constructors() -> None:
    """``HeavyFacts.owning`` fills a copied template instead of running ``__init__``: every
    field is set, to what the constructor sets (equal, same hash and repr)."""
    import dataclasses

    made = HeavyFacts.owning(
        "torch.Tensor", "Tensor(float32[4], cpu)", 16, "cpu", ("t", 1), 2, (8, 24)
    )
    built = HeavyFacts(
        "torch.Tensor",
        "Tensor(float32[4], cpu)",
        16,
        "cpu",
        ("t", 1),
        storage_users=2,
        memory=(8, 24),
    )
    assert made == built
    assert hash(made) == hash(built)
    assert repr(made) == repr(built)
    assert set(vars(made)) == {field.name for field in dataclasses.fields(HeavyFacts)}


def test_facts_made_many_at_once_are_the_constructors() -> None:
    """``HeavyFacts.owning_many`` fills copied templates, as ``owning`` does: each record
    equals the constructor's (equal, same hash, repr and fields)."""

    def locate() -> tuple[int, int]:
        return (8, 24)

    made = HeavyFacts.owning_many(
        "numpy.ndarray",
        "cpu",
        ["float64[4]", "int8[2]"],
        [32, 2],
        [("n", 1), ("n", 2)],
        [locate, None],
    )
    built = [
        HeavyFacts("numpy.ndarray", "float64[4]", 32, "cpu", ("n", 1), locate=locate),
        HeavyFacts("numpy.ndarray", "int8[2]", 2, "cpu", ("n", 2)),
    ]
    assert made == built
    assert list(map(hash, made)) == list(map(hash, built))
    assert list(map(repr, made)) == list(map(repr, built))
    assert [list(vars(m)) for m in made] == [list(vars(b)) for b in built]


def test_a_batch_of_arrays_is_described_as_each_alone() -> None:
    """NumPy's batch (owning arrays at C speed, the rest one by one) says what
    ``describe`` says of each array: owning, views, a view of a view, non-contiguous,
    foreign memory, 0-d, structured, a subclass."""
    numpy = pytest.importorskip("numpy")
    from whyalive.kinds import KindResolver

    sub = type("Sub", (numpy.ndarray,), {})
    owner = numpy.arange(24.0)
    arrays = [
        numpy.zeros(4),
        owner,
        owner[2:6],
        owner[::2][1:],
        owner.reshape(4, 6)[:, 1],
        numpy.frombuffer(bytearray(16), dtype=numpy.int32),
        numpy.array(3.5),
        numpy.zeros(3, dtype=[("a", "i4"), ("b", "f8")]),
        numpy.ones((2, 3)).view(sub),
        numpy.ones((5,), dtype=numpy.uint8),
    ]
    resolver = KindResolver()

    def read(facts: HeavyFacts | None) -> object:
        # A lazy range is a new callable per record: compared by what it reads.
        assert facts is not None
        memory = facts.memory or (facts.locate() if facts.locate is not None else None)
        return dataclasses.replace(facts, memory=memory, locate=None)

    for batch in (arrays, arrays[:1] * 3, [a for a in arrays if a.base is None]):
        alone = [resolver.describe(a) for a in batch]
        assert list(map(read, resolver.describe_many(batch))) == list(map(read, alone))
