"""The C helpers behind capture release and node selection, against their Python twins."""

from __future__ import annotations

import gc
import weakref

import pytest

from whyalive import graphcore
from whyalive.capture import GarbageWatch

c_impl = graphcore.c_implementation()
py_impl = graphcore.python_implementation()
needs_c = pytest.mark.skipif(c_impl is None, reason="C extension not compiled")


class Payload:
    pass


class Sub(int):
    pass


@needs_c
def test_indices_of_types_matches_python_twin() -> None:
    """Subclasses count, exact and inherited types are found, order is node order."""
    assert c_impl is not None
    nodes: list[object] = [1, "a", Sub(3), 2.0, [], True, Payload(), {}]
    types = (int, list)
    expected = py_impl.indices_of_types(nodes, types)
    assert expected == [0, 2, 4, 5]
    assert c_impl.indices_of_types(nodes, types) == expected
    with pytest.raises(TypeError):
        c_impl.indices_of_types(nodes, (int, "not a type"))  # type: ignore[arg-type]


@needs_c
def test_cyclic_members_matches_python_twin() -> None:
    """Members of cyclic components, optionally masked, agree between implementations."""
    assert c_impl is not None
    a: list[object] = []
    b: list[object] = [a]
    a.append(b)
    lone: list[object] = []
    nodes, offsets, targets = c_impl.build_graph([a, b, lone], ())
    comp, _, cyclic = c_impl.find_components(offsets, targets)
    assert c_impl.cyclic_members(comp, cyclic, None) == py_impl.cyclic_members(comp, cyclic, None)
    assert c_impl.cyclic_members(comp, cyclic, None) == [0, 1]
    mask = memoryview(bytes([0, 1, 1]))
    assert c_impl.cyclic_members(comp, cyclic, mask) == [1]
    assert py_impl.cyclic_members(comp, cyclic, mask) == [1]
    with pytest.raises(ValueError, match="mask length"):
        c_impl.cyclic_members(comp, cyclic, memoryview(b"\x01"))
    del nodes


def test_release_frees_captured_cycles_without_a_collection() -> None:
    """Released garbage is freed at once (tp_clear in C, a collection in Python)."""
    watch = GarbageWatch()
    watch.begin()
    try:
        holder: list[object] = [Payload()]
        holder.append(holder)
        del holder
        captured = watch.end()
        # The collection that saved the garbage cleared older weakrefs: take one now.
        (payload,) = [o for o in captured.objects if type(o) is Payload]
        ref = weakref.ref(payload)
        del payload
        captured.release()
        assert ref() is None
    finally:
        watch.finish()


@needs_c
def test_clear_objects_survives_objects_without_tp_clear() -> None:
    """Objects whose type has no tp_clear (str, int) are skipped, the rest cleared."""
    assert c_impl is not None
    assert c_impl.clear_objects is not None
    holder: list[object] = ["text", 5]
    holder.append(holder)
    objects: list[object] = [holder, "text", 7]
    c_impl.clear_objects(objects)
    assert holder == []
    gc.collect()
