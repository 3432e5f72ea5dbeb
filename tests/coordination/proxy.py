"""A tiny HTTP proxy in front of KubeSim that can hold one replica's Lease requests, or
forward a write and lose its answer.

``async with FaultProxy(sim) as proxy:`` serves on 127.0.0.1 and forwards everything to
the sim; ``proxy.api_client()`` is a kubernetes_asyncio client through it.

* After ``proxy.hold()``, requests whose path contains ``/leases`` wait (until
  ``proxy.release()`` or the client gives up), as when a replica is cut off from the API
  server for its renewals while its other requests still go through.
* ``proxy.lose_answers(n, method, path_contains)``: the next ``n`` matching requests are
  forwarded (the server applies them) and then the client's connection is closed without
  an answer: a write whose outcome the client cannot know (``proxy.lost`` lists them).
* ``proxy.delay_answers(n, method, path_contains, seconds)``: the next ``n`` matching
  requests are forwarded at once, their answers held ``seconds`` (``proxy.delayed``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web

from aioinformer.testing import KubeSim

_HOP = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass
class _Rule:
    remaining: int
    method: str
    path_contains: str
    delay: float | None = None  # None: lose the answer
    before: Callable[[], object] | None = None  # called when it matches, before forwarding


class FaultProxy:
    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self._released = asyncio.Event()
        self._released.set()
        self.held = 0
        """Lease requests held so far."""
        self.lost: list[tuple[str, str, int]] = []
        """(method, path, status the server answered) of every answer lost so far."""
        self.delayed: list[tuple[str, str, int]] = []
        """(method, path, status the server answered) of every answer delayed so far."""
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request forwarded."""
        self._rules: list[_Rule] = []
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> FaultProxy:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._released.set()
        assert self._runner is not None and self._session is not None
        await self._runner.cleanup()
        await self._session.close()

    def hold(self) -> None:
        """Hold every Lease request from now on."""
        self._released.clear()

    def release(self) -> None:
        """Let the held Lease requests (and the next ones) through."""
        self._released.set()

    def lose_answers(
        self, n: int, method: str, path_contains: str, before: Callable[[], object] | None = None
    ) -> None:
        """Forward the next ``n`` ``method`` requests whose path contains
        ``path_contains`` (calling ``before()`` first), then close the connection without
        answering."""
        self._rules.append(_Rule(n, method, path_contains, None, before))

    def delay_answers(self, n: int, method: str, path_contains: str, seconds: float) -> None:
        """Forward the next ``n`` matching requests at once, hold their answers ``seconds``."""
        self._rules.append(_Rule(n, method, path_contains, seconds))

    def api_client(self) -> Any:
        from kubernetes_asyncio import client

        cfg = self.sim.client_configuration()
        cfg.host = self.url
        return client.ApiClient(configuration=cfg)

    def _rule(self, request: web.Request) -> _Rule | None:
        for rule in self._rules:
            if request.method == rule.method and rule.path_contains in request.path:
                rule.remaining -= 1
                if rule.remaining == 0:
                    self._rules.remove(rule)
                return rule
        return None

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if "/leases" in request.path and not self._released.is_set():
            self.held += 1
            await self._released.wait()
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        try:
            body = await request.read()
        except ConnectionResetError:  # the client gave up while it was held
            return web.Response(status=499)
        rule = self._rule(request)
        if rule is not None and rule.before is not None:
            rule.before()
        self.requests.append((request.method, request.path))
        async with self._session.request(
            request.method, self.sim.url + request.rel_url.path_qs, headers=headers, data=body
        ) as upstream:
            if rule is not None and rule.delay is None:
                await upstream.read()  # the server has answered: the write is done
                self.lost.append((request.method, request.path, upstream.status))
                assert request.transport is not None
                request.transport.abort()  # and the client never hears of it
                return web.Response(status=499)
            if rule is not None:
                await upstream.read()
                self.delayed.append((request.method, request.path, upstream.status))
                await asyncio.sleep(rule.delay)
            out = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _HOP:
                    out.headers[k] = v
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out
