"""``shardSelector`` over real HTTP (aiohttp), with and without the ShardedListAndWatch gate.

There is no recording of a v1.36 server: these tests follow the KEP-5866, the v1.36 API
reference and k8s.io/apiserver v0.36.0 (see kubesim.machinery.shards). Each checks which
objects an answer holds against FNV-1a 64 computed here, never against KubeSim's own hash.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml

from aioinformer.testing import KubeSim
from kubesim.encoding.protobuf import decode_object
from tests.kubesim.machinery.test_shards import reference_fnv1a_64, selector_text
from tests.kubesim.registry.test_listing import make_ns, pod
from tests.kubesim.replay import recorded_podset_crd

UID = "object.metadata.uid"
NAMESPACE = "object.metadata.namespace"
LOWER = (0, 2**63)  # the lower half of the hash space
QUARTERS = [(i * 2**62, (i + 1) * 2**62) for i in range(4)]
PODSETS = "example.aioinformer.dev/v1/podsets"


@pytest.fixture
async def sharded() -> AsyncIterator[KubeSim]:
    async with KubeSim(feature_gates={"ShardedListAndWatch": True}) as s:
        yield s


async def session(sim: KubeSim) -> aiohttp.ClientSession:
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    return aiohttp.ClientSession(base_url=sim.url, headers=headers)


@pytest.fixture
async def shttp(sharded: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    async with await session(sharded) as s:
        yield s


def in_range(value: str, rng: tuple[int, int]) -> bool:
    return rng[0] <= reference_fnv1a_64(value) < rng[1]


def canonical(field: str, *ranges: tuple[int, int]) -> str:
    return selector_text(field, *ranges)


def squeezed(field: str, *ranges: tuple[int, int]) -> str:
    """The same selector without spaces and with double quotes: the echo is canonical."""
    return canonical(field, *ranges).replace(" ", "").replace("'", '"')


def fill(
    sim: KubeSim, ns: str, rng: tuple[int, int], *, inside: int, outside: int
) -> dict[str, bool]:
    """Create pods in ``ns`` until at least ``inside`` have a uid hashing into ``rng`` and
    ``outside`` do not (uids are random): each name (in creation order) and whether it is
    inside."""
    names: dict[str, bool] = {}
    while sum(names.values()) < inside or len(names) - sum(names.values()) < outside:
        name = f"p{len(names)}"
        names[name] = in_range(sim.create("pods", pod(name), ns)["metadata"]["uid"], rng)
    return names


def insiders(names: dict[str, bool]) -> list[str]:
    return [n for n, inside in names.items() if inside]


def create_inside(sim: KubeSim, ns: str, rng: tuple[int, int], prefix: str) -> tuple[str, set[str]]:
    """Create pods until one's uid hashes into ``rng``: its name, and the names created
    outside on the way."""
    outside: set[str] = set()
    while True:
        name = f"{prefix}{len(outside)}"
        if in_range(sim.create("pods", pod(name), ns)["metadata"]["uid"], rng):
            return name, outside
        outside.add(name)


async def get(http: aiohttp.ClientSession, path: str, **params: str) -> tuple[int, Any]:
    async with http.get(path, params=params) as r:
        return r.status, await r.json()


async def read_until(
    resp: aiohttp.ClientResponse, done: Any, timeout: float = 5.0
) -> list[dict[str, Any]]:
    """Watch events up to and including the first for which ``done(event)`` holds."""
    events: list[dict[str, Any]] = []
    while True:
        line = await asyncio.wait_for(resp.content.readline(), timeout)
        assert line, f"the watch ended before the awaited event; got {events}"
        events.append(json.loads(line))
        if done(events[-1]):
            return events


def name_of(event: dict[str, Any]) -> str:
    name: str = event["object"]["metadata"].get("name", "")
    return name


# -- lists ----------------------------------------------------------------------------------


async def test_quarters_partition_a_list_and_echo_the_canonical_selector(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """Four lists, one per quarter of the hash space, hold each pod exactly once, each in
    the quarter its uid hashes to; each echoes its selector, canonically spelled, in
    metadata.shardInfo."""
    make_ns(sharded, "sh-a")
    uids = {
        sharded.create("pods", pod(f"p{i}"), "sh-a")["metadata"]["uid"]: f"p{i}" for i in range(24)
    }
    seen: list[str] = []
    for quarter in QUARTERS:
        status, body = await get(
            shttp, "/api/v1/namespaces/sh-a/pods", shardSelector=squeezed(UID, quarter)
        )
        assert status == 200, body
        assert body["metadata"]["shardInfo"] == {"selector": canonical(UID, quarter)}
        for item in body["items"]:
            assert in_range(item["metadata"]["uid"], quarter)
            seen.append(item["metadata"]["name"])
    assert sorted(seen) == sorted(uids.values())


async def test_several_ranges_select_their_union(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """``||``: the first and third quarters together hold what both lists hold."""
    make_ns(sharded, "sh-u")
    for i in range(16):
        sharded.create("pods", pod(f"p{i}"), "sh-u")
    path = "/api/v1/namespaces/sh-u/pods"
    text = canonical(UID, QUARTERS[2], QUARTERS[0])
    _, both = await get(shttp, path, shardSelector=text)
    assert both["metadata"]["shardInfo"] == {"selector": text}
    _, first = await get(shttp, path, shardSelector=canonical(UID, QUARTERS[0]))
    _, third = await get(shttp, path, shardSelector=canonical(UID, QUARTERS[2]))
    names = sorted(i["metadata"]["name"] for i in first["items"] + third["items"])
    assert [i["metadata"]["name"] for i in both["items"]] == names


async def test_paged_sharded_list_has_no_remaining_count(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """limit/continue page through the shard only; every page echoes the selector and none
    carries remainingItemCount (the count of a filtered list is unknown)."""
    make_ns(sharded, "sh-p")
    inside = insiders(fill(sharded, "sh-p", LOWER, inside=5, outside=3))
    text = canonical(UID, LOWER)
    names: list[str] = []
    params = {"shardSelector": text, "limit": "2"}
    while True:
        status, body = await get(shttp, "/api/v1/namespaces/sh-p/pods", **params)
        assert status == 200, body
        assert body["metadata"]["shardInfo"] == {"selector": text}
        assert "remainingItemCount" not in body["metadata"]
        names += [i["metadata"]["name"] for i in body["items"]]
        if not body["metadata"].get("continue"):
            break
        params["continue"] = body["metadata"]["continue"]
    assert sorted(names) == sorted(inside)


async def test_namespace_sharding_across_namespaces_and_cluster_scoped_objects(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """``object.metadata.namespace`` hashes the namespace: a cluster-wide pod list keeps the
    namespaces in range; every cluster-scoped object (namespace "") hashes to the offset
    basis 0xcbf29ce484222325, in the last quarter."""
    names = [f"team-{i}" for i in range(8)]
    make_ns(sharded, *names)
    for ns in names:
        sharded.create("pods", pod("p"), ns)
    status, body = await get(shttp, "/api/v1/pods", shardSelector=canonical(NAMESPACE, LOWER))
    assert status == 200, body
    got = sorted(i["metadata"]["namespace"] for i in body["items"])
    assert got == sorted(ns for ns in names if in_range(ns, LOWER))
    for quarter in QUARTERS:
        _, nss = await get(shttp, "/api/v1/namespaces", shardSelector=canonical(NAMESPACE, quarter))
        expected = 8 + 4 if quarter == QUARTERS[3] else 0  # 4: default, kube-system, ...
        assert len(nss["items"]) == expected


async def test_every_output_is_filtered_and_only_full_lists_echo_the_selector(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """YAML and protobuf lists carry shardInfo as JSON does; a Table and a
    PartialObjectMetadataList are filtered but carry none (v1.36 copies only
    resourceVersion, continue and remainingItemCount into them)."""
    make_ns(sharded, "sh-o")
    inside = sorted(insiders(fill(sharded, "sh-o", LOWER, inside=2, outside=2)))
    text = canonical(UID, LOWER)
    path = "/api/v1/namespaces/sh-o/pods"
    params = {"shardSelector": text}

    async def fetch(accept: str) -> bytes:
        async with shttp.get(path, params=params, headers={"Accept": accept}) as r:
            assert r.status == 200, await r.text()
            return await r.read()

    doc = yaml.safe_load(await fetch("application/yaml"))
    assert doc["metadata"]["shardInfo"] == {"selector": text}
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == inside
    doc = decode_object(await fetch("application/vnd.kubernetes.protobuf"))
    assert doc["metadata"]["shardInfo"] == {"selector": text}
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == inside
    table = json.loads(await fetch("application/json;as=Table;v=v1;g=meta.k8s.io"))
    assert "shardInfo" not in table["metadata"]
    assert sorted(row["cells"][0] for row in table["rows"]) == inside
    partial = json.loads(
        await fetch("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
    )
    assert "shardInfo" not in partial["metadata"]
    assert sorted(i["metadata"]["name"] for i in partial["items"]) == inside


async def test_custom_resources_are_filtered_without_shard_info(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """A CRD's objects are filtered in lists and watches like any kind, but their list (an
    UnstructuredList in v1.36, which has no shardInfo) echoes nothing."""
    sharded.create("apiextensions.k8s.io/v1/customresourcedefinitions", recorded_podset_crd())
    await sharded.wait_served(PODSETS)
    make_ns(sharded, "sh-c")
    names = {}
    for i in range(10):
        body = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet"}
        body |= {"metadata": {"name": f"ps{i}"}, "spec": {"replicas": 1}}
        names[f"ps{i}"] = sharded.create(PODSETS, body, "sh-c")["metadata"]["uid"]
    inside = sorted(n for n, uid in names.items() if in_range(uid, LOWER))
    path = "/apis/example.aioinformer.dev/v1/namespaces/sh-c/podsets"
    status, body = await get(shttp, path, shardSelector=canonical(UID, LOWER))
    assert status == 200, body
    assert "shardInfo" not in body["metadata"]
    assert sorted(i["metadata"]["name"] for i in body["items"]) == inside
    params = {"watch": "1", "resourceVersion": "0", "shardSelector": canonical(UID, LOWER)}
    async with shttp.get(path, params=params) as r:
        sentinel = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet"}
        while True:  # a new object inside the range ends the initial events
            sentinel["metadata"] = {"name": f"s{len(names)}"}
            uid = sharded.create(PODSETS, sentinel, "sh-c")["metadata"]["uid"]
            names[sentinel["metadata"]["name"]] = uid
            if in_range(uid, LOWER):
                break
        events = await read_until(r, lambda e: name_of(e) == sentinel["metadata"]["name"])
    assert sorted(name_of(e) for e in events[:-1]) == inside


async def test_deletecollection_deletes_only_the_shard(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """DELETE on a collection lists through the same selector, so it deletes the shard."""
    make_ns(sharded, "sh-d")
    names = fill(sharded, "sh-d", LOWER, inside=2, outside=2)
    path = "/api/v1/namespaces/sh-d/pods"
    async with shttp.delete(path, params={"shardSelector": canonical(UID, LOWER)}) as r:
        assert r.status == 200, await r.text()
        deleted = await r.json()
    assert sorted(i["metadata"]["name"] for i in deleted["items"]) == sorted(insiders(names))
    _, body = await get(shttp, path)
    assert sorted(i["metadata"]["name"] for i in body["items"]) == sorted(
        n for n, inside in names.items() if not inside
    )


# -- watches --------------------------------------------------------------------------------


async def test_watch_sends_only_changes_inside_the_shard(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """From a resourceVersion: ADDED, MODIFIED and DELETED of the objects inside arrive, of
    those outside nothing; the stream is in order, so once the last inside event is read
    every earlier outside event would have been too."""
    make_ns(sharded, "sh-w")
    _, lst = await get(shttp, "/api/v1/namespaces/sh-w/pods")
    params = {
        "watch": "1",
        "resourceVersion": lst["metadata"]["resourceVersion"],
        "shardSelector": canonical(UID, LOWER),
    }
    async with shttp.get("/api/v1/namespaces/sh-w/pods", params=params) as r:
        assert r.status == 200
        names = fill(sharded, "sh-w", LOWER, inside=2, outside=2)
        for name in names:
            sharded.patch("pods", name, {"metadata": {"labels": {"touched": "yes"}}}, "sh-w")
        last, _ = create_inside(sharded, "sh-w", LOWER, "z")
        sharded.delete("pods", last, "sh-w")
        events = await read_until(r, lambda e: e["type"] == "DELETED" and name_of(e) == last)
    assert [(e["type"], name_of(e)) for e in events if name_of(e) != last] == (
        [("ADDED", n) for n in insiders(names)] + [("MODIFIED", n) for n in insiders(names)]
    )
    lasts = [e["type"] for e in events if name_of(e) == last]  # a pod's deletion may be 2 events
    assert (lasts[0], lasts[-1]) == ("ADDED", "DELETED")


async def test_rv0_watch_initial_events_are_filtered(
    sharded: KubeSim, shttp: aiohttp.ClientSession
) -> None:
    """resourceVersion=0: the synthetic ADDED events of the current state hold only the
    objects inside; then changes follow, filtered too."""
    make_ns(sharded, "sh-0")
    inside = insiders(fill(sharded, "sh-0", LOWER, inside=3, outside=3))
    params = {"watch": "1", "resourceVersion": "0", "shardSelector": canonical(UID, LOWER)}
    async with shttp.get("/api/v1/namespaces/sh-0/pods", params=params) as r:
        last, _ = create_inside(sharded, "sh-0", LOWER, "z")
        events = await read_until(r, lambda e: name_of(e) == last)
    assert {e["type"] for e in events} == {"ADDED"}
    assert sorted(name_of(e) for e in events[:-1]) == sorted(inside)


async def test_initial_events_are_filtered_and_the_bookmark_kept() -> None:
    """With the WatchList gate too: sendInitialEvents sends ADDED for the objects inside,
    then the initial-events-end BOOKMARK, untouched by the selector."""
    gates = {"ShardedListAndWatch": True, "WatchList": True}
    async with KubeSim(feature_gates=gates) as sim, await session(sim) as http:
        make_ns(sim, "sh-i")
        inside = insiders(fill(sim, "sh-i", LOWER, inside=3, outside=3))
        params = {
            "watch": "1",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "shardSelector": canonical(UID, LOWER),
        }
        async with http.get("/api/v1/namespaces/sh-i/pods", params=params) as r:
            events = await read_until(r, lambda e: e["type"] == "BOOKMARK")
    assert sorted(name_of(e) for e in events[:-1]) == sorted(inside)
    assert {e["type"] for e in events[:-1]} == {"ADDED"}
    annotations = events[-1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


# -- the gate off, and errors ---------------------------------------------------------------


async def test_gate_off_ignores_the_parameter(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """Off by default, as in v1.36: shardSelector is an unknown query parameter, so lists
    and watches are whole and unechoed, and even a malformed selector is no error."""
    make_ns(sim, "sh-off")
    for i in range(6):
        sim.create("pods", pod(f"p{i}"), "sh-off")
    path = "/api/v1/namespaces/sh-off/pods"
    for text in (canonical(UID, QUARTERS[0]), "shardRange(nonsense"):
        status, body = await get(http, path, shardSelector=text)
        assert status == 200
        assert "shardInfo" not in body["metadata"]
        assert len(body["items"]) == 6
    params = {"watch": "1", "resourceVersion": "0", "shardSelector": canonical(UID, QUARTERS[0])}
    async with http.get(path, params=params) as r:
        events = [(await read_until(r, lambda e: True))[0] for _ in range(6)]
    assert sorted(name_of(e) for e in events) == [f"p{i}" for i in range(6)]


MALFORMED = [
    (
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
        '(did you mean "0x0000000000000000"?)',
    ),
    (
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
        "object.metadata.namespace",
    ),
    (
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        "shard range start 0x8000000000000000 must be less than end 0x0000000000000000",
    ),
    ("  ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
]


@pytest.mark.parametrize("watch", [False, True])
@pytest.mark.parametrize(("text", "message"), MALFORMED)
async def test_a_selector_that_does_not_parse_fails_the_request(
    sharded: KubeSim, shttp: aiohttp.ClientSession, text: str, message: str, watch: bool
) -> None:
    """A 400 BadRequest (a client must not retry it), the parser's message after
    "invalid shard selector: " (v0.36.0's store answers 500: docs/kubesim.md)."""
    params = {"shardSelector": text, **({"watch": "1"} if watch else {})}
    status, body = await get(shttp, "/api/v1/namespaces/default/pods", **params)
    assert (status, body) == (
        400,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"invalid shard selector: {message}",
            "reason": "BadRequest",
            "code": 400,
        },
    )
