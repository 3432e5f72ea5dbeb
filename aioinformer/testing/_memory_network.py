"""Clients connected to KubeSim in memory: HTTP without sockets, every byte a loop callback.

The simulation's replicas talk real HTTP/1.1 to KubeSim (aiohttp's client and server, the
library's whole client stack), but over :class:`MemoryConnector` instead of TCP: a new
connection is a pair of in-memory transports joining a client protocol to a fresh protocol
of KubeSim's aiohttp server, and each ``write`` is delivered to the other end by
``loop.call_soon``, in order. So nothing but the event loop decides when bytes arrive, and
the simulation is deterministic (see :mod:`~aioinformer.testing._virtual_loop`).

Each end runs its callbacks in its own context: the client's in its node's (a frozen
replica receives nothing until it thaws, as a stopped process's socket buffers fill), the
server's in no node's (the server never freezes). :meth:`MemoryNetwork.cut` closes every
open connection of one node abruptly (a network blip: its watches end, its requests in
flight get no answer).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from aioinformer.testing._virtual_loop import Node, VirtualLoop

__all__ = ["MemoryConnector", "MemoryNetwork"]

_ports = itertools.count(40000)


class _End(asyncio.Transport):
    """One end of an in-memory connection."""

    def __init__(self, pipe: _Pipe, side: int, context: contextvars.Context) -> None:
        super().__init__()
        self._pipe = pipe
        self._side = side
        self.context = context
        self.protocol: asyncio.BaseProtocol | None = None
        self._paused = False
        self._pending: list[bytes] = []
        self._closing = False
        self.lost = False

    # -- writing --------------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or not data:
            return
        self._pipe.send(self._side, bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        raise NotImplementedError

    def get_write_buffer_size(self) -> int:
        return 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (0, 0)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    # -- reading --------------------------------------------------------------------------------

    def is_reading(self) -> bool:
        return not self._paused

    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        if not self._paused:
            return
        self._paused = False
        pending, self._pending = self._pending, []
        for data in pending:
            self._pipe.loop.call_soon(self._receive, data, context=self.context)

    def _receive(self, data: bytes) -> None:
        if self.protocol is None or self.lost:
            return
        if self._paused:
            self._pending.append(data)
            return
        self.protocol.data_received(data)  # type: ignore[attr-defined]

    # -- closing --------------------------------------------------------------------------------

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._pipe.close(self._side, abort=False)

    def abort(self) -> None:
        self._pipe.close(self._side, abort=True)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self.protocol is not None
        return self.protocol

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return self._pipe.addresses[1 - self._side]
        if name == "sockname":
            return self._pipe.addresses[self._side]
        return default


_CLOSE = object()
"""In a delivery queue: the connection closes here (after what was sent before)."""


class _Pipe:
    """Two ends and the rules of delivery between them: in order, ``latency`` seconds
    late (virtual time) each way."""

    def __init__(
        self,
        network: MemoryNetwork,
        node: Node | None,
        client_ctx: contextvars.Context,
        latency: float,
    ) -> None:
        self.loop = network.loop
        self.network = network
        self.node = node
        self.latency = latency
        port = next(_ports)
        self.addresses = (("127.0.0.1", port), ("127.0.0.1", 6443))
        self.ends = (_End(self, 0, client_ctx), _End(self, 1, network.server_context))
        self.closed_by: int | None = None
        self._queues: tuple[deque[tuple[float, object]], ...] = (deque(), deque())

    def send(self, side: int, data: bytes) -> None:
        self._post(1 - side, data)

    def close(self, side: int, *, abort: bool) -> None:
        if self.closed_by is not None:
            return
        self.closed_by = side
        self.network.pipes.discard(self)
        for end in self.ends:
            end._closing = True
        me = self.ends[side]
        self.loop.call_soon(self._lost, me, None, context=me.context)
        self._post(1 - side, ConnectionResetError("connection reset by peer") if abort else _CLOSE)

    def _post(self, to: int, item: object) -> None:
        """Deliver ``item`` (bytes, or a close) to end ``to``, after what went before."""
        end = self.ends[to]
        if not self.latency:
            self.loop.call_soon(self._deliver, end, item, context=end.context)
            return
        queue = self._queues[to]
        due = self.loop.virtual_time + self.latency
        queue.append((due, item))
        if len(queue) == 1:
            self.loop.call_at(due, self._due, to, context=self.network.server_context)

    def _due(self, to: int) -> None:
        queue, end, now = self._queues[to], self.ends[to], self.loop.virtual_time
        while queue and queue[0][0] <= now:
            self.loop.call_soon(self._deliver, end, queue.popleft()[1], context=end.context)
        if queue:
            self.loop.call_at(queue[0][0], self._due, to, context=self.network.server_context)

    @classmethod
    def _deliver(cls, end: _End, item: object) -> None:
        if isinstance(item, bytes):
            end._receive(item)
        else:
            cls._lost(end, item if isinstance(item, Exception) else None)

    @staticmethod
    def _lost(end: _End, error: Exception | None) -> None:
        if end.lost:
            return
        end.lost = True
        pending, end._pending = end._pending, []
        if end.protocol is None:
            return
        for data in pending:  # what arrived before the close is read first
            end.protocol.data_received(data)  # type: ignore[attr-defined]
        end.protocol.connection_lost(error)


class MemoryNetwork:
    """Connections from the nodes' clients to one aiohttp server, in memory.

    Args:
        loop: the simulation's loop.
        server: the server's protocol factory (an aiohttp ``web.Server``, e.g. an
            ``AppRunner``'s ``server`` after ``setup()``).
    """

    def __init__(self, loop: VirtualLoop, server: Callable[[], asyncio.Protocol]) -> None:
        self.loop = loop
        self.server = server
        self.server_context = loop.node_context(None)
        self.pipes: set[_Pipe] = set()
        self.connections = 0
        """Connections opened so far."""

    def connect(self, node: Node | None, client: asyncio.Protocol, latency: float = 0.0) -> None:
        """Join ``client`` (a protocol of ``node``) to a new server protocol, the bytes
        ``latency`` seconds late each way."""
        self.connections += 1
        pipe = _Pipe(self, node, contextvars.copy_context(), latency)
        self.pipes.add(pipe)
        client_end, server_end = pipe.ends
        server = self.server_context.run(self.server)
        client_end.protocol, server_end.protocol = client, server
        self.server_context.run(server.connection_made, server_end)
        client.connection_made(client_end)

    def cut(self, node: Node) -> int:
        """Close every open connection of ``node`` abruptly; how many."""
        mine = sorted((p for p in self.pipes if p.node is node), key=lambda p: p.addresses[0][1])
        for pipe in mine:
            pipe.close(1, abort=True)
        return len(mine)

    def session(self, node: Node | None, latency: float = 0.0) -> aiohttp.ClientSession:
        """An aiohttp session whose connections are this network's, for ``node``'s code
        (make it inside the node's context), delivering ``latency`` seconds late."""
        return aiohttp.ClientSession(
            connector=MemoryConnector(self, node, latency), trust_env=False, read_bufsize=2**21
        )


class MemoryConnector(aiohttp.BaseConnector):
    """An aiohttp connector whose connections are :class:`MemoryNetwork` pipes (the URL's
    host and port are ignored: every connection reaches the network's server)."""

    def __init__(self, network: MemoryNetwork, node: Node | None, latency: float = 0.0) -> None:
        super().__init__(loop=network.loop, limit=100)
        self._network = network
        self._node = node
        self._latency = latency

    async def _create_connection(
        self, req: Any, traces: Any, timeout: aiohttp.ClientTimeout
    ) -> Any:
        protocol = self._factory()
        self._network.connect(self._node, protocol, self._latency)
        return protocol


def serve(app: web.Application) -> web.AppRunner:
    """An ``AppRunner`` for ``app`` with KubeSim's settings, to be set up (``await
    runner.setup()``) and served through a :class:`MemoryNetwork` (``runner.server``)."""
    return web.AppRunner(app, handler_cancellation=True, access_log=None, lingering_time=0)
