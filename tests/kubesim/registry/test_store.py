"""KubeSim writes and errors over real HTTP, against the recorded Status bodies."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim, KubeSimApiError, eventually
from tests.kubesim.registry.test_listing import make_ns, pod
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript


async def call(
    http: aiohttp.ClientSession, method: str, path: str, body: Any = None, **kw: Any
) -> tuple[int, Any]:
    async with http.request(method, path, json=body, **kw) as r:
        return r.status, await r.json()


def expect(case: str) -> tuple[int, Any]:
    rec = transcript(case)["response"]
    return rec["status"], rec["body"]


async def test_error_bodies_match_the_recorded_ones(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """11a AlreadyExists, 11b Conflict, 11c/11d NotFound, 11i missing namespace, 11j 415."""
    make_ns(sim, "tx01")
    sim.create("pods", pod("web-1"), "tx01")
    sim.create("pods", pod("web-2"), "tx01")
    sim.create("pods", pod("web-3"), "tx01")

    assert await call(http, "POST", "/api/v1/namespaces/tx01/pods", pod("web-1")) == expect("11a")

    stale = sim.get("pods", "web-2", "tx01")
    sim.patch("pods", "web-2", {"metadata": {"labels": {"someone": "else"}}}, "tx01")
    stale["metadata"]["labels"]["mine"] = "x"
    assert await call(http, "PUT", "/api/v1/namespaces/tx01/pods/web-2", stale) == expect("11b")

    assert await call(http, "GET", "/api/v1/namespaces/tx01/pods/does-not-exist") == expect("11c")
    assert await call(http, "DELETE", "/api/v1/namespaces/tx01/pods/does-not-exist") == expect(
        "11d"
    )
    assert await call(http, "POST", "/api/v1/namespaces/no-such-ns/pods", pod("x")) == expect("11i")
    status, body = await call(
        http,
        "PATCH",
        "/api/v1/namespaces/tx01/pods/web-3",
        headers={"Content-Type": "application/json"},
        data=b'{"metadata": {"labels": {"a": "b"}}}',
    )
    assert (status, body) == expect("11j")


async def test_create_invalid_pod(http: aiohttp.ClientSession) -> None:
    """11e-create-invalid: bad name and a container without image give 422 with causes."""
    rec = transcript("11e-create-invalid")
    status, body = await call(
        http, "POST", "/api/v1/namespaces/default/pods", rec["request"]["body"]
    )
    assert status == rec["response"]["status"] == 422
    assert body == rec["response"]["body"]


async def test_update_without_resource_version_is_unconditional(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """11k-update-without-rv: a PUT with metadata.resourceVersion removed succeeds for pods."""
    make_ns(sim, "tx01")
    obj = sim.create("pods", pod("web-3"), "tx01")
    sim.patch("pods", "web-3", {"metadata": {"annotations": {"moved": "on"}}}, "tx01")
    del obj["metadata"]["resourceVersion"]
    obj["metadata"]["labels"]["unconditional"] = "yes"
    status, body = await call(http, "PUT", "/api/v1/namespaces/tx01/pods/web-3", obj)
    assert status == transcript("11k-update-without-rv")["response"]["status"] == 200
    assert body["metadata"]["labels"]["unconditional"] == "yes"


async def test_authentication_and_authorization(sim: KubeSim) -> None:
    """11f no token: 403 as system:anonymous; 11g unknown token: 401; 11h a user without
    grants: 403 for list and for watch."""
    alice = sim.add_user("alice")
    for case, headers in (
        ("11f", {}),
        ("11g", {"Authorization": "Bearer not-a-token"}),
        ("11h", {"Authorization": f"Bearer {alice}"}),
    ):
        rec = transcript(case)
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
            async with s.get("/api/v1/namespaces/tx01/pods") as r:
                assert r.status == rec["response"]["status"], case
                assert await r.json() == rec["response"]["body"], case
                if r.status == 403:
                    assert r.headers["X-Content-Type-Options"] == "nosniff"
            if case == "11h":
                watch = rec["more_exchanges"][0]
                async with s.get(
                    "/api/v1/namespaces/tx01/pods", params=watch["request"]["query"]
                ) as r:
                    assert r.status == watch["response"]["status"] == 403
                    assert await r.json() == watch["response"]["body"]


async def test_user_rules_grant_what_they_name(sim: KubeSim) -> None:
    """add_user rules: a user allowed to list pods can list them and still cannot create."""
    tok = sim.add_user("reader", rules=[("list", "", "pods"), ("watch", "", "pods")])
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {tok}"}
    ) as s:
        async with s.get("/api/v1/namespaces/default/pods") as r:
            assert r.status == 200
        async with s.post("/api/v1/namespaces/default/pods", json=pod("x")) as r:
            assert r.status == 403
            assert "cannot create resource" in (await r.json())["message"]


async def test_no_op_writes_keep_the_rv_and_send_no_event(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """06 and README "No-op writes": the same status again, or spec sent to /status, is 200
    with an unchanged RV and no event."""
    make_ns(sim, "tx06")
    sim.create("pods", pod("w1"), "tx06")
    first = sim.patch("pods", "w1", {"status": {"phase": "Running"}}, "tx06", subresource="status")
    rv = str(sim.resource_version)
    async with http.get(
        "/api/v1/namespaces/tx06/pods", params=watch_params(resourceVersion=rv, timeoutSeconds="1")
    ) as r:
        status, again = await call(
            http,
            "PATCH",
            "/api/v1/namespaces/tx06/pods/w1/status",
            headers={"Content-Type": "application/merge-patch+json"},
            data=b'{"status": {"phase": "Running"}}',
        )
        spec_to_status = await call(
            http,
            "PATCH",
            "/api/v1/namespaces/tx06/pods/w1/status",
            headers={"Content-Type": "application/merge-patch+json"},
            data=b'{"spec": {"activeDeadlineSeconds": 5}}',
        )
        events = await WatchReader(r).events_until_eof()
    assert status == 200
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert spec_to_status[1]["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert "activeDeadlineSeconds" not in spec_to_status[1]["spec"]
    assert events == []


async def test_strategic_merge_patch_merges_conditions_by_type(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """06: a status strategic-merge-patch of conditions[type=Ready] merges by type; as in
    upstream's mergeSortedSlice, an item new to the list goes before the server-only ones."""
    make_ns(sim, "tx06")
    sim.create("pods", pod("w1"), "tx06")
    sim.patch(
        "pods",
        "w1",
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
        "tx06",
        subresource="status",
    )
    status, body = await call(
        http,
        "PATCH",
        "/api/v1/namespaces/tx06/pods/w1/status",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        data=b'{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}',
    )
    assert status == 200
    assert [c["type"] for c in body["status"]["conditions"]] == ["Ready", "PodScheduled"]
    _, again = await call(
        http,
        "PATCH",
        "/api/v1/namespaces/tx06/pods/w1/status",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        data=b'{"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}',
    )
    conds = {c["type"]: c["status"] for c in again["status"]["conditions"]}
    assert conds == {"Ready": "True", "PodScheduled": "False"}


async def test_delete_preconditions_finalizers_and_graceful_pods(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """12-delete-preconditions-finalizers: uid/RV precondition 409s; an unscheduled pod
    goes MODIFIED then DELETED; a finalizer keeps it (MODIFIED), removing the finalizer
    makes it DELETED with the finalizers still listed; a scheduled pod deleted gracefully
    only gets MODIFIED (grace 30); gracePeriodSeconds=0 then removes it; deletecollection
    answers the list of what it deleted."""
    rec = transcript("12-delete-preconditions-finalizers")
    rec_writes = {w["label"]: w["response"] for w in rec["writes"]}
    make_ns(sim, "tx12")
    p_uid = sim.create("pods", pod("p-uid"), "tx12")
    sim.create(
        "pods",
        {
            **pod("p-final"),
            "metadata": {"name": "p-final", "finalizers": ["example.aioinformer.dev/hold"]},
        },
        "tx12",
    )
    sched = pod("p-sched")
    sched["spec"] = {**sched["spec"], "nodeName": "node-1"}
    sim.create("pods", sched, "tx12")
    sim.create("pods", pod("bulk-1", app="bulk"), "tx12")
    sim.create("pods", pod("bulk-2", app="bulk"), "tx12")
    rv = str(sim.resource_version)
    base = "/api/v1/namespaces/tx12/pods"
    async with http.get(base, params=watch_params(resourceVersion=rv, timeoutSeconds="2")) as r:
        status, body = await call(
            http,
            "DELETE",
            f"{base}/p-uid",
            {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}},
        )
        want = next(v for k, v in rec_writes.items() if "uid mismatch" in k)
        assert status == 409
        assert body["message"] == want["body"]["message"].replace(
            "ef4ff6ce-f786-43c1-be81-063c49815a68", p_uid["metadata"]["uid"]
        )
        status, body = await call(
            http, "DELETE", f"{base}/p-uid", {"preconditions": {"resourceVersion": "1"}}
        )
        want = next(v for k, v in rec_writes.items() if "resourceVersion mismatch" in k)
        assert status == 409
        assert body["message"] == want["body"]["message"].replace(
            "(237)", f"({p_uid['metadata']['resourceVersion']})"
        )
        status, gone = await call(
            http, "DELETE", f"{base}/p-uid", {"preconditions": {"uid": p_uid["metadata"]["uid"]}}
        )
        assert status == 200 and gone["kind"] == "Pod"
        status, held = await call(http, "DELETE", f"{base}/p-final")
        assert status == 200 and held["metadata"]["deletionTimestamp"]
        status, again = await call(http, "DELETE", f"{base}/p-final")
        assert again["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
        await call(
            http,
            "PATCH",
            f"{base}/p-final",
            headers={"Content-Type": "application/merge-patch+json"},
            data=b'{"metadata": {"finalizers": null}}',
        )
        status, graceful = await call(http, "DELETE", f"{base}/p-sched")
        assert graceful["metadata"]["deletionGracePeriodSeconds"] == 30
        await call(http, "DELETE", f"{base}/p-sched", params={"gracePeriodSeconds": "0"})
        status, coll = await call(http, "DELETE", base, params={"labelSelector": "app=bulk"})
        assert status == 200 and coll["kind"] == "PodList"
        assert [i["metadata"]["name"] for i in coll["items"]] == ["bulk-1", "bulk-2"]
        events = await WatchReader(r).events_until_eof()
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    rec_events = [
        (e["line"]["type"], e["line"]["object"]["metadata"].get("name"))
        for e in rec["response"]["events"]
    ]
    assert got == [ev for ev in rec_events if ev[0] != "BOOKMARK" and ev[1] != "p-fg"]
    final_deleted = next(
        e for e in events if e["type"] == "DELETED" and e["object"]["metadata"]["name"] == "p-final"
    )
    assert final_deleted["object"]["metadata"]["finalizers"] == ["example.aioinformer.dev/hold"]
    assert gone["metadata"]["resourceVersion"] == next(
        e["object"]["metadata"]["resourceVersion"] for e in events if e["type"] == "DELETED"
    )


async def test_foreground_deletion_adds_its_finalizer(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """12 (p-fg): propagationPolicy=Foreground answers the pod with the foregroundDeletion
    finalizer; the garbage collector then finds no dependent and releases it."""
    sim.create("pods", pod("p-fg"), "default")
    status, body = await call(
        http, "DELETE", "/api/v1/namespaces/default/pods/p-fg", {"propagationPolicy": "Foreground"}
    )
    assert status == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert body["metadata"]["deletionTimestamp"]
    await sim.wait_idle()
    assert sim.list("pods", "default") == []


async def test_crd_lifecycle_and_custom_resource_semantics(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """13a: a CRD is Established within a second and its group is discoverable; 13b: CR
    create/status/spec patches (generation bumps on spec only, status ignores spec),
    strategic merge patch is 415, DELETE answers a Status; 13d discovery."""
    crd_rec = transcript("13a-crd-create-established")
    status, crd = await call(
        http,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd_rec["request"]["body"],
    )
    assert status == 201 and crd["metadata"]["generation"] == 1

    async def established() -> bool:
        _, cur = await call(
            http,
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podsets.example.aioinformer.dev",
        )
        conds = {c["type"]: c["status"] for c in (cur.get("status") or {}).get("conditions") or []}
        return conds.get("Established") == "True"

    await eventually(established, "the CRD to be Established")
    status, disc = await call(http, "GET", "/apis/example.aioinformer.dev/v1")
    assert status == 200 and [r["name"] for r in disc["resources"]] == ["podsets", "podsets/status"]
    make_ns(sim, "tx13")
    base = "/apis/example.aioinformer.dev/v1/namespaces/tx13/podsets"
    status, ps = await call(
        http,
        "POST",
        base,
        {
            "apiVersion": "example.aioinformer.dev/v1",
            "kind": "PodSet",
            "metadata": {"name": "ps-a"},
            "spec": {"replicas": 2},
        },
    )
    assert status == 201 and ps["metadata"]["generation"] == 1
    merge = {"Content-Type": "application/merge-patch+json"}
    _, st = await call(
        http,
        "PATCH",
        f"{base}/ps-a/status",
        headers=merge,
        data=b'{"status": {"readyReplicas": 2}}',
    )
    assert st["status"] == {"readyReplicas": 2} and st["metadata"]["generation"] == 1
    _, same = await call(
        http, "PATCH", f"{base}/ps-a/status", headers=merge, data=b'{"spec": {"replicas": 5}}'
    )
    assert same["metadata"]["resourceVersion"] == st["metadata"]["resourceVersion"]
    assert same["spec"]["replicas"] == 2
    _, sp = await call(
        http, "PATCH", f"{base}/ps-a", headers=merge, data=b'{"spec": {"replicas": 3}}'
    )
    assert sp["metadata"]["generation"] == 2 and sp["status"] == {"readyReplicas": 2}
    rec13b = {w["label"]: w["response"] for w in transcript("13b-podset-list-watch")["writes"]}
    smp = await call(
        http,
        "PATCH",
        f"{base}/ps-a",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        data=b'{"spec": {"replicas": 4}}',
    )
    want = next(v for k, v in rec13b.items() if "strategic" in k)
    assert smp == (want["status"], want["body"])
    status, deleted = await call(http, "DELETE", f"{base}/ps-a")
    want = next(v for k, v in rec13b.items() if k.startswith("delete"))["body"]
    assert status == 200
    assert deleted == {
        **want,
        "details": {**want["details"], "name": "ps-a", "uid": ps["metadata"]["uid"]},
    }
    status, _ = await call(
        http,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podsets.example.aioinformer.dev",
    )
    assert status == 200
    status, _ = await call(http, "GET", base)
    assert status == 404


async def test_lease_leader_election_exchanges(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    """14-lease-leader-election: create, duplicate 409, renew with the current RV, a stale
    takeover 409 with the recorded message, list."""
    rec = transcript("14-lease-leader-election")
    make_ns(sim, "tx14")
    base = "/apis/coordination.k8s.io/v1/namespaces/tx14/leases"
    body = rec["request"]["body"]
    status, lease = await call(http, "POST", base, body)
    assert status == 201 and lease["spec"] == body["spec"]
    ex = {e["label"].split(" ")[0] + str(i): e for i, e in enumerate(rec["more_exchanges"])}
    dup = next(
        e
        for e in rec["more_exchanges"]
        if e["response"]["status"] == 409 and e["request"]["method"] == "POST"
    )
    assert await call(http, "POST", base, dup["request"]["body"]) == (409, dup["response"]["body"])
    renew = copy.deepcopy(lease)
    renew["spec"]["renewTime"] = "2026-11-29T19:23:10.073992Z"
    status, renewed = await call(http, "PUT", f"{base}/aioinformer-leader", renew)
    assert status == 200 and int(renewed["metadata"]["resourceVersion"]) > int(
        lease["metadata"]["resourceVersion"]
    )
    takeover = copy.deepcopy(lease)
    takeover["spec"]["holderIdentity"] = "candidate-b"
    stale = next(
        e
        for e in rec["more_exchanges"]
        if e["response"]["status"] == 409 and e["request"]["method"] == "PUT"
    )
    assert await call(http, "PUT", f"{base}/aioinformer-leader", takeover) == (
        409,
        stale["response"]["body"],
    )
    status, lst = await call(http, "GET", base)
    assert lst["kind"] == "LeaseList" and lst["items"][0]["spec"]["holderIdentity"] == "candidate-a"
    assert ex


async def test_names_with_a_slash_are_refused(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """A name with ``/`` could not be told apart from a namespace/name key: it fails the
    DNS-1123 subdomain rule (11e's message) for namespaced, cluster-scoped and in-process
    creates alike, and a URL-encoded slash reaches no object (it splits the path)."""
    rec = transcript("11e")["response"]["body"]["details"]["causes"][0]["message"]
    detail = rec.split('"Bad_Name": ', 1)[1]
    for path, body in (
        ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a/b"}}),
        ("/api/v1/nodes", {"metadata": {"name": "default/b"}}),
        ("/api/v1/namespaces", {"metadata": {"name": "x/y"}}),
    ):
        status, answer = await call(http, "POST", path, body)
        assert status == 422, path
        assert answer["details"]["causes"][0]["field"] == "metadata.name"
    status, answer = await call(
        http, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a/b"}}
    )
    assert answer["details"]["causes"][0]["message"] == f'Invalid value: "a/b": {detail}'
    with pytest.raises(KubeSimApiError) as err:
        sim.create("configmaps", {"metadata": {"name": "default/x"}}, "default")
    assert err.value.code == 422
    sim.create("configmaps", {"metadata": {"name": "b"}}, "default")
    status, _ = await call(http, "GET", "/api/v1/namespaces/default/configmaps/a%2Fb")
    assert status == 404
    assert [c["metadata"]["name"] for c in sim.list("configmaps", "default")] == ["b"]
