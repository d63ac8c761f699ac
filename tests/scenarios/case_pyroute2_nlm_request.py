"""A netlink socket keeps its own bound methods and replaces them with closures over itself.

Source: https://github.com/svinota/pyroute2/issues/644 - ``NetlinkMixin.__init__`` did
``self._genlm_request = self.nlm_request`` and then stored nested functions that call the
saved method under the original name (``self.nlm_request = nlm_request``): "objectX ->
objectX.__dict__ -> bound method ... -> objectX", so every socket waited for the collector.
"""

from __future__ import annotations

from typing import Any

from scenarios.payload import heavy

PATTERN = "bound-method-on-self"


class NetlinkSocket:
    def __init__(self, generator: bool = False) -> None:
        self.buffer = heavy()
        if not generator:

            def nlm_request(*argv: Any) -> tuple[Any, ...]:
                return tuple(self._genlm_request(*argv))

            self._genlm_request = self.nlm_request
            self.nlm_request = nlm_request  # type: ignore[method-assign]

    def nlm_request(self, *argv: Any) -> Any:
        yield from argv


def run() -> object:
    sock = NetlinkSocket()
    return sock.nlm_request(1, 2)
