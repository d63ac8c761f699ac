"""A tween (request handler) closure that captures the registry it is stored in.

Source: https://github.com/Pylons/pyramid/pull/2967 - ``excview_tween`` closed over
``registry`` while the registry kept the tween, so every application made and dropped
(one per test) stayed alive until a collection: registry -> tweens -> closure -> registry.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.payload import heavy

PATTERN = "closure-in-captured-container"


class Registry(dict):  # type: ignore[type-arg]
    """An application registry: settings and components by name."""


def excview_tween_factory(
    handler: Callable[[str], str], registry: Registry
) -> Callable[[str], str]:
    def excview_tween(request: str) -> str:
        try:
            return handler(request)
        except ValueError:
            return registry["error_view"](request)

    return excview_tween


def make_app() -> Registry:
    registry = Registry()
    registry["settings"] = heavy()
    registry["error_view"] = lambda request: f"error: {request}"
    registry["tweens"] = [excview_tween_factory(str.upper, registry)]
    return registry


def run() -> object:
    app = make_app()
    return app["tweens"][0]("ok")
