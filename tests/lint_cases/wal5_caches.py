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


# One entry on a method that takes nothing but `self` and returns something light: it keeps
# the instance used last, not every one (WAL905), unless the class is a module with
# parameters, the cache is bigger, the method takes arguments or the result may be heavy.
class Environment(ClusterEnvironment):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._comm = MPI.COMM_WORLD.Split(color=0)

    @lru_cache(1)  # WAL905: 101, 5
    def world_size(self) -> int:
        return self._comm.Get_size()

    @functools.lru_cache(maxsize=1)  # WAL905: 105, 5
    def rank(self):
        return 0

    @functools.lru_cache(maxsize=2)  # WAL501: 109, 5
    def local_rank(self) -> int:
        return self._comm.Get_rank()

    @functools.lru_cache(maxsize=1)  # WAL501: 113, 5
    def node(self, index: int) -> int:
        return index

    @functools.lru_cache(maxsize=1)  # WAL501: 117, 5
    def table(self):
        return torch.zeros(3)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    @functools.lru_cache(maxsize=1)  # WAL501: 127, 5
    def n_params(self) -> int:
        return 3
