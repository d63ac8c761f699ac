"""What a set of heavy objects holds in bytes: each storage counted once, by device.

Summed at C speed over the objects' facts, and remembered per set (``Memo``): a cycle's
one holding of 10^5 arrays is the cycle's whole set, summed where the holding, its words
and the cycle's bytes are said.
"""

from __future__ import annotations

from collections import defaultdict
from operator import attrgetter

from whyalive.kinds import HeavyFacts

# Each set of heavy objects' storages, each once (its first fact), as read the first time.
Memo = dict[frozenset[int], list[HeavyFacts]]

_THROUGH_AUTOGRAD = attrgetter("through_autograd")
_STORAGE = attrgetter("storage")
_DEVICE = attrgetter("device")
_NBYTES = attrgetter("nbytes")
_STORAGE_USERS = attrgetter("storage_users")


def storage_bytes(
    heavy: list[int],
    facts: dict[int, HeavyFacts],
    storage_users: dict[object, int],
    memo: Memo | None = None,
) -> tuple[dict[str, int], int]:
    """Bytes by device, each storage counted once, and how much of it live objects share.

    ``memo`` keeps each set of heavy objects' storages: a cycle's one holding of 10^5
    arrays is the cycle's whole set, summed in three places.
    """
    counted = _counted(heavy, facts, memo)
    by_device: dict[str, int] = defaultdict(int)
    devices = set(map(_DEVICE, counted))
    if len(devices) == 1:  # the usual case, summed at C speed
        by_device[devices.pop()] = sum(map(_NBYTES, counted))
    else:
        for fact in counted:
            by_device[fact.device] += fact.nbytes
    shared = 0
    if any(map(_STORAGE_USERS, counted)):  # only a kind that counts users can share
        for fact in counted:
            if fact.storage_users > storage_users.get(fact.storage, 0):
                shared += fact.nbytes
    return dict(by_device), shared


def _counted(
    heavy: list[int],
    facts: dict[int, HeavyFacts],
    memo: Memo | None,
) -> list[HeavyFacts]:
    """Each storage's first fact: the objects' own, then what their autograd graphs hold."""
    key = frozenset(heavy) if memo is not None and len(heavy) > 64 else None
    if key is not None and memo is not None and key in memo:
        return memo[key]
    own = list(map(facts.__getitem__, heavy))
    firsts: dict[object, HeavyFacts] = {}
    if any(map(_THROUGH_AUTOGRAD, own)):
        for fact in own:
            for held in fact.held():
                firsts.setdefault(held.storage, held)
    else:  # at C speed (fed from the end: the first fact of a storage is the one kept)
        own.reverse()
        firsts = dict(zip(map(_STORAGE, own), own, strict=True))
    counted = list(firsts.values())
    if key is not None and memo is not None:
        memo[key] = counted
    return counted


def bytes_of(
    heavy: list[int],
    facts: dict[int, HeavyFacts],
    memo: Memo | None = None,
) -> int:
    """Bytes ``heavy`` holds, each storage once."""
    return sum(storage_bytes(heavy, facts, {}, memo)[0].values())


def autograd_held(heavy_nodes: list[int], facts: dict[int, HeavyFacts]) -> tuple[int, int]:
    """Bytes and tensors that only the autograd graphs of ``heavy_nodes`` hold (each once)."""
    own = {facts[n].storage for n in heavy_nodes}
    seen: dict[object, int] = {}
    for node in heavy_nodes:
        for fact in facts[node].through_autograd:
            if fact.storage not in own:
                seen.setdefault(fact.storage, fact.nbytes)
    return sum(seen.values()), len(seen)
