"""Connection admission: slow or idle clients cannot take the server's file descriptors.

kube-apiserver (Go's net/http) closes a connection whose request head has not arrived
within ``ReadHeaderTimeout`` (32 s) and never blocks serving on other clients. aiohttp
waits for a request head forever, so 1,100 half-sent connections under ``ulimit -n 1024``
used every descriptor and authenticated requests timed out. :class:`ConnectionGuard`
wraps the server's protocol factory:

* a connection whose first request head (up to the blank line) is not complete within
  ``header_timeout`` seconds is closed;
* at most ``max_connections`` connections are open (by default the process's descriptor
  limit minus a reserve); a new one beyond that evicts the oldest connection still waiting
  for its first request head, or is refused when every open connection is serving a
  request (a watch, a list) - so well-behaved clients keep being served.

The default cap leaves room for an accept burst: the event loop accepts up to ``backlog``
connections (a descriptor each) in one go before the guard sees any of them, as it does
when the server was busy while clients queued up. A cap of the limit minus a small reserve
alone ran the process out of descriptors then (``accept()`` failing with EMFILE, logged at
every retry); the default is the limit minus the backlog minus the reserve.

For https the TLS handshake is bounded by the same timeout (``ssl_handshake_timeout``);
connections are counted once the handshake is done. :class:`GuardedSite` is aiohttp's
socket site with the guard in place.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
from typing import Any

from aiohttp import web

__all__ = ["ConnectionGuard", "GuardedSite", "default_max_connections"]

#: descriptors kept for everything that is not a client connection
_RESERVE = 64


def default_max_connections(backlog: int = 128) -> int:
    """The open-files soft limit minus an accept burst of ``backlog`` connections and a
    reserve for everything else (at least 16)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(16, int(soft) - backlog - _RESERVE)


class ConnectionGuard:
    """Counts connections and enforces the header timeout and the cap (module docstring).

    ``factory`` is the protocol factory to wrap (aiohttp's ``web.Server``); ``backlog`` the
    most connections the server accepts at once (what the default cap leaves room for)."""

    def __init__(
        self,
        factory: Any,
        *,
        header_timeout: float = 32.0,
        max_connections: int | None = None,
        backlog: int = 128,
    ) -> None:
        self.factory = factory
        self.header_timeout = header_timeout
        self.max_connections = max_connections or default_max_connections(backlog)
        self.open: dict[_Guarded, None] = {}  # in arrival order
        self.waiting: dict[_Guarded, None] = {}  # no complete request head yet
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self.factory(), self)

    def admit(self, conn: _Guarded) -> bool:
        """Register ``conn``; False when it must be refused (everything else is busy)."""
        if len(self.open) >= self.max_connections:
            if not self.waiting:
                self.refused += 1
                return False
            oldest = next(iter(self.waiting))
            self.evicted += 1
            oldest.drop()
        self.open[conn] = None
        self.waiting[conn] = None
        return True

    def forget(self, conn: _Guarded) -> None:
        self.open.pop(conn, None)
        self.waiting.pop(conn, None)


class _Guarded(asyncio.Protocol):
    """One connection: delegates to aiohttp's protocol, watches for the request head."""

    def __init__(self, inner: Any, guard: ConnectionGuard) -> None:
        self.inner = inner
        self.guard = guard
        self.transport: asyncio.BaseTransport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if not self.guard.admit(self):
            _abort(transport)
            return
        self.admitted = True
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.guard.header_timeout, self._too_slow)
        self.inner.connection_made(transport)

    def _too_slow(self) -> None:
        self.timer = None
        if self in self.guard.waiting:
            self.guard.timed_out += 1
            self.drop()

    def drop(self) -> None:
        """Close at once (the descriptor is freed now, not after a graceful close)."""
        self.guard.forget(self)
        if self.transport is not None:
            _abort(self.transport)

    def data_received(self, data: bytes) -> None:
        if self in self.guard.waiting:
            seen = self.tail + data
            if b"\r\n\r\n" in seen:
                del self.guard.waiting[self]
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
            else:
                self.tail = seen[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.admitted:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def _abort(transport: asyncio.BaseTransport) -> None:
    abort = getattr(transport, "abort", None)
    if abort is not None:
        abort()
    else:
        transport.close()


class GuardedSite(web.SockSite):
    """``web.SockSite`` whose connections go through a :class:`ConnectionGuard` (the
    runner's ``shutdown_timeout`` bounds how long a shutdown waits for its connections)."""

    def __init__(
        self,
        runner: web.BaseRunner,
        sock: Any,
        *,
        ssl_context: ssl.SSLContext | None = None,
        header_timeout: float = 32.0,
        max_connections: int | None = None,
    ) -> None:
        super().__init__(runner, sock, ssl_context=ssl_context)
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.guard: ConnectionGuard | None = None

    async def start(self) -> None:
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self.guard = ConnectionGuard(
            server,
            header_timeout=self.header_timeout,
            max_connections=self.max_connections,
            backlog=self._backlog,
        )
        loop = asyncio.get_running_loop()
        extra: dict[str, Any] = {}
        if self._ssl_context is not None:
            extra["ssl_handshake_timeout"] = self.header_timeout
        self._server = await loop.create_server(
            self.guard, sock=self._sock, ssl=self._ssl_context, backlog=self._backlog, **extra
        )
