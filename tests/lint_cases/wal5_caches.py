"""Eval cases for 5xx (caches). Expectations: `# CODE: line, col` (col 0-based)."""
import functools
from functools import cache, lru_cache


class Model:
    @functools.lru_cache(maxsize=None)  # WAL501: 7, 5
    def features(self, x):
        return x

    @functools.cache  # WAL501: 11, 5
    def table(self):
        return {}

    @lru_cache  # WAL501: 15, 5
    def other(self):
        return 1

    @cache  # WAL501: 19, 5
    async def fetch(self):
        return 1

    @staticmethod
    @functools.lru_cache
    def static(x):
        return x

    @classmethod
    @functools.cache
    def build(cls):
        return cls()

    @functools.cached_property
    def value(self):
        return 1


@functools.lru_cache
def module_level(x):
    return x


def factory():
    @functools.lru_cache
    def nested(x):
        return x

    return nested
