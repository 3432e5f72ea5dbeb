"""ShardFilter and the sharded ListWatch: the mode each list's shardInfo echo decides (logged
once per change), objects outside the ranges dropped before they are built (list items of a
list without the echo, every watch event's object), and ``shardSelector`` on every request.

Server mode is played by a small server that applies the selector and echoes it, as a
v1.36 kube-apiserver with the gate on does (KubeSim, today, ignores the parameter: client
mode against it is tested in tests/cache/test_sharded_informer.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from aiohttp import web

from aioinformer import InformerFactory, ShardSelector, shard_hash
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.shardfilter import ShardFilter
from aioinformer._core.objects import decode_event, decode_list
from aioinformer.testing import eventually
from tests.faults.hostile import Hostile, event, hostile_server, pod
from tests.support import watch_options

LOWER = ShardSelector.of_buckets([0], 2)  # hashes below 2**63


def named(inside: bool, n: int, prefix: str = "p") -> list[str]:
    """``n`` pod names whose uid (``uid-NAME``, as tests.faults.hostile.pod makes them) is
    inside (or outside) LOWER."""
    names: list[str] = []
    i = 0
    while len(names) < n:
        name = f"{prefix}{i}"
        if LOWER.matches(f"uid-{name}") == inside:
            names.append(name)
        i += 1
    return names


def list_of(items: list[dict[str, Any]], echo: str | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": "10"}
    if echo is not None:
        meta["shardInfo"] = {"selector": echo}
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def test_an_object_outside_the_ranges_is_dropped_before_it_is_built() -> None:
    """A list without the echo is filtered item by item from the metadata alone: an item
    outside whose body would fail to build (a name with a slash) is dropped, not reported
    bad; one inside with the same fault is reported."""
    inside, outside = named(True, 2), named(False, 2)
    broken = [pod(n, 5) for n in (inside[1], outside[1])]
    for obj in broken:
        obj["metadata"]["name"] += "/x"
        obj["metadata"]["uid"] = f"uid-{obj['metadata']['name'][:-2]}"
    body = list_of([pod(inside[0], 5), pod(outside[0], 5), *broken])
    filt = ShardFilter(LOWER, name="pods")
    items, rv, _ = decode_list(body, skip_bad=True, keep=filt.list_filter)
    assert [o.name for o in items] == [inside[0]] and rv == "10"
    assert items.dropped == 2 and len(items.bad) == 1 and items.shard_selector is None
    line = event("MODIFIED", {**broken[1], "kind": "Pod", "apiVersion": "v1"}).strip()
    assert decode_event(line, filt.keeps_meta) == ("DROPPED", None, {"resourceVersion": "5"})
    kept = event("ADDED", {**pod(inside[0], 6), "kind": "Pod", "apiVersion": "v1"}).strip()
    etype, obj, _ = decode_event(kept, filt.keeps_meta)
    assert etype == "ADDED" and obj is not None and obj.name == inside[0]


def test_a_list_that_echoes_the_selector_is_trusted_one_that_does_not_is_filtered() -> None:
    inside, outside = named(True, 1), named(False, 1)
    items_ = [pod(inside[0], 5), pod(outside[0], 5)]
    filt = ShardFilter(LOWER, name="pods")
    echoed, _, _ = decode_list(list_of(items_, LOWER.text), keep=filt.list_filter)
    assert filt.mode == "server" and len(echoed) == 2 and echoed.dropped == 0
    assert echoed.shard_selector == LOWER.text
    plain, _, _ = decode_list(list_of(items_), keep=filt.list_filter)
    assert filt.mode == "client" and [o.name for o in plain] == inside and plain.dropped == 1


@pytest.mark.parametrize(
    ("echo", "mode"),
    [
        (None, "client"),
        (LOWER.text, "server"),
        (f"  {LOWER.text.replace(', ', ',')} ", "server"),  # the same ranges, written otherwise
        (ShardSelector.of_buckets([1], 2).text, "client"),  # other ranges: never trusted
        ("garbage", "client"),
    ],
)
def test_the_mode_follows_the_echo(echo: str | None, mode: str) -> None:
    filt = ShardFilter(LOWER, name="pods")
    filt.list_filter(echo)
    assert filt.mode == mode


def test_each_change_of_mode_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    filt = ShardFilter(LOWER, name="pods[default]")
    with caplog.at_level(logging.INFO, logger="aioinformer.watch"):
        for echo in (None, None, LOWER.text, LOWER.text, LOWER.text, None, None):
            filt.list_filter(echo)
    said = [r.getMessage() for r in caplog.records if r.name == "aioinformer.watch"]
    assert len(said) == 3, said
    assert "ignores shardSelector" in said[0] and "server-side sharding" in said[1]
    assert "ignores shardSelector" in said[2] and all("pods[default]" in m for m in said)


def test_a_streaming_list_is_read_in_client_mode(caplog: pytest.LogCaptureFixture) -> None:
    filt = ShardFilter(LOWER, name="pods")
    filt.list_filter(LOWER.text)
    with caplog.at_level(logging.INFO, logger="aioinformer.watch"):
        filt.streaming()
        filt.streaming()
    assert filt.mode == "client"
    said = [r.getMessage() for r in caplog.records if r.name == "aioinformer.watch"]
    assert len(said) == 1 and "streaming list" in said[0]


def test_rescoping_changes_the_text_sent_and_what_is_kept() -> None:
    lw = ListWatch(None, "v1", "pods", namespace="default", shards=LOWER)  # type: ignore[arg-type]
    assert ("shardSelector", LOWER.text) in lw._query()
    upper = ShardSelector.of_buckets([1], 2)
    assert lw.shards is not None
    lw.shards.rescope(upper)
    assert ("shardSelector", upper.text) in lw._query()
    uid = "uid-" + named(False, 1)[0]
    assert lw.shards.keeps_meta(decode_list(list_of([pod(uid[4:], 1)]))[0][0].metadata)
    assert shard_hash(uid) >= 1 << 63
    assert "shardSelector" not in dict(ListWatch(None, "v1", "pods")._query())  # type: ignore[arg-type]


async def honouring_server(
    pods: list[dict[str, Any]], strays: list[dict[str, Any]], honour: bool = True
) -> Any:
    """A server that applies the selector to its list (echoing it, when ``honour``) and
    whose watch sends ``strays`` (objects outside any selector it was given: an instance
    without the gate answering the watch) then stays open."""

    async def handler(request: web.Request) -> web.StreamResponse:
        text = request.query.get("shardSelector")
        if request.query.get("watch") not in ("1", "true"):
            if text is None or not honour:
                return web.Response(body=list_of(pods), content_type="application/json")
            sel = ShardSelector.parse(text)
            kept = [p for p in pods if sel.matches(p["metadata"]["uid"])]
            return web.Response(body=list_of(kept, text), content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for i, obj in enumerate(strays):
            obj["metadata"]["resourceVersion"] = str(11 + i)
            await resp.write(event("ADDED", obj))
        await asyncio.Event().wait()
        return resp

    return hostile_server(handler)


@pytest.mark.parametrize("honour", [True, False])
async def test_a_sharded_informer_sends_the_selector_and_keeps_exactly_its_ranges(
    honour: bool,
) -> None:
    """Against a server that applies the selector (server mode) and one that ignores it
    (client mode): the same objects cached, ``shardSelector`` on the list and the watch,
    and the watch's objects outside the ranges dropped either way (strays)."""
    inside, outside = named(True, 3), named(False, 3)
    late_in, late_out = named(True, 1, "q"), named(False, 2, "q")
    pods = [pod(n, 5) for n in inside + outside]
    typed = {"kind": "Pod", "apiVersion": "v1"}
    watch_objs = [{**pod(n, 0), **typed} for n in (late_out[0], late_in[0], late_out[1])]
    received = 3 + 3 if honour else 6 + 3  # (the list's items, then the watch's events)
    server: Hostile
    async with await honouring_server(pods, watch_objs, honour) as server:
        async with server.api_client() as api:
            f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
            inf = f.informer("v1", "pods", namespace="default", shards=LOWER)
            async with f:
                await f.wait_for_sync(timeout=10)
                await eventually(
                    lambda: inf.statistics().objects_received == received, "the watch's events"
                )
                await eventually(lambda: len(inf.snapshot()) == 4, "the kept watch event")
                stats = inf.statistics()
    assert sorted(o.name for o in inf.snapshot().list()) == sorted([*inside, *late_in])
    assert stats.shard_mode == ("server" if honour else "client")
    assert stats.shard_selector == LOWER.text
    assert (stats.objects_received, stats.objects_dropped) == (received, received - 4)
    assert stats.objects_kept == 4
    assert [s.query.get("shardSelector") for s in server.seen[:2]] == [LOWER.text] * 2
    assert {s.kind for s in server.seen[:2]} == {"list", "watch"}


async def test_a_rescope_during_a_list_sends_it_again_with_the_new_selector() -> None:
    """A widening while the sync's list is in flight: that list's answer is never used; the
    list is sent again with the new selector and rescope returns once it is cached."""
    pods = [pod(n, 5) for n in named(True, 3) + named(False, 3)]
    first_list = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("1", "true"):
            await asyncio.Event().wait()
        if not first_list.is_set():
            first_list.set()
            await asyncio.Event().wait()  # (never answered: cancelled by the client)
        return web.Response(body=list_of(pods), content_type="application/json")

    everything = ShardSelector.of_buckets([0, 1], 2)
    async with hostile_server(handler) as server, server.api_client() as api:
        f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        inf = f.informer("v1", "pods", namespace="default", shards=LOWER)
        async with f:
            await asyncio.wait_for(first_list.wait(), 10)
            await asyncio.wait_for(inf.rescope(everything), 10)
            assert len(inf.snapshot()) == 6 and inf.statistics().relists == 0
    lists = [s.query.get("shardSelector") for s in server.seen if s.kind == "list"]
    assert lists == [LOWER.text, everything.text]
