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


async def test_lose_answers_serves_the_write_then_closes_without_an_answer(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """The write is committed (the object is there, its watch event went out) and the
    client gets no answer: a closed connection, which cannot tell it the write happened."""
    sim.faults.lose_answers(1, verbs=["create"])
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.post("/api/v1/namespaces/default/pods", json=pod("lost")) as r:
            await r.read()
    assert sim.get("pods", "lost", "default")["metadata"]["name"] == "lost"
    assert sim.faults.injected["lost_answer"] == 1
    async with http.post("/api/v1/namespaces/default/pods", json=pod("kept")) as r:
        assert r.status == 201  # one answer lost, the next one answered


async def test_lose_answers_loses_a_refusal_too(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """A write the server refused (409) loses its answer the same way: from the client's
    side, "no answer" says nothing about whether anything happened."""
    sim.create("pods", pod("taken"), "default")
    sim.faults.lose_answers(1)
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.post("/api/v1/namespaces/default/pods", json=pod("taken")) as r:
            await r.read()


async def test_lose_answers_leaves_lists_and_watches_alone(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """A list or a watch streams its answer as it goes: a lost-answer fault waits for a
    request with one answer (a get). (aiohttp sends an idempotent request, GET, PUT or
    DELETE, once more when the connection closes before its answer: two are lost.)"""
    sim.create("pods", pod("a"), "default")
    sim.faults.lose_answers(2, path_contains="/pods")
    async with http.get("/api/v1/namespaces/default/pods") as r:
        assert r.status == 200 and len((await r.json())["items"]) == 1
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.get("/api/v1/namespaces/default/pods/a") as r:
            await r.read()
    assert sim.faults.injected["lost_answer"] == 2


async def test_request_faults_single_out_one_user(sim: KubeSim) -> None:
    """``users=`` matches the requests of those users only: one client of many is hit."""
    token = sim.add_user("replica-b", [("*", "*", "*")])
    sim.fail_next(1, 500, users=["replica-b"])
    sim.faults.respond_next(1, b"{}", status=200, content_type="application/json",
                            users=["replica-b"])  # fmt: skip
    base = {"Accept": "application/json"}
    admin = {**base, "Authorization": f"Bearer {sim.token}"}
    b = {**base, "Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(base_url=sim.url) as http:
        async with http.get("/api/v1/namespaces/default/configmaps", headers=admin) as r:
            assert r.status == 200 and "items" in await r.json()
        async with http.get("/api/v1/namespaces/default/configmaps", headers=b) as r:
            assert r.status == 500
        async with http.get("/api/v1/namespaces/default/configmaps", headers=b) as r:
            assert r.status == 200 and await r.json() == {}  # not served: the body given
        async with http.get("/api/v1/namespaces/default/configmaps", headers=b) as r:
            assert "items" in await r.json()


async def test_a_scheduler_decides_request_by_request(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """The scheduler sees every resource request no pending fault took (method, path,
    verb, user) and picks its fate; pending faults come first."""
    from kubesim.server.faults import RequestFault, RequestInfo

    seen: list[RequestInfo] = []

    def decide(info: RequestInfo) -> RequestFault | None:
        seen.append(info)
        if info.verb == "create":
            return RequestFault.lost()
        if info.verb == "update":
            return RequestFault.raw(b'{"kind":"ConfigMap"}')
        if info.verb == "delete":
            return RequestFault.status_error(503, retry_after=2)
        return None

    sim.faults.scheduler = decide
    cm = {"metadata": {"name": "c"}, "data": {"k": "v"}}
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.post("/api/v1/namespaces/default/configmaps", json=cm) as r:
            await r.read()
    stored = sim.get("configmaps", "c", "default")  # created all the same
    async with http.put("/api/v1/namespaces/default/configmaps/c", json=stored) as r:
        assert r.status == 200 and await r.json() == {"kind": "ConfigMap"}
    assert sim.get("configmaps", "c", "default") == stored  # not served
    async with http.delete("/api/v1/namespaces/default/configmaps/c") as r:
        assert r.status == 503 and r.headers["Retry-After"] == "2"
    sim.fail_next(1, 500)
    async with http.get("/api/v1/namespaces/default/configmaps/c") as r:
        assert r.status == 500  # the pending fault; the scheduler is not asked
    async with http.get("/api/v1/namespaces/default/configmaps/c") as r:
        assert r.status == 200
    assert [(i.method, i.verb, i.user) for i in seen] == [
        ("POST", "create", "admin"),
        ("PUT", "update", "admin"),
        ("DELETE", "delete", "admin"),
        ("GET", "get", "admin"),
    ]
    assert seen[0].path == "/api/v1/namespaces/default/configmaps"
    assert sim.faults.injected["lost_answer"] == 1
    assert sim.faults.injected["raw_response"] == 1
    assert sim.faults.injected["http_503"] == 1
