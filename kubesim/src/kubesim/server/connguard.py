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
  for its first request head, else the oldest idle keep-alive connection (its last
  response sent, no request under way), or is refused when every open connection is
  serving a request (a watch, a list) - so well-behaved clients keep being served;
* an idle keep-alive connection is closed after ``IDLE_TIMEOUT`` (90 s, kube-apiserver's
  ``IdleTimeout``; aiohttp's default keeps one for an hour): the runner's
  ``keepalive_timeout``, which KubeSim sets (its ``idle_timeout``).

The default cap leaves room for two accept bursts: the event loop accepts up to
``backlog`` connections (a descriptor each) in one go before the guard sees any of them, as
it does when the server was busy while clients queued up; and a connection the guard drops
frees its descriptor only on the loop's next iteration, by when the next burst may have
been accepted. A cap of the limit minus a small reserve alone ran the process out of
descriptors (``accept()`` failing with EMFILE, logged at every retry), and so, now and
then, did the limit minus one burst; the default is the limit minus twice the backlog
minus the reserve (1024 descriptors: 704 connections).

For https a connection is counted from its accept, as for http, not once its TLS
handshake is done: 1,100 connections that never started TLS used every descriptor while
the guard counted none of them. The handshake is bounded by ``header_timeout`` too (Go's
``http.Server`` bounds it by ``ReadHeaderTimeout``), and the request head then has its own
``header_timeout``; a connection still in its handshake is "waiting" (the first evicted
at the cap). KubeSim does the TLS itself (:class:`_Tls`: asyncio's TLS protocol, but its
sockets are read into one buffer per thread instead of asyncio's 256 KiB per connection,
which made 3,000 idle watches over https cost ~900 MB). :class:`GuardedSite` is aiohttp's
socket site with the guard in place.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
import threading
from asyncio import sslproto
from typing import Any

from aiohttp import web

__all__ = ["ConnectionGuard", "GuardedSite", "default_max_connections"]

#: descriptors kept for everything that is not a client connection
_RESERVE = 64
#: Seconds an idle keep-alive connection is kept (kube-apiserver's ``IdleTimeout``).
IDLE_TIMEOUT = 90.0
#: Bytes of TLS read from a socket at a time, into one buffer per thread that every
#: connection of its event loop shares (asyncio's protocol keeps 256 KiB per connection).
TLS_READ_BUFFER = 256 * 1024
#: Bytes of decrypted data taken from a connection's TLS stream at a time: one record's.
TLS_RECORD = 16 * 1024
_buffers = threading.local()


def _read_buffer() -> memoryview:
    """This thread's TLS read buffer: the loop reads a socket into it and hands it to one
    protocol, which copies it out, in one callback, so connections can share it."""
    view: memoryview | None = getattr(_buffers, "view", None)
    if view is None:
        view = _buffers.view = memoryview(bytearray(TLS_READ_BUFFER))
    return view


def default_max_connections(backlog: int = 128) -> int:
    """The open-files soft limit minus two accept bursts of ``backlog`` connections (one
    accepted, one dropped and not closed yet) and a reserve for everything else (at least
    16)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(16, int(soft) - 2 * backlog - _RESERVE)


class ConnectionGuard:
    """Counts connections and enforces the header timeout and the cap (module docstring).

    ``factory`` is the protocol factory to wrap (aiohttp's ``web.Server``); ``backlog`` the
    most connections the server accepts at once (what the default cap leaves room for);
    ``ssl_context`` makes the connections https (the guard does the TLS)."""

    def __init__(
        self,
        factory: Any,
        *,
        header_timeout: float = 32.0,
        max_connections: int | None = None,
        backlog: int = 128,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.factory = factory
        self.header_timeout = header_timeout
        self.max_connections = max_connections or default_max_connections(backlog)
        self.ssl_context = ssl_context
        self.open: dict[_Guarded, None] = {}  # in arrival order
        self.waiting: dict[_Guarded, None] = {}  # no complete request head yet
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0

    def __call__(self) -> asyncio.BaseProtocol:
        conn = _Guarded(self.factory(), self)
        if self.ssl_context is None:
            return conn
        return _Tls(conn, self.ssl_context, self.header_timeout)

    def admit(self, conn: _Guarded) -> bool:
        """Register ``conn``; False when it must be refused (everything else is busy)."""
        if len(self.open) >= self.max_connections:
            victim = next(iter(self.waiting), None) or self._idle()
            if victim is None:
                self.refused += 1
                return False
            self.evicted += 1
            victim.drop()
        self.open[conn] = None
        self.waiting[conn] = None
        return True

    def _idle(self) -> _Guarded | None:
        """The oldest open connection between two requests (None if all are serving)."""
        return next((conn for conn in self.open if conn.idle()), None)

    def forget(self, conn: _Guarded) -> None:
        self.open.pop(conn, None)
        self.waiting.pop(conn, None)


class _Guarded(asyncio.Protocol):
    """One connection: delegates to aiohttp's protocol, watches for the request head.

    Over http it is the socket's protocol. Over https :class:`_Tls` is, and tells this
    one of the connection (:meth:`accepted`) before the handshake and passes the
    decrypted stream on after it."""

    def __init__(self, inner: Any, guard: ConnectionGuard) -> None:
        self.inner = inner
        self.guard = guard
        self.transport: asyncio.BaseTransport | None = None  # the socket's
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""
        self.admitted = False
        self.connected = False  # aiohttp's protocol has its transport

    def accepted(self, transport: asyncio.BaseTransport) -> bool:
        """Count the connection (its socket's ``transport``) from now, start its timer;
        False when it was refused (and aborted)."""
        self.transport = transport
        if not self.guard.admit(self):
            _abort(transport)
            return False
        self.admitted = True
        self._restart_timer()
        return True

    def _restart_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.guard.header_timeout, self._too_slow)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.transport is None:  # http: the socket's transport itself
            if not self.accepted(transport):
                return
        elif self in self.guard.waiting:  # https, handshake done: the head's own time
            self._restart_timer()
        self.connected = True
        self.inner.connection_made(transport)

    def idle(self) -> bool:
        """Whether aiohttp's protocol is between two requests: it answered the last one and
        has no other parsed (aiohttp's own state; not knowing counts as busy)."""
        return (
            self.connected
            and self not in self.guard.waiting
            and not getattr(self.inner, "_request_in_progress", True)
            and not getattr(self.inner, "_messages", True)
        )

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

    def release(self) -> None:
        """The socket is closed: no longer counted, no timer."""
        self.guard.forget(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.release()
        if self.connected:
            self.connected = False
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class _Tls(sslproto.SSLProtocol):
    """asyncio's server-side TLS protocol on an accepted socket, reading into the thread's
    shared buffer (:func:`_read_buffer`) instead of a buffer of its own; the connection is
    counted (and its timer started) when the socket is accepted, before the handshake."""

    max_size = TLS_RECORD  # what asyncio's protocol decrypts at a time, and sizes by

    def __init__(self, conn: _Guarded, context: ssl.SSLContext, handshake_timeout: float) -> None:
        super().__init__(
            asyncio.get_running_loop(),
            conn,
            context,
            None,  # type: ignore[arg-type]  # no waiter: the app protocol sees the handshake end
            server_side=True,
            # the guard's timer closes a slow handshake first (and counts it)
            ssl_handshake_timeout=int(handshake_timeout) + 1,
        )
        self.conn = conn
        self._ssl_buffer = bytearray()  # never read into: get_buffer gives the shared one
        self._ssl_buffer_view = memoryview(self._ssl_buffer)

    def get_buffer(self, n: int) -> memoryview:
        # asyncio's buffer_updated copies from this view into the connection's own BIO
        self._ssl_buffer_view = _read_buffer()
        return self._ssl_buffer_view

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.conn.accepted(transport):
            super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.conn.release()  # also when the handshake never finished (no app protocol)
        if self.conn.admitted:
            super().connection_lost(exc)


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
            ssl_context=self._ssl_context,
        )
        loop = asyncio.get_running_loop()
        # no ssl= here: the guard's protocol does the TLS, so it sees the accept
        self._server = await loop.create_server(self.guard, sock=self._sock, backlog=self._backlog)

    async def stop(self) -> None:
        """Stop accepting, and close the connections aiohttp does not know of yet (still in
        their TLS handshake): the runner's shutdown closes the others."""
        await super().stop()
        if self.guard is not None:
            for conn in list(self.guard.open):
                if not conn.connected:
                    conn.drop()
