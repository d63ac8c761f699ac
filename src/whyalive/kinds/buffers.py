"""Plain Python buffers that are big enough to matter."""

from __future__ import annotations

from typing import cast

from whyalive.kinds import HeavyFacts
from whyalive.words import size_to_words

DEFAULT_MIN_BUFFER_BYTES = 1 << 20


class BufferKind:
    """``bytes``, ``bytearray`` and ``memoryview`` of at least ``min_bytes``."""

    name = "buffer"

    def __init__(self, min_bytes: int = DEFAULT_MIN_BUFFER_BYTES) -> None:
        self.min_bytes = min_bytes

    def types(self) -> tuple[type, ...]:
        """Always available: these are builtins."""
        return (bytes, bytearray, memoryview)

    def describe(self, obj: object) -> HeavyFacts | None:
        """Size and identity; a memoryview's memory belongs to the object it views (its
        owner, whose facts the kind resolver then uses)."""
        if type(obj) is memoryview:
            owner = obj.obj
            # A view keeps its whole owner alive: a small view of a big buffer is heavy.
            whole = len(cast(bytes, owner)) if type(owner) in (bytes, bytearray) else obj.nbytes
            if max(obj.nbytes, whole) < self.min_bytes:
                return None
            return HeavyFacts(
                kind="memoryview",
                description=f"memoryview({size_to_words(obj.nbytes)})",
                nbytes=obj.nbytes,
                device="cpu",
                storage=("buffer", id(owner)),
                owner=owner,
            )
        if not isinstance(obj, (bytes, bytearray)):  # bytes/bytearray subclasses run no code here
            return None
        size = len(obj)
        if size < self.min_bytes:
            return None
        name = "bytes" if issubclass(type(obj), bytes) else "bytearray"
        return HeavyFacts(
            kind=name,
            description=f"{name}({size_to_words(size)})",
            nbytes=size,
            device="cpu",
            storage=("buffer", id(obj)),
            memory=_memory(obj, size),
        )


# CPython keeps a bytes object's data inline, right after its header (ob_sval).
_BYTES_DATA_OFFSET = bytes.__basicsize__ - 1


def _memory(obj: bytes | bytearray, size: int) -> tuple[int, int] | None:
    """The address range of the buffer's data, so views of it through other kinds merge."""
    if isinstance(obj, bytes):
        start = id(obj) + _BYTES_DATA_OFFSET
    else:
        import ctypes

        try:
            start = ctypes.addressof(ctypes.c_char.from_buffer(obj))
        except (TypeError, ValueError):  # not exportable now: counted, just not merged
            return None
    return (start, start + size)
