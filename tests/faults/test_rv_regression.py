"""The server's resourceVersion can go backwards.

A restored etcd or a new server at the same address starts its resourceVersions again,
lower. The informer detects it (a list or an event below what it holds, an empty watch
whose probe shows the server below it, 504 "Too large resource version" on watches),
relists at RV "", replaces the cache in one swap, and takes the list's RV as the store's,
so that ``wait_for_rv`` waits for the new history instead of returning at once.
"""

from __future__ import annotations

import asyncio
import logging

import orjson
import pytest
from aiohttp import web

from aioinformer import Informer, InformerFactory, WatchOptions
from aioinformer.testing import KubeSim, eventually
from tests.faults.hostile import (
    event,
    hostile_server,
    json_response,
    list_body,
    pod,
    status,
)

SPEC = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


def options(**kw: float) -> WatchOptions:
    base = {
        "min_watch_timeout": 1.0,
        "max_watch_timeout": 1.0,
        "backoff_initial": 0.05,
        "backoff_maximum": 0.2,
        "backoff_jitter": 0.0,
    }
    base.update(kw)
    return WatchOptions(**base)  # type: ignore[arg-type]


def cached(inf: Informer) -> dict[str, str]:
    return {o.key: str(o.rv) for o in inf.snapshot().list()}


def resets_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "resourceVersion went backwards" in r.getMessage()
    ]


async def test_a_server_restarted_empty_on_the_same_port_replaces_the_cache(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """50 pods on the first server; a new server on the same port with the same token
    holds 3 others at lower resourceVersions. The informer converges on the new server
    (the 50 gone, the 3 there) with one relist, and ``wait_for_rv`` of a new write waits
    for that write."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    first = KubeSim()
    await first.start()
    port, token = first.port, first.token
    for i in range(50):
        first.create("pods", SPEC | {"metadata": {"name": f"old{i}"}}, "default")
    for i in range(20):  # push the first server's RV well above the second's
        first.create("configmaps", {"metadata": {"name": f"cm{i}"}}, "default")
    async with first.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=15)
            assert len(inf.snapshot()) == 50
            old_rv = inf.snapshot().resource_version
            await first.stop()
            async with KubeSim(port=port, token=token) as second:
                for i in range(3):
                    second.create("pods", SPEC | {"metadata": {"name": f"new{i}"}}, "default")
                assert second.resource_version < old_rv
                want = second.versions("pods", "default")
                await eventually(lambda: cached(inf) == want, "the new server's pods")
                st = inf.statistics()
                assert st.relists == 1 and st.history_resets == 1
                assert inf.snapshot().resource_version == second.resource_version < old_rv
                # read-your-writes in the new history: a write's RV is waited for
                waiter = asyncio.create_task(inf.wait_for_rv(second.resource_version + 1, 10))
                await asyncio.sleep(0)
                assert not waiter.done()
                made = second.create("pods", SPEC | {"metadata": {"name": "new3"}}, "default")
                snap = await waiter
                assert snap.get("default/new3") is not None
                assert snap.resource_version == int(made["metadata"]["resourceVersion"])
    assert len(resets_logged(caplog)) == 1


async def test_watches_answered_too_large_resource_version_end_in_a_relist(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every watch is answered 504 Timeout / ResourceVersionTooLarge (the server is behind
    the watcher: restored). After ``too_large_rv_retries`` of them the watcher relists at
    RV "" instead of retrying for ever."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    lists = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal lists
        if not request.query.get("watch"):
            lists += 1
            if lists == 1:
                return json_response(list_body([pod("a", 90), pod("b", 95)], 100))
            return json_response(list_body([pod("c", 7)], 8))
        if request.query.get("resourceVersion") == "100":
            msg = "Timeout: Too large resource version: 100, current: 8"
            cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            body = status(504, "Timeout", msg, causes=[cause], retryAfterSeconds=1)
            return web.Response(
                body=orjson.dumps(body),
                status=504,
                content_type="application/json",
                headers={"Retry-After": "0"},
            )
        await asyncio.Event().wait()
        raise AssertionError

    opts = options(too_large_rv_retries=3, min_watch_timeout=30.0, max_watch_timeout=30.0)
    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: cached(inf) == {"default/c": "7"}, "the relist")
            st = inf.statistics()
            assert st.relists == 1 and st.history_resets == 1 and st.errors_by_code[504] == 3
            assert inf.snapshot().resource_version == 8
    too_large = [s for s in server.of("watch") if s.query["resourceVersion"] == "100"]
    assert len(too_large) == 3
    assert server.of("list")[1].query.get("resourceVersion", "") == ""
    assert len(resets_logged(caplog)) == 1


async def test_an_event_below_the_watch_position_relists_and_the_store_follows_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A watch from RV 100 that brings an event at RV 12: the watcher relists; the list is
    at 20, below the cache's 100: the cache is replaced and the store's RV is 20, so that
    ``wait_for_rv(25)`` waits for the new history's 25 (it returned at once before)."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    lists = 0
    late = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal lists
        if not request.query.get("watch"):
            lists += 1
            if lists == 1:
                return json_response(list_body([pod("a", 90), pod("b", 95)], 100))
            return json_response(list_body([pod("c", 12)], 20))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if request.query["resourceVersion"] == "100":
            await resp.write(event("ADDED", pod("c", 12)))
        else:
            await late.wait()
            await resp.write(event("ADDED", pod("d", 25)))
        await asyncio.Event().wait()
        return resp

    opts = options(min_watch_timeout=30.0, max_watch_timeout=30.0)
    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: cached(inf) == {"default/c": "12"}, "the relist")
            assert inf.snapshot().resource_version == 20
            st = inf.statistics()
            assert st.relists == 1 and st.history_resets == 1
            waiter = asyncio.create_task(inf.wait_for_rv(25, 10))
            await asyncio.sleep(0)
            assert not waiter.done()  # 20 < 25 in the new history
            late.set()
            snap = await waiter
            assert snap.get("default/d") is not None and snap.resource_version == 25
    assert len(resets_logged(caplog)) == 1


async def test_a_list_below_the_cache_is_logged_and_swapped_in_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 410 relist whose list comes back at a lower RV (an etcd restore between the two):
    one Replace swaps the cache (tombstones for what vanished), the store's RV drops to the
    list's, and the reset is logged once."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    lists = 0
    deleted: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal lists
        if not request.query.get("watch"):
            lists += 1
            if lists == 1:
                return json_response(list_body([pod("a", 90), pod("b", 95)], 100))
            return json_response(list_body([pod("a", 40)], 50))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if request.query["resourceVersion"] == "100":
            gone = status(410, "Expired", "too old resource version: 100 (101)")
            await resp.write(event("ERROR", gone))
            await resp.write_eof()
            return resp
        await asyncio.Event().wait()
        return resp

    async with hostile_server(handle) as server, server.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            inf.add_handler(on_delete=lambda obj: deleted.append(obj.key))
            await eventually(lambda: cached(inf) == {"default/a": "40"}, "the relist")
            assert inf.snapshot().resource_version == 50
            st = inf.statistics()
            assert st.relists == 1 and st.history_resets == 1 and st.errors_by_code[410] == 1
            await eventually(lambda: deleted == ["default/b"], "b's tombstone")
    (msg,) = resets_logged(caplog)
    assert "the list is at 50, the cache was at 100" in msg
