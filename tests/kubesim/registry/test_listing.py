"""KubeSim lists over real HTTP, each test naming the transcript it follows."""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from tests.support import transcript

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
}


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {**POD, "metadata": {"name": name, "labels": labels or {"app": "web"}}}


def make_ns(sim: KubeSim, *names: str) -> None:
    for ns in names:
        sim.create("namespaces", {"metadata": {"name": ns}})


async def get_json(http: aiohttp.ClientSession, path: str, **params: str) -> tuple[int, Any]:
    async with http.get(path, params=params) as r:
        return r.status, await r.json()


def decode_token(token: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return data


async def test_list_rv_is_the_global_revision_and_items_are_sorted(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """01-list-pods: the list RV is the current revision (shared by every type, so it can
    exceed every item RV) and items come sorted by namespace/name."""
    rec = transcript("01-list-pods")["response"]["body"]
    assert [i["metadata"]["name"] for i in rec["items"]] == ["web-1", "web-2", "web-3"]
    make_ns(sim, "tx01")
    for name in ("web-3", "web-1", "web-2"):
        sim.create("pods", pod(name), "tx01")
    sim.create("configmaps", {"metadata": {"name": "moves-the-revision"}}, "tx01")
    status, body = await get_json(http, "/api/v1/namespaces/tx01/pods")
    assert status == 200
    assert body["kind"] == rec["kind"] == "PodList"
    assert body["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in body["items"]] == ["web-1", "web-2", "web-3"]
    item_rvs = [int(i["metadata"]["resourceVersion"]) for i in body["items"]]
    assert int(body["metadata"]["resourceVersion"]) == sim.resource_version > max(item_rvs)
    assert all("kind" not in i for i in body["items"]), "typed list items carry no kind"


async def test_cluster_wide_list_sorts_by_etcd_key(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """Lists are sorted by the "namespace/name" key, as etcd sorts bytes."""
    make_ns(sim, "a", "a-b")
    sim.create("pods", pod("x"), "a")
    sim.create("pods", pod("y"), "a-b")
    _, body = await get_json(http, "/api/v1/pods")
    keys = [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in body["items"]]
    assert keys == sorted(keys) == ["a-b/y", "a/x"]


async def test_pagination_token_format_and_remaining_count(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """02-list-paginated: same RV on every page, the token's exact shape, remainingItemCount
    on non-final pages, and no continue/remainingItemCount keys on the last page."""
    rec = transcript("02-list-paginated")
    rec_token = decode_token(rec["response"]["body"]["metadata"]["continue"])
    make_ns(sim, "tx02")
    for i in range(1, 6):
        sim.create("pods", pod(f"pod-{i}"), "tx02")
    status, page1 = await get_json(http, "/api/v1/namespaces/tx02/pods", limit="2")
    assert status == 200
    meta = page1["metadata"]
    token = decode_token(meta["continue"])
    assert list(token) == list(rec_token) == ["v", "rv", "start"]
    assert token["v"] == "meta.k8s.io/v1"
    assert token["start"] == "pod-2\u0000" and rec_token["start"] == "pod-2\u0000"
    assert token["rv"] == int(meta["resourceVersion"])
    assert "=" not in meta["continue"]
    assert (
        meta["remainingItemCount"] == rec["response"]["body"]["metadata"]["remainingItemCount"] == 3
    )
    sim.create("pods", pod("pod-9"), "tx02")  # not in the snapshot the pages come from
    names = [i["metadata"]["name"] for i in page1["items"]]
    cont = meta["continue"]
    while cont:
        _, page = await get_json(
            http, "/api/v1/namespaces/tx02/pods", limit="2", **{"continue": cont}
        )
        assert page["metadata"]["resourceVersion"] == meta["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        cont = page["metadata"].get("continue", "")
        last_meta = page["metadata"]
    assert names == [f"pod-{i}" for i in range(1, 6)]
    assert set(last_meta) == {"resourceVersion"}


async def test_expired_continue_token(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """03-list-continue-expired: after compaction the token gets 410 Expired with the fixed
    message and an "inconsistent" token (rv -1) that still works; Exact at the compacted RV
    is 410, NotOlderThan is 200."""
    rec = transcript("03-list-continue-expired")
    make_ns(sim, "tx02")
    for i in range(1, 6):
        sim.create("pods", pod(f"pod-{i}"), "tx02")
    _, page1 = await get_json(http, "/api/v1/namespaces/tx02/pods", limit="2")
    first_rv = page1["metadata"]["resourceVersion"]
    sim.create("configmaps", {"metadata": {"name": "x"}}, "tx02")
    sim.compact()
    status, body = await get_json(
        http,
        "/api/v1/namespaces/tx02/pods",
        limit="2",
        **{"continue": page1["metadata"]["continue"]},
    )
    want = rec["response"]["body"]
    assert status == rec["response"]["status"] == 410
    assert {k: v for k, v in body.items() if k != "metadata"} == {
        k: v for k, v in want.items() if k != "metadata"
    }
    inconsistent = decode_token(body["metadata"]["continue"])
    assert inconsistent == {"v": "meta.k8s.io/v1", "rv": -1, "start": "pod-2\u0000"}
    status, page2 = await get_json(
        http,
        "/api/v1/namespaces/tx02/pods",
        limit="2",
        **{"continue": body["metadata"]["continue"]},
    )
    assert status == 200
    assert [i["metadata"]["name"] for i in page2["items"]] == ["pod-3", "pod-4"]
    status, exact = await get_json(
        http, "/api/v1/namespaces/tx02/pods", resourceVersion=first_rv, resourceVersionMatch="Exact"
    )
    rec_exact = rec["more_exchanges"][2]["response"]
    assert status == rec_exact["status"] == 410
    assert exact == rec_exact["body"]
    status, _ = await get_json(
        http,
        "/api/v1/namespaces/tx02/pods",
        resourceVersion=first_rv,
        resourceVersionMatch="NotOlderThan",
    )
    assert status == 200


async def test_list_resource_version_semantics(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """04a-04g: RV=0 and NotOlderThan report the cache RV and ignore limit (04e); Exact
    serves the state at exactly N, pageable (04b, 04g); a match without an RV is 422 (04f)."""
    make_ns(sim, "tx01", "other")
    for name in ("web-1", "web-2", "web-3"):
        sim.create("pods", pod(name), "tx01")
    _, ref = await get_json(http, "/api/v1/namespaces/tx01/pods")
    n = ref["metadata"]["resourceVersion"]
    sim.create("pods", pod("later"), "tx01")
    sim.create("pods", pod("elsewhere"), "other")
    current = str(sim.resource_version)

    _, rv0 = await get_json(http, "/api/v1/namespaces/tx01/pods", resourceVersion="0", limit="2")
    assert rv0["metadata"] == {"resourceVersion": current}  # 04e: limit ignored, no continue
    assert len(rv0["items"]) == 4

    _, exact = await get_json(
        http, "/api/v1/namespaces/tx01/pods", resourceVersion=n, resourceVersionMatch="Exact"
    )
    assert exact["metadata"]["resourceVersion"] == n
    assert [i["metadata"]["name"] for i in exact["items"]] == ["web-1", "web-2", "web-3"]

    _, paged = await get_json(
        http,
        "/api/v1/namespaces/tx01/pods",
        resourceVersion=n,
        resourceVersionMatch="Exact",
        limit="2",
    )
    rec = transcript("04g-list-exact-limit")["response"]["body"]["metadata"]
    assert paged["metadata"]["remainingItemCount"] == rec["remainingItemCount"] == 1
    assert decode_token(paged["metadata"]["continue"])["rv"] == int(n)

    for params in ({"resourceVersionMatch": "NotOlderThan"}, {}):
        _, nto = await get_json(http, "/api/v1/namespaces/tx01/pods", resourceVersion=n, **params)
        assert nto["metadata"]["resourceVersion"] == current

    status, body = await get_json(
        http, "/api/v1/namespaces/tx01/pods", resourceVersionMatch="Exact"
    )
    rec422 = transcript("04f-list-match-without-rv")["response"]
    assert status == rec422["status"] == 422
    assert body == rec422["body"]


async def test_list_too_large_resource_version(http: aiohttp.ClientSession) -> None:
    """05a/05b: a future RV waits, then 504 Timeout with ResourceVersionTooLarge,
    retryAfterSeconds 1 and a Retry-After header; 05c: Exact gives the raw etcd 500."""
    for case, params in (
        ("05a", {"resourceVersion": "99999999", "resourceVersionMatch": "NotOlderThan"}),
        ("05b", {"resourceVersion": "99999999"}),
        ("05c", {"resourceVersion": "99999999", "resourceVersionMatch": "Exact"}),
    ):
        rec = transcript(case)["response"]
        async with http.get("/api/v1/namespaces/default/pods", params=params) as r:
            body = await r.json()
            assert r.status == rec["status"], case
            if r.status == 504:
                assert r.headers["Retry-After"] == "1"
                want = dict(rec["body"])
                current = body["message"].rsplit(" ", 1)[1]
                want["message"] = want["message"].rsplit(" ", 1)[0] + " " + current
                assert body == want
            else:
                assert body == rec["body"]


async def test_unparsable_resource_version_is_500(http: aiohttp.ClientSession) -> None:
    """08f-watch-unparsable-rv: resourceVersion=abc is a plain 500 for list and watch."""
    rec = transcript("08f-watch-unparsable-rv")
    for params in ({"resourceVersion": "abc"}, {"resourceVersion": "abc", "watch": "1"}):
        status, body = await get_json(http, "/api/v1/namespaces/tx01/pods", **params)
        assert status == rec["response"]["status"] == 500
        assert body == rec["response"]["body"]


async def test_field_and_label_selector_errors(http: aiohttp.ClientSession) -> None:
    """10d (unsupported field label) and 11l (unparsable labelSelector): 400 BadRequest."""
    for case, params in (
        ("10d", {"fieldSelector": "spec.foo=bar"}),
        ("11l", {"labelSelector": "app in (web"}),
    ):
        rec = transcript(case)["response"]
        status, body = await get_json(http, "/api/v1/namespaces/tx01/pods", **params)
        assert status == rec["status"] == 400
        assert body == rec["body"]


async def test_custom_resource_list_always_has_continue(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """13b/13c: a CR list is unstructured: sorted keys, items with apiVersion/kind, and
    "continue": "" even on the last page."""
    crd = transcript("13a-crd-create-established")["request"]["body"]
    sim.create("apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await sim.wait_served("example.aioinformer.dev/v1/podsets")
    make_ns(sim, "tx13")
    sim.create(
        "example.aioinformer.dev/v1/podsets",
        {
            "apiVersion": "example.aioinformer.dev/v1",
            "kind": "PodSet",
            "metadata": {"name": "ps-a"},
            "spec": {"replicas": 2},
        },
        "tx13",
    )
    rec = transcript("13b-podset-list-watch")["response"]["body"]
    status, body = await get_json(http, "/apis/example.aioinformer.dev/v1/namespaces/tx13/podsets")
    assert status == 200
    assert list(body) == list(rec) == ["apiVersion", "items", "kind", "metadata"]
    assert body["kind"] == "PodSetList"
    assert body["metadata"]["continue"] == "" and list(body["metadata"]) == list(rec["metadata"])
    item = body["items"][0]
    assert item["apiVersion"] == "example.aioinformer.dev/v1" and item["kind"] == "PodSet"
    assert list(item["metadata"]) == sorted(item["metadata"])
    _, all_ns = await get_json(http, "/apis/example.aioinformer.dev/v1/podsets")
    assert [i["metadata"]["name"] for i in all_ns["items"]] == ["ps-a"]


async def test_partial_object_metadata_list(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """16a: Accept as=PartialObjectMetadataList returns metadata only."""
    make_ns(sim, "tx01")
    sim.create("pods", pod("live-07a"), "tx01")
    rec = transcript("16a-list-partialobjectmetadata")["response"]["body"]
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    async with http.get("/api/v1/namespaces/tx01/pods", headers={"Accept": accept}) as r:
        body = await r.json()
    assert (body["kind"], body["apiVersion"]) == (rec["kind"], rec["apiVersion"])
    item = body["items"][0]
    assert list(item) == list(rec["items"][0]) == ["kind", "apiVersion", "metadata"]
    assert item["metadata"]["name"] == "live-07a"


async def test_unsupported_accept_is_406(http: aiohttp.ClientSession) -> None:
    """16g-list-accept-unsupported: Accept text/html gives 406 listing the representations,
    protobuf ones included."""
    rec = transcript("16g-list-accept-unsupported")["response"]
    async with http.get("/api/v1/namespaces/tx01/pods", headers={"Accept": "text/html"}) as r:
        assert r.status == rec["status"] == 406
        assert r.content_type == rec["content_type"] == "application/json"
        body = await r.json()
    assert body == rec["body"]
