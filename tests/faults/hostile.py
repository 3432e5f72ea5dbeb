"""A tiny misbehaving API server for the fault tests, and the measures they report.

:func:`hostile_server` serves one handler on 127.0.0.1 (a free port, closed on exit) and
records every request (its kind, list or watch, its query and the loop time it came at).
The informer under test talks to it through the library's real client: a kubernetes_asyncio
``ApiClient`` configured for it (:meth:`Hostile.api_client`). The helpers build wire bytes
(:func:`pod`, :func:`list_body`, :func:`event`), measure the process's resident memory
while a scenario runs (:class:`RssSampler`) and wait for conditions with a bounded poll
(tests.support.eventually, never a sleep then an assert).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from kubernetes_asyncio import client

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

TOKEN = "hostile-test-token-0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass
class Seen:
    """One request the server received."""

    at: float
    kind: str  # "list" or "watch"
    query: dict[str, str]


@dataclass
class Hostile:
    """A running hostile server: its ``url`` and the requests it ``seen``."""

    url: str
    seen: list[Seen] = field(default_factory=list)

    def api_client(self, token: str = TOKEN) -> Any:
        """A kubernetes_asyncio ApiClient for this server, with a bearer token."""
        cfg = client.Configuration()
        cfg.host = self.url
        cfg.api_key = {"BearerToken": token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        return client.ApiClient(configuration=cfg)

    def of(self, kind: str) -> list[Seen]:
        return [s for s in self.seen if s.kind == kind]

    def rate(self, kind: str | None = None) -> float:
        """Requests per second (of ``kind``, or all) from the first to the last seen."""
        seen = self.seen if kind is None else self.of(kind)
        if len(seen) < 2:
            return 0.0
        return (len(seen) - 1) / max(seen[-1].at - seen[0].at, 1e-3)


@contextlib.asynccontextmanager
async def hostile_server(handler: Handler) -> AsyncIterator[Hostile]:
    """Serve ``handler`` on 127.0.0.1 until the block ends (open responses cancelled)."""
    loop = asyncio.get_running_loop()
    server: Hostile | None = None

    async def record(request: web.Request) -> web.StreamResponse:
        assert server is not None
        kind = "watch" if request.query.get("watch") in ("1", "true") else "list"
        server.seen.append(Seen(loop.time(), kind, dict(request.query)))
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server = Hostile(f"http://127.0.0.1:{port}")
    try:
        yield server
    finally:
        await runner.cleanup()


# -- wire bytes -----------------------------------------------------------------------------


def pod(name: str, rv: int | str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": str(rv)}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}]}, **extra}


def list_body(items: list[Any], rv: int | str, cont: str | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def event(etype: str, obj: Any) -> bytes:
    return orjson.dumps({"type": etype, "object": obj}) + b"\n"


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def json_response(body: bytes, status_code: int = 200) -> web.Response:
    return web.Response(body=body, status=status_code, content_type="application/json")


async def stream(request: web.Request, *chunks: bytes) -> web.StreamResponse:
    """A chunked 200 JSON response that sends ``chunks`` and ends cleanly."""
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    for chunk in chunks:
        await resp.write(chunk)
    await resp.write_eof()
    return resp


async def hang(request: web.Request) -> web.StreamResponse:
    """Never answer (the server cancels this when it stops)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def nested(depth: int) -> Any:
    """A JSON value nested ``depth`` levels deep, built without recursion."""
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_bytes(depth: int) -> bytes:
    """``nested(depth)`` as JSON (orjson refuses to write past 255 levels)."""
    return b'{"a":' * depth + b"1" + b"}" * depth


# -- measures --------------------------------------------------------------------------------


def rss_bytes() -> int:
    """The process's resident memory now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler:
    """``async with RssSampler() as rss:`` samples the resident memory every 20 ms;
    ``rss.growth`` is the largest sample minus the first, in bytes."""

    def __init__(self) -> None:
        self.base = 0
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def growth(self) -> int:
        return max(0, self.peak - self.base)

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_bytes())
            await asyncio.sleep(0.02)

    async def __aenter__(self) -> RssSampler:
        self.base = self.peak = rss_bytes()
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.peak = max(self.peak, rss_bytes())
