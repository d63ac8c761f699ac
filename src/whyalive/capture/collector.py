"""What the running interpreter's cyclic collector does differently: the one place that asks.

Every other module takes these answers instead of reading ``sys.version_info``
itself (docs/architecture.md, "GC rules" 8 and "Per version"):

- CPython 3.10-3.13 and 3.14.5+: three generations. ``gc.collect(1)`` collects
  generations 0 and 1; a collection moves what it saves (and what survives) one
  generation up.
- CPython 3.14.0-3.14.4: the incremental collector (3.14.5 restored 3.13's). A
  young generation and one old space scanned in increments: ``gc.collect(0)``
  collects the young objects; ``gc.collect(1)`` is one increment, which may
  collect nothing at all (it returns early while it has no work to do, and the
  first increment of a scan only marks); automatic collections are increments;
  whatever a collection saves or leaves alive joins the old space, which only a
  full collection (``gc.collect(2)``) examines again at once.
- Free-threaded builds: every collection examines the whole heap.
"""

from __future__ import annotations

import sys
import sysconfig

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
"""A free-threaded build: one heap, every collection is a full one (not yet tested)."""

INCREMENTAL = (3, 14, 0) <= sys.version_info[:3] < (3, 14, 5) and not FREE_THREADED
"""CPython 3.14.0-3.14.4's incremental collector."""

YOUNG = 0 if INCREMENTAL else 1
"""The ``gc.collect()`` argument that collects what recent code left, without a full collection.

Generations 0 and 1 on the generational collector; the young generation on the
incremental one, whose ``gc.collect(1)`` may collect nothing.
"""


def older_generation(generation: int) -> int:
    """The generation to collect to free what a ``generation`` collection saved.

    One up on the generational collector; the full collection on the
    incremental one (one old space) and on free-threaded builds (one heap).
    """
    if INCREMENTAL or FREE_THREADED:
        return 2
    return min(generation + 1, 2)
