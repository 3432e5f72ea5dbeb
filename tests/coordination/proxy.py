"""A tiny HTTP proxy in front of KubeSim that can hold one replica's Lease requests.

``async with LeaseStaller(sim) as proxy:`` serves on 127.0.0.1 and forwards everything to
the sim; after ``proxy.hold()``, requests whose path contains ``/leases`` wait (until
``proxy.release()`` or the client gives up), as when a replica is cut off from the API
server for its renewals while its other requests still go through. ``proxy.api_client()`` is a
kubernetes_asyncio client through it.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web

from aioinformer.testing import KubeSim

_HOP = {"host", "content-length", "transfer-encoding", "connection"}


class LeaseStaller:
    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self._released = asyncio.Event()
        self._released.set()
        self.held = 0
        """Lease requests held so far."""
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> LeaseStaller:
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

    def api_client(self) -> Any:
        from kubernetes_asyncio import client

        cfg = self.sim.client_configuration()
        cfg.host = self.url
        return client.ApiClient(configuration=cfg)

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
        async with self._session.request(
            request.method, self.sim.url + request.rel_url.path_qs, headers=headers, data=body
        ) as upstream:
            out = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _HOP:
                    out.headers[k] = v
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out
