"""A serializer whose nested helpers call each other and capture the per-call state.

Source: https://github.com/getsentry/sentry-python/issues/6559 - ``serialize()`` built
nested functions on every call that refer to each other (and capture ``memo``, ``path``,
``meta_stack``), so every call left a cycle of closures, cells and the state they
captured for the collector.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "recursive-closure"


def serialize(event: Any) -> Any:
    memo: list[Any] = [heavy()]
    path: list[str] = []

    def _serialize_node(obj: Any, segment: str = "") -> Any:
        path.append(segment)
        try:
            return _serialize_node_impl(obj)
        finally:
            path.pop()

    def _serialize_node_impl(obj: Any) -> Any:
        memo.append(id(obj))
        if isinstance(obj, dict):
            return {str(k): _serialize_node(v, str(k)) for k, v in obj.items()}
        if isinstance(obj, list):
            return [_serialize_node(v, str(i)) for i, v in enumerate(obj)]
        return repr(obj)

    return _serialize_node(event)


def run() -> object:
    return serialize({"a": [1, 2], "b": {"c": "d"}})
