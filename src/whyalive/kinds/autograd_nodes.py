"""Autograd nodes of the garbage as roots of the walk of `kinds.torch.AutogradWalk`.

A structure that keeps an autograd node (``pending[mb] = out.grad_fn``) keeps, in C++,
what the node saved and the leaves its graph accumulates into, with their gradients.
The collector lists none of those tensors as garbage (their Python objects, if any, are
held from C++), yet they are freed with the node: the node is heavy for what it holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from whyalive.guarded import distinct_types, type_short_name
from whyalive.kinds import HeavyFacts
from whyalive.kinds.autograd_graph import AutogradReader
from whyalive.words import AUTOGRAD_NODE_KIND, AUTOGRAD_PART, plural, size_to_words


def garbage_nodes(
    reader: AutogradReader,
    objects: Sequence[object],
    count: int,
    tensors: Sequence[int] = (),
    successors: Callable[[int], Sequence[int]] | None = None,
    types: Sequence[type] | None = None,
) -> list[int]:
    """The indices of the autograd nodes among the first ``count`` of ``objects`` (the
    garbage) to walk from; their types are read at C speed, Python work is per node.
    ``types``: every type among ``objects``, when known (the graph build records them),
    else read here.

    ``tensors`` (indices) are tensors whose walks come later or are left to a sample: a
    node of their graphs (their ``grad_fn``, and the nodes ``successors`` reaches from them
    through nodes) goes with them, walked or credited as the walked ones', never twice.
    """
    if types is None:
        types = distinct_types(itertools.islice(objects, count))
    node_types = {id(cls) for cls in types if reader.is_node_type(cls)}
    if not node_types:
        return []
    found = map(node_types.__contains__, map(id, map(type, itertools.islice(objects, count))))
    indices = list(itertools.compress(range(count), found))
    if not tensors:
        return indices
    owned = _nodes_of(reader, objects, indices, tensors, successors)
    return [index for index in indices if index not in owned]


def _nodes_of(
    reader: AutogradReader,
    objects: Sequence[object],
    indices: list[int],
    tensors: Sequence[int],
    successors: Callable[[int], Sequence[int]] | None,
) -> set[int]:
    """Of the nodes at ``indices``, those of the graphs of ``tensors``."""
    position = {id(objects[index]): index for index in indices}
    is_node = set(indices).__contains__
    stack = [position.get(id(reader.grad_fn(objects[t])), -1) for t in tensors]
    if successors is not None:
        stack.extend(n for t in tensors for n in successors(t) if is_node(n))
    owned: set[int] = set()
    while stack:
        index = stack.pop()
        if index < 0 or index in owned:
            continue
        owned.add(index)
        if successors is not None:
            stack.extend(n for n in successors(index) if is_node(n))
    return owned


def node_facts(node: object, held: list[HeavyFacts]) -> HeavyFacts:
    """An autograd node as the heavy object it is for the tensors it holds in C++:
    ``MmBackward0 + autograd graph: 3 tensors, 1.0 MiB``, of kind
    :data:`~whyalive.words.AUTOGRAD_NODE_KIND`, with no bytes of its own."""
    extra = size_to_words(sum(f.nbytes for f in held))
    tensors = plural(len(held), "tensor")
    return HeavyFacts(
        AUTOGRAD_NODE_KIND,
        f"{type_short_name(type(node))}{AUTOGRAD_PART}{tensors}, {extra}",
        0,
        held[0].device,
        ("autograd node", id(node)),
        through_autograd=tuple(held),
    )
