"""Eval cases for 5xx (caches). Expectations: `# CODE: line, col` (col 0-based)."""
import functools
from functools import cache, lru_cache


class Model(PreTrainedModel):
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



# WAL905 (off by default): the instances, arguments and results are all light.
class Tokenizer:
    def __init__(self, vocab_file: str, lowercase: bool = True):
        self.vocab_file = vocab_file
        self.lowercase = lowercase
        self.special = {"<s>", "</s>"}

    @functools.lru_cache  # WAL905: 59, 5
    def token_ids(self, text: str, limit: int = 8) -> list[int]:
        return [len(word) for word in text.split()][:limit]

    @functools.cache  # WAL905: 63, 5
    def pieces(self, text: str):
        return tuple(p.lower() for p in text.split(" "))

    # Each of these keeps something that may be heavy: still WAL501.
    @functools.cache  # WAL501: 68, 5
    def embed(self, ids: "torch.Tensor"):
        return ids

    @functools.cache  # WAL501: 72, 5
    def encode(self, text):
        return text

    @functools.cache  # WAL501: 76, 5
    def table(self, text: str):
        return torch.zeros(len(text))


# A light class with a same-file subclass that stores a tensor: its instances may be heavy.
class Base:
    @functools.cache  # WAL501: 83, 5
    def name(self) -> str:
        return "base"


class Loaded(Base):
    def load(self, path: str):
        self.weights = torch.load(path)
