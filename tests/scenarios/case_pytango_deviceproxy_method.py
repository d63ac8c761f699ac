"""A control system replaces a device proxy's method with the proxy's own bound method.

Source: https://github.com/tango-controls/pytango/issues/299 - reassigning a method of a
``DeviceProxy`` on the proxy itself (``proxy.write_attribute = proxy.write_attribute``, the
first step of wrapping it) leaked every proxy: the object holds its bound method, and the
method holds the object.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class DeviceProxy:
    def __init__(self, name: str) -> None:
        self.name = name
        self.attribute_cache = heavy()

    def write_attribute(self, attribute: str, value: float) -> str:
        return f"{self.name}/{attribute}={value}"


def run() -> object:
    proxy = DeviceProxy("sys/tg_test/1")
    proxy.write_attribute = proxy.write_attribute  # type: ignore[method-assign]
    return proxy.write_attribute("ampli", 1.5)
