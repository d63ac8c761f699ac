"""Reference graphs: the C core's Python face, its pure-Python twin, and the two graphs.

* :mod:`~whyalive.graph.core`: CSR building, components, reachability, per-component
  work; the C extension ``whyalive.graph._fastgraph`` when compiled, else
  :mod:`~whyalive.graph.twin` and :mod:`~whyalive.graph.twin_workspace`.
* :mod:`~whyalive.graph.garbage`: :class:`ObjectGraph`, the graph of captured garbage.
* :mod:`~whyalive.graph.heap`: :class:`HeapGraph`, the graph of the whole live heap.
"""

from __future__ import annotations

from whyalive.graph.garbage import UNTRACKED_CONTAINERS, ObjectGraph, build_graph
from whyalive.graph.heap import HeapGraph, snapshot_heap

__all__ = ["UNTRACKED_CONTAINERS", "HeapGraph", "ObjectGraph", "build_graph", "snapshot_heap"]
