"""torch tensors as heavy objects: storage sharing, meta and fake tensors, the seed on torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from whyalive import find_leaks

torch = pytest.importorskip("torch")


def two_views(*, cycle: bool) -> None:
    base = torch.zeros(1 << 20)  # 4 MiB of float32
    holder = [base[: 1 << 19], base[1 << 19 :]]
    del base
    if cycle:
        holder.append(holder)


def test_two_views_of_one_storage_count_once() -> None:
    """Two views of one 4 MiB storage report 4 MiB, not 8."""
    report = find_leaks(two_views, cycle=True)
    assert report.total_bytes == 4 << 20
    assert report.cycles[0].bytes_held == 4 << 20
    assert sum(h.counted for h in report.heavy_objects) == 1


def test_meta_and_fake_tensors_hold_zero_bytes() -> None:
    """Meta and fake tensors are reported but hold no real bytes."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def meta() -> None:
        holder = [torch.zeros(1000, device="meta")]
        holder.append(holder)

    report = find_leaks(meta)
    assert report.found
    assert report.total_bytes == 0
    from whyalive.kinds import KindResolver

    with FakeTensorMode():
        fake = torch.zeros(1000)
    facts = KindResolver().describe(fake)
    assert facts is not None
    assert facts.nbytes == 0


def test_seed_on_real_tensors_names_tensors() -> None:
    """The bundled demo (torch backend) reports tensors with dtype, shape and device."""
    from whyalive.demo import run_demo

    name, report = run_demo()
    assert name == "torch"
    (cycle,) = report.cycles
    assert cycle.pattern == "recursive-closure"
    assert "4 tensors float32[16, 256] cpu, 64.0 KiB" in cycle.summary
    outputs_and_grads = 8 * 16 * 256 * 4
    # The outputs' autograd graph keeps the leaves (inputs, weight) and their gradients.
    leaves = 16 * 256 * 4 + 256 * 256 * 4
    assert report.total_bytes == outputs_and_grads + 2 * leaves
    assert not run_demo(fixed=True)[1].found


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here"),
        ),
    ],
)
def test_demo_on_a_device_reports_that_device(device: str) -> None:
    """``whyalive demo --device D`` runs the step on D; the report's bytes are on D."""
    from whyalive.demo import run_demo

    name, report = run_demo(device=device)
    placed = str(torch.empty(0, device=device).device)  # "cuda" is "cuda:0" on a tensor
    assert name == f"torch on {device}"
    (cycle,) = report.cycles
    assert f"4 tensors float32[16, 256] {placed}" in cycle.summary
    assert set(report.bytes_by_device) == {placed}
    assert not run_demo(fixed=True, device=device)[1].found


def test_demo_on_a_device_torch_cannot_use_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from whyalive.cli import main

    assert main(["demo", "--device", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("whyalive: error: --device bogus: torch cannot use it here (")
    assert "\n" not in err
    assert "Traceback" not in err


class Holder:
    """An object in a self-cycle that holds what a test gives it."""

    def __init__(self) -> None:
        self.me = self


def autograd_leak(*, reduce: bool) -> None:
    holder = Holder()
    x = torch.randn(1000, requires_grad=True)
    holder.x = x  # type: ignore[attr-defined]
    product = x * 2
    holder.y = product.sum() if reduce else product  # type: ignore[attr-defined]


@pytest.mark.parametrize(("reduce", "expected"), [(False, 8000), (True, 4004)])
def test_tensors_held_through_autograd_are_counted(reduce: bool, expected: int) -> None:
    """A leaf kept alive only by the cycle's autograd graph counts: x + x * 2 is 8,000 B."""
    report = find_leaks(autograd_leak, reduce=reduce)
    assert report.total_bytes == expected
    assert report.cycles[0].bytes_held == expected
    assert "autograd graph" in report.render("text")


def test_saved_tensors_of_a_graph_are_counted_once() -> None:
    """Tensors saved for backward count once, even when two outputs share them."""

    def leak() -> None:
        holder = Holder()
        a = torch.randn(1000, requires_grad=True)
        holder.out = [a.sin(), a.cos()]  # type: ignore[attr-defined]

    report = find_leaks(leak)
    assert report.total_bytes == 3 * 4000  # sin, cos and the saved (leaf) a


def test_graph_freed_by_backward_counts_only_what_is_left() -> None:
    """After backward() the saved tensors are gone; reading them never fails the check."""

    def leak() -> None:
        holder = Holder()
        a = torch.randn(1000, requires_grad=True)
        out = a.sin()
        out.sum().backward()
        holder.out = out  # type: ignore[attr-defined]

    report = find_leaks(leak)
    assert report.found
    assert report.total_bytes == 3 * 4000  # out, the leaf a (AccumulateGrad) and a.grad


def test_consumed_graph_is_walked_without_an_exception_per_node() -> None:
    """A model's graph after backward(): no saved tensor is read (each read would raise)."""
    import sys

    from whyalive.kinds.torch import AutogradWalk

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    out = model(torch.randn(2, 8))
    loss = out.sum()
    loss.backward()
    raised: list[object] = []

    def watch(frame: object, event: str, arg: object) -> None:
        if event == "c_exception":
            raised.append(arg)

    walk = AutogradWalk()
    sys.setprofile(watch)
    try:
        walk.visit(0, loss)
    finally:
        sys.setprofile(None)
    visited = len(walk._visited)
    walk._by_root.clear()  # found: the leaves and their gradients; dropped unweighed
    walk.finish({}, [], 0)
    assert visited >= 8  # sum, two addmm, relu, two t, four AccumulateGrad
    assert raised == []


def test_sampled_autograd_walk_counts_alike_leaks_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Walking one occurrence per group (the monitor) credits the others what it found:
    ten alike leaks with their forward graphs count what walking all ten counts."""
    from whyalive.analysis import AnalysisOptions
    from whyalive.capture import GarbageWatch
    from whyalive.kinds.torch import AutogradWalk
    from whyalive.report.pipeline import analyze

    def leaks() -> None:
        for _ in range(10):
            holder = Holder()
            a = torch.randn(1000, requires_grad=True)
            holder.out = a.sin()  # type: ignore[attr-defined]

    visits: list[int] = []
    visit = AutogradWalk.visit

    def counted(self: AutogradWalk, node: int, tensor: object) -> None:
        visits.append(node)
        visit(self, node, tensor)

    monkeypatch.setattr(AutogradWalk, "visit", counted)
    totals = []
    for walks in (None, 1):
        visits.clear()
        watch = GarbageWatch()
        watch.begin()
        leaks()
        captured = watch.end()
        try:
            report = analyze(captured.objects, AnalysisOptions(autograd_walks=walks))
        finally:
            captured.release()
            watch.finish()
        assert report.cycles[0].occurrences == 10
        totals.append((report.total_bytes, len(visits)))
    assert totals[0][0] == totals[1][0] == 10 * 2 * 4000  # out and the leaf a, each time
    assert totals[1][1] == 1 < totals[0][1]


def test_tensor_and_its_numpy_view_count_once() -> None:
    """A tensor and its .numpy() view in one cycle hold 4,000 B of storage, not 8,000."""
    pytest.importorskip("numpy")

    def leak() -> None:
        holder = Holder()
        tensor = torch.randn(1000)
        holder.tensor = tensor  # type: ignore[attr-defined]
        holder.array = tensor.numpy()  # type: ignore[attr-defined]
        holder.tail = tensor[10:].numpy()  # type: ignore[attr-defined]

    report = find_leaks(leak)
    assert report.total_bytes == 4000
    assert report.cycles[0].bytes_held == 4000
    assert sum(h.counted for h in report.heavy_objects) == 1


def test_tensor_from_numpy_counts_once() -> None:
    """torch.from_numpy shares the array's memory: counted once across the two kinds."""
    numpy = pytest.importorskip("numpy")

    def leak() -> None:
        holder = Holder()
        array = numpy.zeros(1000)
        holder.array = array  # type: ignore[attr-defined]
        holder.tensor = torch.from_numpy(array)  # type: ignore[attr-defined]

    report = find_leaks(leak)
    assert report.total_bytes == 8000


def test_live_leaves_in_the_graph_are_not_counted() -> None:
    """Live parameters (and their gradients) and a leaf the caller holds are not counted."""
    model = torch.nn.Linear(100, 100)
    model(torch.randn(1, 100)).sum().backward()  # the live parameters have gradients
    kept = torch.randn(1000, requires_grad=True)

    def leak() -> None:
        holder = Holder()
        holder.out = torch.tanh(model(torch.randn(5, 100)))  # type: ignore[attr-defined]
        holder.scaled = kept * 3  # type: ignore[attr-defined]

    report = find_leaks(leak)
    # out (5x100) plus the tanh result saved for backward (same storage), the
    # input saved by addmm (5x100, made inside), and kept * 3 (1000): no parameter, no kept.
    assert report.total_bytes == 500 * 4 + 500 * 4 + 1000 * 4
    assert kept.grad is None


def test_activations_saved_by_a_model_count_and_its_weights_do_not() -> None:
    """An MLP output in a cycle holds every activation saved for backward, not the weights."""
    model = torch.nn.Sequential(
        *(layer for _ in range(3) for layer in (torch.nn.Linear(100, 100), torch.nn.ReLU()))
    )

    def leak() -> None:
        holder = Holder()
        holder.out = model(torch.randn(5, 100))  # type: ignore[attr-defined]

    report = find_leaks(leak)
    # The input and the three ReLU outputs (the last one is `out`), 5 x 100 float32 each;
    # the linear layers also save weight.t(), a view of a live parameter: not counted.
    assert report.total_bytes == 4 * 500 * 4


def _held_by_a_cycle(make: Callable[[], object]) -> Callable[[], None]:
    def leak() -> None:
        holder = [make()]
        holder.append(holder)

    return leak


def _storage_bytes(tensor: object, parts: tuple[str, ...]) -> int:
    return sum(int(getattr(tensor, part)().untyped_storage().nbytes()) for part in parts)


def _dense() -> Any:
    dense = torch.zeros(1000, 1000)
    dense[0, 0], dense[999, 999] = 1.0, 2.0
    return dense


SPARSE = {
    "coo": (lambda: _dense().to_sparse(), ("_indices", "_values")),
    "csr": (lambda: _dense().to_sparse_csr(), ("crow_indices", "col_indices", "values")),
    "csc": (lambda: _dense().to_sparse_csc(), ("ccol_indices", "row_indices", "values")),
    "bsr": (lambda: _dense().to_sparse_bsr((10, 10)), ("crow_indices", "col_indices", "values")),
    "bsc": (lambda: _dense().to_sparse_bsc((10, 10)), ("ccol_indices", "row_indices", "values")),
}


@pytest.mark.filterwarnings("ignore:Sparse (CSR|CSC|BSR|BSC) tensor support is in beta")
@pytest.mark.parametrize("layout", sorted(SPARSE))
def test_sparse_tensors_hold_their_indices_and_values(layout: str) -> None:
    """A 1000x1000 sparse matrix with 2 values holds a few KiB, never its 4 MB dense size."""
    make, parts = SPARSE[layout]
    expected = _storage_bytes(make(), parts)
    assert expected < 10_000
    report = find_leaks(_held_by_a_cycle(make))
    assert report.total_bytes == expected
    assert f"sparse_{layout}" in report.heavy_objects[0].description


def test_a_huge_sparse_coo_tensor_is_counted_by_what_it_stores() -> None:
    """10^6 x 10^6 with two values: 40 bytes (indices and values), not 4 TB."""

    def make() -> object:
        indices = torch.tensor([[0, 999_999], [0, 999_999]])
        values = torch.tensor([1.0, 2.0])
        return torch.sparse_coo_tensor(indices, values, (10**6, 10**6), check_invariants=True)

    report = find_leaks(_held_by_a_cycle(make))
    assert report.total_bytes == 2 * 2 * 8 + 2 * 4


def test_a_nested_tensor_holds_its_buffer() -> None:
    def make() -> object:
        return torch.nested.nested_tensor([torch.zeros(1 << 20), torch.zeros(1 << 20)])

    report = find_leaks(_held_by_a_cycle(make))
    assert report.total_bytes == 8 << 20
    assert "nested 2" in report.heavy_objects[0].description


@pytest.mark.parametrize("with_lengths", [False, True])
def test_a_jagged_nested_tensor_holds_its_values_offsets_and_lengths(with_lengths: bool) -> None:
    """``layout=torch.jagged``: a tensor subclass whose own storage is never allocated."""

    def make() -> Any:
        if with_lengths:
            values = torch.zeros(6, 1 << 18)
            offsets = torch.tensor([0, 2, 6])
            lengths = torch.tensor([1, 3])
            return torch.nested.nested_tensor_from_jagged(values, offsets, lengths=lengths)
        parts = [torch.zeros(1 << 20), torch.zeros(1 << 19)]
        return torch.nested.nested_tensor(parts, layout=torch.jagged)

    sample = make()
    parts = [sample._values, sample._offsets, sample._lengths]
    expected = sum(int(p.untyped_storage().nbytes()) for p in parts if p is not None)
    assert expected >= 6 << 20
    report = find_leaks(_held_by_a_cycle(make))
    assert report.total_bytes == expected
    assert report.heavy_count == 1
    assert "NestedTensor(float32[2, j" in report.heavy_objects[0].description


def _leaf_with_grad() -> Any:
    leaf = torch.zeros(1 << 20, requires_grad=True)  # 4 MiB, and 4 MiB of gradient
    leaf.sum().backward()
    return leaf


def test_a_leafs_grad_counts_when_a_list_in_the_cycle_holds_the_leaf() -> None:
    report = find_leaks(_held_by_a_cycle(_leaf_with_grad))
    assert report.total_bytes == 8 << 20


def test_a_leafs_grad_counts_when_the_leaf_is_in_the_cycle() -> None:
    class Box:
        leaf: Any

    def leak() -> None:
        leaf = _leaf_with_grad()
        box = Box()
        box.leaf = leaf
        leaf.box = box  # the leaf itself is a member of the loop

    report = find_leaks(leak)
    assert report.total_bytes == 8 << 20


def test_a_grad_the_user_still_holds_is_not_counted() -> None:
    kept: list[object] = []

    def leak() -> None:
        leaf = _leaf_with_grad()
        kept.append(leaf.grad)
        holder = [leaf]
        holder.append(holder)

    report = find_leaks(leak)
    assert report.total_bytes == 4 << 20
    kept.clear()


def test_a_numpy_view_of_a_tensor_slice_keeps_the_whole_storage() -> None:
    pytest.importorskip("numpy")
    report = find_leaks(_held_by_a_cycle(lambda: torch.zeros(1 << 20)[500:].numpy()))
    assert report.total_bytes == 4 << 20


def test_the_short_way_describes_plain_tensors_as_the_general_way_does() -> None:
    """A plain strided tensor is described the short way (the monitor describes every
    step's tensors); it says exactly what the general way says, for every kind of tensor."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from whyalive.kinds.torch import TorchKind

    class Tagged(torch.Tensor):
        pass

    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    with FakeTensorMode():
        fake = torch.zeros(3, 5)
    tensors = [
        torch.zeros(5),
        torch.tensor(3.0),
        torch.zeros(2, 3, dtype=torch.int8),
        base,
        base.t(),
        base[1:, ::2],
        torch.nn.Parameter(torch.ones(7)),
        torch.ones(3, requires_grad=True) * 2,
        base.as_subclass(Tagged),
        torch.zeros(0, 4),
        torch.zeros(4, device="meta"),
        fake,
        torch.zeros(3, 3).to_sparse(),
        torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]),
    ]
    kind = TorchKind()
    for tensor in tensors:
        assert kind.describe(tensor) == kind.describe_any(tensor), tensor
    # Many at once (the words of a class, device, dtype and shape made once for all; the
    # subclass and the Parameter share a shape and dtype with plain tensors), twice over.
    expected = [kind.describe_any(tensor) for tensor in tensors * 2]
    described = kind.describe_many(tensors * 2)
    assert described == expected
    assert [hash(facts) for facts in described] == [hash(facts) for facts in expected]
    assert [repr(facts) for facts in described] == [repr(facts) for facts in expected]
    # The reader's loop in C, where built, reads as its Python loop does: the same facts
    # (None where describe_any reads), one reader's memo of classes and words filled by both.
    from whyalive.kinds.torch_dense import DenseReader

    with torch._C.DisableTorchFunctionSubclass():
        in_python = DenseReader(torch).read_many_in_python(tensors * 2)
        reader = DenseReader(torch)
        read = reader.read_many(tensors * 2)
    assert read == in_python
    assert [repr(facts) for facts in read] == [repr(facts) for facts in in_python]
    # Every plain strided tensor read (not left to describe_any); meta, fake, sparse and
    # nested are not.
    assert [facts is not None for facts in read] == [True] * 10 + [False] * 4 + [True] * 10 + [
        False
    ] * 4
    assert len(reader._words) == len({(type(t), t.device, t.dtype, t.shape) for t in tensors[:-3]})


def test_a_list_of_many_tensors_costs_work_per_container_not_per_tensor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """test_structures' per-container work count, for tensors (the core tests run without
    torch, so this variant lives with the torch kinds)."""
    import test_structures

    test_structures.test_a_list_of_many_heavy_objects_costs_work_per_container_not_per_array(
        monkeypatch, "tensors"
    )


def test_the_reader_in_c_reads_a_class_whose_hash_misbehaves_as_python_does() -> None:
    """A tensor class's metaclass ``__hash__`` runs while the words are looked up: one that
    answers anew each time, or that turns the tensor into another class meanwhile, gets
    from the C loop the facts the Python loop gives (the class read once, the words used
    as made)."""
    import itertools

    from whyalive.kinds.torch_dense import DenseReader

    counter = itertools.count()
    turning: dict[str, Any] = {}

    class Unstable(type(torch.Tensor)):  # type: ignore[misc]
        def __hash__(cls) -> int:
            return next(counter)

    class Turning(type(torch.Tensor)):  # type: ignore[misc]
        def __hash__(cls) -> int:
            tensor = turning.get("tensor")
            if tensor is not None and type(tensor) is Before:
                tensor.__class__ = After
            return id(cls) >> 4

    class Odd(torch.Tensor, metaclass=Unstable):
        pass

    class Before(torch.Tensor, metaclass=Turning):
        pass

    class After(torch.Tensor, metaclass=Turning):
        pass

    read = []
    for loop in ("read_many_in_python", "read_many"):
        odd = torch.zeros(3).as_subclass(Odd)
        turning["tensor"] = before = torch.zeros(2).as_subclass(Before)
        with torch._C.DisableTorchFunctionSubclass():
            facts = getattr(DenseReader(torch), loop)([odd, odd, before])
        read.append([None if f is None else (f.description, f.nbytes) for f in facts])
    turning.clear()  # the classes' cycle (through __hash__'s closure) keeps no tensor
    assert read[0] == read[1]
    assert read[1] == [("Odd(float32[3], cpu)", 12)] * 2 + [("Before(float32[2], cpu)", 8)]
