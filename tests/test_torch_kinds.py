"""torch tensors as heavy objects: storage sharing, meta and fake tensors, the seed on torch."""

from __future__ import annotations

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
    assert "4 tensors, float32[16, 256] cpu, 64.0 KiB in all" in cycle.summary
    assert report.total_bytes == 8 * 16 * 256 * 4
    assert not run_demo(fixed=True)[1].found
