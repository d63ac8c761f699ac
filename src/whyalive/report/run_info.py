"""What a report says about the process that made it: versions, platform, rank, time.

The rank is read here (not in :mod:`whyalive.distributed`, which sits on top and
imports it from here): from an initialised ``torch.distributed`` group if the user
imported torch, else from the launcher's environment.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import sys

from whyalive.graph.core import IMPLEMENTATION
from whyalive.report import RunInfo
from whyalive.version import __version__


def rank_and_world() -> tuple[int | None, int | None]:
    """This process's rank and world size, or ``(None, None)`` outside a distributed job.

    An initialised ``torch.distributed`` default group wins; otherwise the
    launcher's environment (``RANK``, else ``LOCAL_RANK``; ``WORLD_SIZE``).
    """
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a half-torn-down group must not break a report
        pass
    rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK")
    world = os.environ.get("WORLD_SIZE")
    try:
        return (int(rank) if rank else None), (int(world) if world else None)
    except ValueError:
        return None, None


@functools.lru_cache(maxsize=1)
def _platform() -> tuple[str, str]:
    # Not platform.platform(): on Linux it runs `uname -p` in a subprocess and scans the
    # interpreter binary for its libc, about 10 ms that the first check of a process paid
    # (a third of a plain collection of 20,000 objects).
    system, _, release, _, machine = (
        os.uname() if hasattr(os, "uname") else (platform.system(), "", platform.release(), "", "")
    )
    name = "-".join(part for part in (system, release, machine) if part)
    return platform.python_version(), name


def run_info(where: str | None = None) -> RunInfo:
    """Metadata of this process: versions, rank, time, where the check ran."""
    python, platform_name = _platform()
    torch = sys.modules.get("torch")
    numpy = sys.modules.get("numpy")
    rank, world = rank_and_world()
    return RunInfo(
        whyalive=__version__,
        python=python,
        platform=platform_name,
        torch=str(getattr(torch, "__version__", "")) or None,
        numpy=str(getattr(numpy, "__version__", "")) or None,
        pid=os.getpid(),
        rank=rank,
        world_size=world,
        time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        where=where,
        graph_core=IMPLEMENTATION,
    )
