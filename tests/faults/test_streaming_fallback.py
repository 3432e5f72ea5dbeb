"""A streaming list that fails falls back to a plain list at once, whatever the failure.

A proxy that ends every stream after a few seconds, a server that sends the objects as
ADDED and closes without the initial-events-end bookmark (it ignores
``sendInitialEvents``), a cut stream, an error answer: each streaming attempt used to
count as a transport error and start again, with a fresh ``initial_events_timeout``, so
the cache never synced (4 streaming attempts and 0 plain lists in 25 s). The bound now:
ONE streaming attempt per sync; when it fails before its bookmark, the next attempt of
that sync (after the usual backoff) is a plain list. A later sync (a relist) tries a
streaming list again; a 422 or no bookmark within ``initial_events_timeout`` still
switches to list+watch for good.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import web

from aioinformer import InformerFactory, WatchOptions
from aioinformer._cache import watcher
from aioinformer.testing import eventually
from tests.faults.hostile import event, hostile_server, json_response, list_body, pod, status

OBJECTS = [pod("a", 5), pod("b", 6)]
END = {"k8s.io/initial-events-end": "true"}


def options() -> WatchOptions:
    return WatchOptions(
        min_watch_timeout=30.0,
        max_watch_timeout=30.0,
        backoff_initial=0.05,
        backoff_maximum=0.2,
        backoff_jitter=0.0,
        initial_events_timeout=60.0,
    )


async def failing_stream(request: web.Request, how: str) -> web.StreamResponse:
    """A streaming list answered ``how``: never with its end bookmark."""
    if how == "status-500":
        body = orjson.dumps(status(500, "InternalError", "the proxy failed"))
        return json_response(body, 500)
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(event("ADDED", OBJECTS[0]))
    if how == "ignored":  # every object as ADDED, then a clean close (no WatchList)
        await resp.write(event("ADDED", OBJECTS[1]))
    elif how == "error-event":
        await resp.write(event("ERROR", status(500, "InternalError", "etcd")))
    elif how == "proxy-ends":  # the rest is slow; a proxy ends the stream first
        await asyncio.sleep(0.3)
    elif how == "cut":
        assert request.transport is not None
        request.transport.close()
        return resp
    await resp.write_eof()
    return resp


@pytest.mark.parametrize("how", ["proxy-ends", "ignored", "cut", "error-event", "status-500"])
async def test_a_failed_streaming_list_is_followed_by_a_plain_list(how: str) -> None:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        query = request.query
        if query.get("watch") not in ("1", "true"):
            seen.append("list")
            return json_response(list_body(OBJECTS, 10))
        if query.get("sendInitialEvents") == "true":
            seen.append("stream")
            return await failing_stream(request, how)
        seen.append("watch")
        await asyncio.Event().wait()
        raise AssertionError

    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", streaming_list=True)
            await eventually(lambda: "list" in seen, "a plain list", timeout=15)
            await inf.wait_for_sync(timeout=10)
            assert sorted(o.key for o in inf.snapshot().list()) == ["default/a", "default/b"]
            assert inf.snapshot().resource_version == 10
            await eventually(lambda: "watch" in seen, "the watch after the list")
    assert seen[: seen.index("list")] == ["stream"], seen
    assert inf.statistics().stream_errors + sum(inf.statistics().errors_by_code.values()) >= 1


async def test_the_next_sync_tries_a_streaming_list_again() -> None:
    """The fallback is for the sync whose streaming list failed: the relist after a 410
    streams again (here successfully)."""
    seen: list[str] = []
    streams = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal streams
        query = request.query
        if query.get("watch") not in ("1", "true"):
            seen.append("list")
            return json_response(list_body(OBJECTS, 10))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if query.get("sendInitialEvents") == "true":
            seen.append("stream")
            streams += 1
            if streams == 1:
                await resp.write(event("ADDED", OBJECTS[0]))
                await resp.write_eof()
                return resp
            bookmark: dict[str, Any] = {"metadata": {"resourceVersion": "20", "annotations": END}}
            await resp.write(event("ADDED", pod("c", 20)) + event("BOOKMARK", bookmark))
        else:
            seen.append("watch")
            gone = status(410, "Expired", "too old resource version: 10 (15)")
            await resp.write(event("ERROR", gone))
            await resp.write_eof()
            return resp
        await asyncio.Event().wait()
        raise AssertionError

    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", streaming_list=True)
            await eventually(
                lambda: [o.key for o in inf.snapshot().list()] == ["default/c"], "the relist"
            )
    assert seen == ["stream", "list", "watch", "stream"], seen


async def test_a_streaming_list_quiet_before_its_bookmark_falls_back_before_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that ignores ``sendInitialEvents`` and keeps the stream open: the objects
    come as ADDED, then nothing. With ``initial_events_timeout`` at its 60 s default, the
    watcher falls back once the stream has been quiet for ``INITIAL_EVENTS_QUIET`` (0.3 s
    here; 5 s by default) instead of waiting the whole 60 s."""
    monkeypatch.setattr(watcher, "INITIAL_EVENTS_QUIET", 0.3)
    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        query = request.query
        if query.get("watch") not in ("1", "true"):
            seen.append("list")
            return json_response(list_body(OBJECTS, 10))
        seen.append("stream" if query.get("sendInitialEvents") == "true" else "watch")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if query.get("sendInitialEvents") == "true":
            await resp.write(b"".join(event("ADDED", o) for o in OBJECTS))
        await asyncio.Event().wait()
        raise AssertionError

    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", streaming_list=True)
            await inf.wait_for_sync(timeout=20)
            await eventually(lambda: "watch" in seen, "the watch after the list")
    assert seen[:3] == ["stream", "list", "watch"], seen
