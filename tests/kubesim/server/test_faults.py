"""Fault injection: every fault is a method call on the running sim and does what it says
on the wire."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from aioinformer.testing import KubeSim
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import eventually, pod


@pytest.mark.parametrize("status", [429, 500, 503, 504])
async def test_fail_next_answers_n_requests_then_recovers(
    sim: KubeSim, http: aiohttp.ClientSession, status: int
) -> None:
    sim.fail_next(2, status, retry_after=3, verbs=["list"])
    got = []
    for _ in range(3):
        async with http.get("/api/v1/namespaces/default/pods") as r:
            body = await r.json()
            got.append(r.status)
            if r.status != 200:
                assert body["kind"] == "Status" and body["code"] == status
                if status in (429, 503, 504):
                    assert r.headers["Retry-After"] == "3"
    assert got == [status, status, 200]
    assert sim.faults.injected[f"http_{status}"] == 2


async def test_fail_next_matches_verbs_and_paths(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    sim.fail_next(1, 500, path_contains="/configmaps")
    async with http.get("/api/v1/namespaces/default/pods") as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/default/configmaps") as r:
        assert r.status == 500


async def test_latency_holds_matching_requests_then_serves_them(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """A request under latency is held while the latency lasts (an hour here: no clock
    decides the outcome) while others are served; with a short latency it is answered."""
    sim.faults.set_latency(3600, path_contains="/pods")
    held = asyncio.create_task(http.get("/api/v1/namespaces/default/pods"))
    await eventually(lambda: sim.faults.injected.get("latency") == 1, "the request to be held")
    async with http.get("/api/v1/namespaces/default/configmaps") as r:
        assert r.status == 200  # served while the pods request waits
    assert not held.done()
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    sim.faults.set_latency(0.01)
    async with http.get("/api/v1/namespaces/default/pods") as r:
        assert r.status == 200
    assert sim.faults.injected["latency"] == 2
    sim.faults.set_latency(0)
    async with http.get("/api/v1/namespaces/default/pods") as r:
        assert r.status == 200
    assert sim.faults.injected["latency"] == 2  # lifted: not counted


async def test_drop_watches_closes_connections_abruptly(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    async with http.get(
        "/api/v1/namespaces/default/pods", params=watch_params(resourceVersion="0")
    ) as r:
        assert sim.open_watches == 1  # open once its headers are here: the drop reaches it
        sim.drop_watches()
        with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
            await WatchReader(r).events_until_eof(timeout=3)


async def test_drop_some_watches_by_path(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    params = watch_params(resourceVersion="0", timeoutSeconds="2")
    async with (
        http.get("/api/v1/namespaces/default/pods", params=params) as pods,
        http.get("/api/v1/namespaces/default/configmaps", params=params) as cms,
    ):
        assert sim.open_watches == 2
        sim.drop_watches(path_contains="/configmaps")
        with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
            await WatchReader(cms).events_until_eof(timeout=3)
        assert await WatchReader(pods).events_until_eof(timeout=5) == []


async def test_stall_keeps_the_connection_but_sends_nothing(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=rv, timeoutSeconds="30"),
    ) as r:
        w = WatchReader(r)
        assert sim.open_watches == 1
        sim.stall_watches()
        sim.create("pods", pod("while-stalled"), "default")
        with pytest.raises(TimeoutError):
            await w.next_event(timeout=0.5)
        assert sim.open_watches == 1
        sim.unstall_watches()
        ev = await w.next_event(timeout=3)
    assert ev is not None and ev["object"]["metadata"]["name"] == "while-stalled"


async def test_delay_watch_events() -> None:
    """While events are delayed (an hour here), the watch holds them back and its
    bookmarks stop short of them; lifting the delay delivers them."""
    async with KubeSim(bookmark_interval=0.05) as sim:
        headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
            sim.faults.delay_watch_events(3600)
            rv = str(sim.resource_version)
            params = watch_params(
                resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="30"
            )
            async with http.get("/api/v1/namespaces/default/pods", params=params) as r:
                w = WatchReader(r)
                # the RV moves past the watch's start: bookmarks are due, at the RV just
                # before the held-back event
                sim.create("configmaps", {"metadata": {"name": "moves-the-rv"}}, "default")
                late = sim.create("pods", pod("late"), "default")["metadata"]["resourceVersion"]
                ev = await w.next_event(timeout=30)
                while ev is not None and ev["type"] == "BOOKMARK":
                    assert int(ev["object"]["metadata"]["resourceVersion"]) < int(late)
                    if len(w.chunks) == 3:  # a few bookmarks held back: lift the delay
                        sim.faults.delay_watch_events(0)
                    ev = await w.next_event(timeout=30)
    assert sim.faults.injected["watch_delay"] == 1
    assert ev is not None and ev["type"] == "ADDED"
    assert ev["object"]["metadata"]["name"] == "late"


async def test_cut_mid_line_on_a_watch_and_on_a_list(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    sim.create("pods", pod("a"), "default")
    sim.faults.cut_next(1, path_contains="/pods")
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=rv, timeoutSeconds="5"),
    ) as r:
        sim.create("pods", pod("b"), "default")
        with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
            data = await asyncio.wait_for(r.content.read(), 5)
            assert not data.endswith(b"\n")
            raise aiohttp.ClientPayloadError("cut")
    sim.faults.cut_next(1)
    with pytest.raises((aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
        async with http.get("/api/v1/namespaces/default/pods") as r:
            await r.json()


async def test_inject_malformed_and_oversized_lines(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=rv, timeoutSeconds="5"),
    ) as r:
        assert sim.open_watches == 1
        big = b'{"type":"ADDED","object":{"metadata":{"name":"' + b"x" * (3 << 20) + b'"}}}\n'
        sim.faults.inject_line(b"{not json\n")
        sim.faults.inject_line(big)
        first, _ = await asyncio.wait_for(r.content.readchunk(), 5)
        assert first == b"{not json\n"
        rest = b""
        while len(rest) < len(big):
            chunk, _ = await asyncio.wait_for(r.content.readchunk(), 5)
            rest += chunk
        assert rest == big
    assert sim.faults.injected["inject_line"] == 2
