"""No wait is unbounded.

A watch or a list whose response headers never come, a watch that trickles bytes (or
keep-alive blank lines) without ever completing an event, and a streaming list against a
server that ignores ``sendInitialEvents``: each ends within its bound with a counted,
visible error (``stream_errors``, ``last_error``), and the informer recovers (a list+watch
fallback for the streaming list). Every server here is a tiny hostile aiohttp server; the
client is the library's real one.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from aioinformer import InformerFactory, WatchOptions
from aioinformer.testing import eventually
from tests.faults.hostile import (
    event,
    hang,
    hostile_server,
    json_response,
    list_body,
    pod,
)

LIST = list_body([pod("a", 5)], 10)


def options(**kw: float) -> WatchOptions:
    base = {
        "min_watch_timeout": 1.0,
        "max_watch_timeout": 1.0,
        "backoff_initial": 0.05,
        "backoff_maximum": 0.2,
        "backoff_jitter": 0.0,
        "header_timeout": 10.0,  # headers come at once unless a test withholds them
        "watch_deadline_margin": 0.5,
        "idle_timeout": 30.0,
    }
    base.update(kw)
    return WatchOptions(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("verb", ["list", "watch"])
async def test_response_headers_that_never_come_time_out_from_the_request_start(
    verb: str,
) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        if verb == "watch" and request.query.get("watch"):
            return await hang(request)
        if verb == "list" and not request.query.get("watch"):
            return await hang(request)
        return json_response(LIST)

    async with hostile_server(handle) as server, server.api_client() as api:
        opts = options(header_timeout=0.3)
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: inf.statistics().stream_errors >= 2, "two header timeouts")
            st = inf.statistics()
            assert "no response headers within 0.3 s" in st.last_error, st.last_error
            assert f"{verb} pods in namespace" in st.last_error
            assert inf.has_synced is (verb == "watch")


@pytest.mark.parametrize("trickle", [b" ", b"\n"], ids=["a-byte-at-a-time", "blank-lines"])
async def test_a_trickling_watch_is_ended_by_the_client_after_its_timeout(
    trickle: bytes,
) -> None:
    """A byte (or a keep-alive blank line) every 50 ms never lets the idle watchdog fire,
    and never completes an event: the client ends the watch once it has outlived its
    ``timeoutSeconds`` by the margin, counts it and watches again."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(LIST)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        while True:
            await resp.write(trickle)
            await asyncio.sleep(0.05)

    opts = options()
    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=15)
            await eventually(lambda: inf.statistics().stream_errors >= 2, "two deadlines")
            st = inf.statistics()
            assert "after its timeoutSeconds (1); ended by the client" in st.last_error
            assert st.watch_restarts >= 1 and st.decode_errors == 0
    # the server was asked for 1 s: the client gave it 1 + 0.5 s, no more
    watches = server.of("watch")
    assert len(watches) >= 2 and all(w.query["timeoutSeconds"] == "1" for w in watches)


async def test_a_streaming_list_whose_server_ignores_send_initial_events_falls_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that answers a streaming list as a plain watch (the objects as ADDED, no
    initial-events-end bookmark, ever): after ``initial_events_timeout`` the watcher ends
    the stream, logs it once, and syncs by list+watch for good."""
    caplog.set_level(logging.INFO, logger="aioinformer")

    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(list_body([pod("a", 5), pod("b", 6)], 10))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if request.query.get("sendInitialEvents"):
            await resp.write(event("ADDED", pod("a", 5)) + event("ADDED", pod("b", 6)))
        await asyncio.Event().wait()
        return resp

    opts = options(initial_events_timeout=0.5, min_watch_timeout=30.0, max_watch_timeout=30.0)
    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods", streaming_list=True)
            await inf.wait_for_sync(timeout=15)
            assert sorted(o.key for o in inf.snapshot().list()) == ["default/a", "default/b"]
            assert inf.snapshot().resource_version == 10  # the list's
            await eventually(lambda: len(server.of("watch")) == 2, "the watch after the list")
    streaming = [s for s in server.of("watch") if s.query.get("sendInitialEvents")]
    assert len(streaming) == 1 and len(server.of("list")) == 1
    logged = [r.getMessage() for r in caplog.records if "using list+watch" in r.getMessage()]
    assert len(logged) == 1 and "no k8s.io/initial-events-end bookmark within 0.5 s" in logged[0]
