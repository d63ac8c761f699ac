"""Leak scenarios shared by the test files: real garbage, NumPy payloads (no torch needed;
bytearrays of 1 MiB where NumPy is missing).

Import them as ``from scenarios import ...`` (pytest puts ``tests/`` on the path). A
scenario is a function or class that, called, leaves one known cycle behind, written
the way user code writes it, so reports name its variables as a user would read them.
``scenarios.modules.throwaway_module`` stands for the user's module whose globals hold
objects.
"""

from __future__ import annotations

from scenarios.counts import counts_said
from scenarios.leaks import (
    Ring,
    Trainer,
    heavy,
    heavy_bytes,
    nothing,
    pipeline_step,
    ring,
    self_loop,
    shared_parameters,
    stage_backward,
    stage_backward_fixed,
    stage_backward_with_grads,
)

__all__ = [
    "Ring",
    "Trainer",
    "counts_said",
    "heavy",
    "heavy_bytes",
    "nothing",
    "pipeline_step",
    "ring",
    "self_loop",
    "shared_parameters",
    "stage_backward",
    "stage_backward_fixed",
    "stage_backward_with_grads",
]
