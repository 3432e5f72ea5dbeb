"""KubeSim watches over real HTTP: framing, bookmarks, expiry, selectors, streaming lists.

Each test names the conformance transcript it follows. Raw aiohttp is used where the wire
itself is the subject (chunks, headers, the terminating chunk).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim
from kubesim.server import app as server
from tests.kubesim.registry.test_listing import make_ns, pod
from tests.support import eventually, transcript


class WatchReader:
    """Reads a watch response chunk by chunk, recording each chunk as it arrived."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.chunks: list[bytes] = []
        self.eof = False

    async def next_event(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The next event, or None at EOF."""
        data, _ = await asyncio.wait_for(self.resp.content.readchunk(), timeout)
        if not data:
            self.eof = True
            return None
        self.chunks.append(data)
        event: dict[str, Any] = json.loads(data)
        return event

    async def events_until_eof(self, timeout: float = 15.0) -> list[dict[str, Any]]:
        out = []
        while (ev := await self.next_event(timeout)) is not None:
            out.append(ev)
        return out


def watch_params(**kw: str) -> dict[str, str]:
    return {"watch": "1", **kw}


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"], e["object"]["metadata"].get("name")) for e in events]


async def test_watch_headers_framing_and_timeout(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """06-watch-from-list-rv: 200 with application/json (not ;stream=watch), chunked,
    Cache-Control no-cache, private; one chunk per event; at timeoutSeconds the stream ends
    with the zero-length chunk and no final event; create/update/status/delete events;
    no-op status patch produces no event; the bookmark comes ~2 s before the deadline."""
    rec = transcript("06-watch-from-list-rv")
    rec_types = [e["line"]["type"] for e in rec["response"]["events"]]
    make_ns(sim, "tx06")
    sim.create("pods", pod("existing-1"), "tx06")
    _, lst = await _list(http, "/api/v1/namespaces/tx06/pods")
    rv = lst["metadata"]["resourceVersion"]
    async with http.get(
        "/api/v1/namespaces/tx06/pods",
        params=watch_params(resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3"),
    ) as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "application/json"
        assert r.headers["Transfer-Encoding"] == "chunked"
        assert r.headers["Cache-Control"] == "no-cache, private"
        w = WatchReader(r)
        sim.create("pods", pod("w1"), "tx06")
        sim.patch("pods", "w1", {"metadata": {"labels": {"tier": "frontend"}}}, "tx06")
        sim.patch("pods", "w1", {"status": {"phase": "Running"}}, "tx06", subresource="status")
        sim.patch("pods", "w1", {"status": {"phase": "Running"}}, "tx06", subresource="status")
        sim.delete("pods", "w1", "tx06")
        sim.create("pods", pod("elsewhere"), "default")  # moves the RV: a bookmark is due
        events = await w.events_until_eof()
        assert w.eof  # the server ended the stream (timeoutSeconds), the client did not
    types = [e["type"] for e in events]
    assert types == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK"]
    assert rec_types[:1] == ["ADDED"] and rec_types[-1] == "BOOKMARK" and "DELETED" in rec_types
    assert len(w.chunks) == len(events) and all(c.endswith(b"\n") for c in w.chunks)
    assert all(c.count(b"\n") == 1 for c in w.chunks), "exactly one event per chunk"
    assert events[0]["object"]["kind"] == "Pod" and events[0]["object"]["apiVersion"] == "v1"
    assert events[-1]["object"]["metadata"]["resourceVersion"] == str(sim.resource_version)
    await eventually(lambda: sim.open_watches == 0, "the server to close the watch")


async def test_pod_bookmark_object_is_the_recorded_empty_pod(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """README "BOOKMARK object": for a Pod exactly kind, apiVersion, metadata{resourceVersion,
    creationTimestamp null}, spec{containers null}, status{}."""
    rec = next(
        e["line"]
        for e in transcript("07a-watch-rv0")["response"]["events"]
        if e["line"]["type"] == "BOOKMARK"
    )
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3"),
    ) as r:
        sim.create("configmaps", {"metadata": {"name": "x"}}, "default")
        events = await WatchReader(r).events_until_eof()
    assert [e["type"] for e in events] == ["BOOKMARK"]
    got = events[0]["object"]
    want = dict(rec["object"])
    want["metadata"] = {**want["metadata"], "resourceVersion": got["metadata"]["resourceVersion"]}
    assert got == want


async def test_no_bookmark_when_rv_did_not_move(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """05d-watch-rv-too-large / README: bookmarks only when the cache RV is greater than the
    watch's start RV; a future RV gets 200, no events at all, and a close at the timeout."""
    rec = transcript("05d-watch-rv-too-large")["response"]
    async with http.get(
        "/api/v1/namespaces/tx01/pods",
        params=watch_params(
            resourceVersion="99999999", allowWatchBookmarks="true", timeoutSeconds="3"
        ),
    ) as r:
        assert r.status == rec["status"] == 200
        sim.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert await WatchReader(r).events_until_eof() == []


async def test_watch_rv0_sends_synthetic_added(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """07a-watch-rv0: RV=0 starts with ADDED for every current object, then live events."""
    make_ns(sim, "tx01")
    for name in ("web-1", "web-2", "web-3"):
        sim.create("pods", pod(name), "tx01")
    async with http.get(
        "/api/v1/namespaces/tx01/pods",
        params=watch_params(resourceVersion="0", allowWatchBookmarks="true", timeoutSeconds="2"),
    ) as r:
        w = WatchReader(r)
        first = [await w.next_event() for _ in range(3)]
        sim.create("pods", pod("live-07a"), "tx01")
        live = await w.next_event()
    assert sorted(n for _, n in kinds([e for e in first if e])) == ["web-1", "web-2", "web-3"]
    assert {e["type"] for e in first if e} == {"ADDED"}
    assert live is not None and (live["type"], live["object"]["metadata"]["name"]) == (
        "ADDED",
        "live-07a",
    )


async def test_watch_rv_unset_is_etcd_served_without_bookmarks(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """07b-watch-rv-unset: no RV with the gate off: ADDED in key order, live events, and
    no bookmarks even when asked for."""
    rec = [e["line"]["type"] for e in transcript("07b-watch-rv-unset")["response"]["events"]]
    assert "BOOKMARK" not in rec
    make_ns(sim, "tx01")
    for name in ("web-2", "web-1"):
        sim.create("pods", pod(name), "tx01")
    async with http.get(
        "/api/v1/namespaces/tx01/pods",
        params=watch_params(allowWatchBookmarks="true", timeoutSeconds="3"),
    ) as r:
        w = WatchReader(r)
        sim.create("pods", pod("live-07b"), "tx01")
        sim.create("configmaps", {"metadata": {"name": "moves-rv"}}, "tx01")
        events = await w.events_until_eof()
    assert kinds(events) == [("ADDED", "web-1"), ("ADDED", "web-2"), ("ADDED", "live-07b")]


async def test_too_old_rv_is_200_plus_one_error_event(http: aiohttp.ClientSession) -> None:
    """08a-watch-too-old-rv-watchcache: HTTP 200, exactly one ERROR event carrying a 410
    Expired Status "too old resource version: R (oldest-1)", then EOF."""
    rec = transcript("08a-watch-too-old-rv-watchcache")["response"]
    async with KubeSim(history_size=5) as sim:
        headers = {"Authorization": f"Bearer {sim.token}"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
            old = sim.resource_version
            for i in range(12):
                sim.create("pods", pod(f"p{i}"), "default")
            async with s.get(
                "/api/v1/namespaces/default/pods",
                params=watch_params(
                    resourceVersion=str(old), allowWatchBookmarks="true", timeoutSeconds="8"
                ),
            ) as r:
                assert r.status == rec["status"] == 200
                events = await WatchReader(r).events_until_eof(timeout=2)
    assert len(events) == 1
    want = rec["events"][0]["line"]
    oldest = sim.mvcc.types["pods"].history[0].rv
    assert events[0]["object"]["message"] == f"too old resource version: {old} ({oldest - 1})"
    assert {k: v for k, v in events[0]["object"].items() if k != "message"} == {
        k: v for k, v in want["object"].items() if k != "message"
    }
    assert events[0]["type"] == want["type"] == "ERROR"


async def test_compaction_does_not_break_cached_watches(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """08b-watch-compacted-rv-still-cached: etcd compaction alone does not affect watches
    served by the watch cache."""
    old = str(sim.resource_version)
    sim.create("pods", pod("seed-2"), "default")
    sim.compact()
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=old, timeoutSeconds="1"),
    ) as r:
        events = await WatchReader(r).events_until_eof()
    assert kinds(events) == [("ADDED", "seed-2")]


async def test_restart_expires_old_rvs_but_not_the_current_one(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """08d/08e: after an apiserver restart an RV below the re-list revision is too old at
    once; an RV equal to it is accepted."""
    before = str(sim.resource_version)
    sim.create("pods", pod("one-write"), "default")
    sim.restart()
    at_restart = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=before, timeoutSeconds="2"),
    ) as r:
        events = await WatchReader(r).events_until_eof()
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=at_restart, timeoutSeconds="1"),
    ) as r:
        assert await WatchReader(r).events_until_eof() == []


async def test_restart_drops_open_watches(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """sim.restart() drops every open watch: the client sees the connection end without the
    terminating chunk's clean close semantics mattering; it must re-watch."""
    async with http.get(
        "/api/v1/namespaces/default/pods", params=watch_params(resourceVersion="0")
    ) as r:
        assert sim.open_watches == 1  # open once its headers are here
        sim.restart()
        try:
            await WatchReader(r).events_until_eof(timeout=3)
        except aiohttp.ClientPayloadError:
            pass
    await eventually(lambda: sim.open_watches == 0, "the dropped watch to be gone")


async def test_label_selector_leave_and_reenter(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """10a-watch-labelselector: relabel out of the selector = DELETED with the OLD content
    and the NEW RV; back in = ADDED; non-matching changes give nothing."""
    rec = [(e["line"]["type"]) for e in transcript("10a-watch-labelselector")["response"]["events"]]
    make_ns(sim, "tx10")
    sim.create("pods", pod("p", app="web"), "tx10")
    sim.create("pods", pod("q", app="db"), "tx10")
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/tx10/pods",
        params=watch_params(resourceVersion=rv, labelSelector="app=web", timeoutSeconds="1"),
    ) as r:
        w = WatchReader(r)
        out = sim.patch("pods", "p", {"metadata": {"labels": {"app": "other"}}}, "tx10")
        sim.patch("pods", "q", {"metadata": {"labels": {"x": "y"}}}, "tx10")
        back = sim.patch("pods", "p", {"metadata": {"labels": {"app": "web"}}}, "tx10")
        events = await w.events_until_eof()
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    assert rec[:2] == ["DELETED", "ADDED"]
    deleted = events[0]["object"]["metadata"]
    assert deleted["labels"] == {"app": "web"}, "old content"
    assert deleted["resourceVersion"] == out["metadata"]["resourceVersion"], "new RV"
    assert events[1]["object"]["metadata"]["resourceVersion"] == back["metadata"]["resourceVersion"]


async def test_field_selectors_node_name_and_phase(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """10b (spec.nodeName: a binding makes a pod enter as ADDED; nodeName is immutable) and
    10c (status.phase=Pending: Pending -> Running shows as DELETED)."""
    rec_b = transcript("10b-watch-fieldselector-nodename")
    rec_c = [
        e["line"]["type"] for e in transcript("10c-watch-fieldselector-phase")["response"]["events"]
    ]
    make_ns(sim, "tx10")
    sim.create("pods", pod("p"), "tx10")
    rv = str(sim.resource_version)
    async with (
        http.get(
            "/api/v1/namespaces/tx10/pods",
            params=watch_params(
                resourceVersion=rv, fieldSelector="spec.nodeName=node-1", timeoutSeconds="1"
            ),
        ) as r1,
        http.get(
            "/api/v1/namespaces/tx10/pods",
            params=watch_params(
                resourceVersion=rv, fieldSelector="status.phase=Pending", timeoutSeconds="1"
            ),
        ) as r2,
    ):
        async with http.post(
            "/api/v1/namespaces/tx10/pods/p/binding",
            json={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p"},
                "target": {"kind": "Node", "name": "node-1"},
            },
        ) as b:
            assert b.status == 201
        cur = sim.get("pods", "p", "tx10")
        cur["spec"]["nodeName"] = "node-2"
        async with http.put("/api/v1/namespaces/tx10/pods/p", json=cur) as u:
            assert u.status == 422
            body = await u.json()
        sim.patch("pods", "p", {"status": {"phase": "Running"}}, "tx10", subresource="status")
        ev1 = await WatchReader(r1).events_until_eof()
        ev2 = await WatchReader(r2).events_until_eof()
    assert [e["type"] for e in ev1][:1] == ["ADDED"]
    assert ev1[0]["object"]["spec"]["nodeName"] == "node-1"
    immutable = next(x for x in rec_b.get("writes", []) if x["response"]["status"] == 422)[
        "response"
    ]["body"]
    assert body["reason"] == immutable["reason"] == "Invalid"
    assert "DELETED" in rec_c
    assert [e["type"] for e in ev2] == ["MODIFIED", "DELETED"]
    assert ev2[-1]["object"]["status"]["phase"] == "Pending"


async def test_streaming_list_initial_events_end(http: aiohttp.ClientSession) -> None:
    """09a/09b: sendInitialEvents=true&resourceVersionMatch=NotOlderThan sends ADDED for
    every object, then a BOOKMARK annotated k8s.io/initial-events-end: "true"; 09c: without
    allowWatchBookmarks no end marker; 09d: without the match 422; 09e: gate off 422."""
    rec = transcript("09a-watchlist-rv-unset")["response"]["events"][-1]["line"]
    async with KubeSim(watch_list=True) as sim:
        headers = {"Authorization": f"Bearer {sim.token}"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
            make_ns(sim, "tx01")
            for name in ("a", "b", "c"):
                sim.create("pods", pod(name), "tx01")
            params = watch_params(
                sendInitialEvents="true",
                resourceVersionMatch="NotOlderThan",
                allowWatchBookmarks="true",
                timeoutSeconds="1",
            )
            async with s.get("/api/v1/namespaces/tx01/pods", params=params) as r:
                events = await WatchReader(r).events_until_eof()
            assert sorted(n for t, n in kinds(events[:3])) == ["a", "b", "c"]
            end = events[3]
            assert end["type"] == rec["type"] == "BOOKMARK"
            assert (
                end["object"]["metadata"]["annotations"] == rec["object"]["metadata"]["annotations"]
            )
            assert list(end["object"]["metadata"]) == list(rec["object"]["metadata"])
            assert end["object"]["metadata"]["resourceVersion"] == str(sim.resource_version)
            no_bm = {k: v for k, v in params.items() if k != "allowWatchBookmarks"}
            async with s.get("/api/v1/namespaces/tx01/pods", params=no_bm) as r:
                events = await WatchReader(r).events_until_eof()
            assert [e["type"] for e in events] == ["ADDED"] * 3
            bad = {k: v for k, v in params.items() if k != "resourceVersionMatch"}
            async with s.get("/api/v1/namespaces/tx01/pods", params=bad) as r:
                assert r.status == 422
                assert (
                    await r.json() == transcript("09d-watchlist-missing-match")["response"]["body"]
                )
    rec_e = transcript("09e-watchlist-gate-off")
    async with http.get("/api/v1/namespaces/tx01/pods", params=rec_e["request"]["query"]) as r:
        assert r.status == 422
        assert await r.json() == rec_e["response"]["body"]
    rec_f = transcript("09f-watch-rvmatch-gate-off")
    async with http.get("/api/v1/namespaces/tx01/pods", params=rec_f["request"]["query"]) as r:
        assert r.status == 422
        assert await r.json() == rec_f["response"]["body"]


async def test_metadata_only_watch(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """16b: as=PartialObjectMetadata watch events and bookmarks carry PartialObjectMetadata;
    16c: the List media type on a watch closes silently at the first event."""
    rec = transcript("16b-watch-partialobjectmetadata")["response"]["events"]
    accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3"),
        headers={"Accept": accept},
    ) as r:
        assert r.headers["Content-Type"] == "application/json"
        sim.create("pods", pod("m"), "default")
        events = await WatchReader(r).events_until_eof()
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert list(events[0]["object"]) == list(rec[0]["line"]["object"])
    assert events[0]["object"]["kind"] == "PartialObjectMetadata"
    bm_rec = next(e["line"] for e in rec if e["line"]["type"] == "BOOKMARK")
    assert events[1]["object"]["metadata"].keys() == bm_rec["object"]["metadata"].keys()
    list_accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion=str(sim.resource_version), timeoutSeconds="3"),
        headers={"Accept": list_accept},
    ) as r:
        assert r.status == 200
        sim.create("pods", pod("n"), "default")
        try:
            got = await WatchReader(r).events_until_eof()
        except aiohttp.ClientPayloadError:
            got = []
    assert got == []


async def _list(http: aiohttp.ClientSession, path: str) -> tuple[int, Any]:
    async with http.get(path) as r:
        return r.status, await r.json()


async def test_events_committed_while_a_slow_client_blocks_a_write_are_sent(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """A watcher that stops reading blocks the server's writes; events committed meanwhile
    go out as soon as it reads again, not at the next commit or bookmark (none come here)."""
    rv = sim.resource_version
    blob = "x" * 30_000
    async with http.get(
        "/api/v1/namespaces/default/configmaps",
        params=watch_params(resourceVersion=str(rv), timeoutSeconds="600"),
    ) as r:
        for batch in range(20):  # ~18 MB: more than the client's and the sockets' buffers
            for i in range(30):
                sim.create(
                    "configmaps",
                    {"metadata": {"name": f"cm-{batch}-{i}"}, "data": {"b": blob}},
                    "default",
                )
            # pacing, not waiting: the stream writes between batches until the client's
            # buffers are full; the order asserted below holds whatever it wrote by then
            await asyncio.sleep(0.01)
        reader = WatchReader(r)
        names = [(await reader.next_event())["object"]["metadata"]["name"] for _ in range(600)]
    assert names == [f"cm-{b}-{i}" for b in range(20) for i in range(30)]


async def test_a_client_gone_before_the_headers_is_no_server_error(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch whose connection closed before its headers were written (the write raises
    aiohttp's ClientConnectionResetError, as when the client or a shutdown closed it) ends
    quietly: no "Error handling request" from the HTTP server, and the sim keeps serving."""

    async def closed_before_headers(*args: object, **kwargs: object) -> None:
        raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")

    monkeypatch.setattr(server, "serve_watch", closed_before_headers)
    caplog.set_level(logging.ERROR)
    async with KubeSim() as sim:
        headers = {"Authorization": f"Bearer {sim.token}"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
            path = "/api/v1/namespaces/default/configmaps"
            with pytest.raises(aiohttp.ClientError):  # the connection is closed, no answer
                async with http.get(path, params={"watch": "1"}) as r:
                    await r.read()
            async with http.get(path) as r:
                assert r.status == 200
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
