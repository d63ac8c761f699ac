"""A per-instance ``functools.lru_cache`` around the instance's own method.

Source: https://github.com/getsentry/seer/pull/2512 - Autofix's memory leak came from
caching methods: the cache keeps every argument it was called with, ``self`` included,
and a cache stored on the instance keeps the instance in a loop with it.
"""

from __future__ import annotations

import functools

from scenarios.payload import heavy

PATTERN = "method-cache"


class RepoClient:
    def __init__(self, repo: str) -> None:
        self.repo = repo
        self.index = heavy()
        self.get_file = functools.lru_cache(maxsize=16)(self._get_file)

    def _get_file(self, path: str) -> str:
        return f"{self.repo}:{path}:{self.index.shape[0]}"


def run() -> object:
    client = RepoClient("getsentry/seer")
    return client.get_file("README.md"), client.get_file("README.md")
