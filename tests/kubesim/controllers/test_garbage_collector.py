"""The garbage collector KubeSim runs (kubesim.controllers.garbage_collector): background, foreground and
orphan cascades by uid, for built-in kinds and custom resources, over HTTP and kubectl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from aioinformer.testing import KubeSim
from kubesim.controllers.garbage_collector import OwnerRef, owner_references
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.registry.test_listing import pod
from tests.kubesim.replay import recorder, send
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript

PODSETS = "example.aioinformer.dev/v1/podsets"


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def ref(owner: dict[str, Any], *, block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def owned(name: str, *owners: dict[str, Any], block: bool = True, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "ownerReferences": [ref(o, block=block) for o in owners], **meta}
    }


def names(sim: KubeSim, resource: str, ns: str = "default") -> list[str]:
    return [o["metadata"]["name"] for o in sim.list(resource, ns)]


def test_owner_references_read_from_the_encoded_object() -> None:
    raw = orjson.dumps(
        {
            "metadata": {
                "name": "x",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "K",
                        "name": "o",
                        "uid": "u1",
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": {"note": '"ownerReferences":[ in the content'},
        }
    )
    assert owner_references(raw) == (OwnerRef("v1", "K", "o", "u1", True),)
    assert owner_references(b'{"metadata":{"name":"x"}}') == ()


async def test_background_deletes_dependents_once_the_owner_is_gone(sim: KubeSim) -> None:
    """A DELETE without policy removes the owner at once; then its dependents go, except
    one that has another owner that still exists, which only loses the reference."""
    owner = sim.create("deployments", deployment("web"))
    other = sim.create("deployments", deployment("other"))
    sim.create("configmaps", owned("only-web", owner))
    sim.create("configmaps", owned("shared", owner, other))
    sim.create("pods", {**pod("p"), **owned("p", owner), "spec": pod("p")["spec"]})
    sim.delete("deployments", "web", "default")
    await sim.wait_idle()
    assert names(sim, "configmaps") == ["shared"] and names(sim, "pods") == []
    refs = sim.get("configmaps", "shared", "default")["metadata"]["ownerReferences"]
    assert [r["uid"] for r in refs] == [other["metadata"]["uid"]]
    assert names(sim, "deployments") == ["other"]


async def test_foreground_waits_for_blocking_dependents(sim: KubeSim) -> None:
    """Foreground over HTTP, watched: the owner gets foregroundDeletion and stays while a
    blocking dependent (held by its own finalizer) exists; its dependents are deleted first;
    once the held one is released the owner goes, after its dependents (DELETED order)."""
    owner = sim.create("deployments", deployment("web"))
    sim.create("configmaps", owned("free", owner))
    sim.create("configmaps", owned("held", owner, finalizers=["example.com/hold"]))
    async with recorder(sim) as http:
        params = watch_params(resourceVersion=str(sim.resource_version), timeoutSeconds="1")
        async with (
            http.get("/apis/apps/v1/namespaces/default/deployments", params=params) as owners,
            http.get("/api/v1/namespaces/default/configmaps", params=params) as deps,
        ):
            status, body, _ = await send(
                http,
                "DELETE",
                "/apis/apps/v1/namespaces/default/deployments/web",
                {"propagationPolicy": "Foreground"},
            )
            assert status == 200 and body["metadata"]["finalizers"] == ["foregroundDeletion"]
            await sim.wait_idle()
            assert names(sim, "deployments") == ["web"] and names(sim, "configmaps") == ["held"]
            sim.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "default")
            await sim.wait_idle()
            owner_events = await WatchReader(owners).events_until_eof()
            dep_events = await WatchReader(deps).events_until_eof()
    assert names(sim, "deployments") == []
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in owner_events] == [
        ("MODIFIED", "web"),
        ("DELETED", "web"),
    ]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in dep_events] == [
        ("DELETED", "free"),
        ("MODIFIED", "held"),
        ("DELETED", "held"),
    ]
    assert int(dep_events[-1]["object"]["metadata"]["resourceVersion"]) < int(
        owner_events[-1]["object"]["metadata"]["resourceVersion"]
    )


async def test_non_blocking_dependents_do_not_hold_the_owner(sim: KubeSim) -> None:
    """A dependent without blockOwnerDeletion does not keep a foreground owner: the owner
    goes even while that dependent is held, and the dependent is deleted too."""
    owner = sim.create("deployments", deployment("web"))
    sim.create("configmaps", owned("loose", owner, block=False, finalizers=["example.com/hold"]))
    sim.delete("deployments", "web", "default", propagationPolicy="Foreground")
    await sim.wait_idle()
    assert names(sim, "deployments") == []
    assert sim.get("configmaps", "loose", "default")["metadata"]["deletionTimestamp"]


async def test_orphan_keeps_dependents_without_the_reference(sim: KubeSim) -> None:
    """Orphan: the owner gets the orphan finalizer, its dependents lose the reference (the
    other owners' stay), then the finalizer goes and the owner with it."""
    owner = sim.create("deployments", deployment("web"))
    other = sim.create("deployments", deployment("other"))
    sim.create("configmaps", owned("a", owner))
    sim.create("configmaps", owned("b", owner, other))
    sim.delete("deployments", "web", "default", propagationPolicy="Orphan")
    await sim.wait_idle()
    assert names(sim, "deployments") == ["other"]
    assert names(sim, "configmaps") == ["a", "b"]
    assert "ownerReferences" not in sim.get("configmaps", "a", "default")["metadata"]
    refs = sim.get("configmaps", "b", "default")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["other"]


async def test_cascades_through_custom_resources(sim: KubeSim) -> None:
    """A PodSet (CR) owning a ReplicaSet-like chain: CR -> Deployment -> Pod. A foreground
    delete of the CR deletes the Deployment in the foreground (it has dependents), the Pod,
    then the Deployment, then the CR."""
    sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
    await sim.wait_served(PODSETS)
    cr = sim.create(
        PODSETS,
        {
            "apiVersion": "example.aioinformer.dev/v1",
            "kind": "PodSet",
            "metadata": {"name": "ps"},
            "spec": {"replicas": 1},
        },
        "default",
    )
    mid = sim.create(
        "deployments",
        {**deployment("mid"), "metadata": {"name": "mid", "ownerReferences": [ref(cr)]}},
    )
    sim.create("pods", {**pod("leaf"), "metadata": {"name": "leaf", "ownerReferences": [ref(mid)]}})
    seen: list[tuple[str, str, list[str] | None]] = []

    def listener(type_name: str, ev: Any) -> None:
        meta = ev.obj.decode()["metadata"]
        seen.append((ev.type, meta["name"], meta.get("finalizers")))

    sim.mvcc.on_commit.append(listener)
    sim.delete(PODSETS, "ps", "default", propagationPolicy="Foreground")
    await sim.wait_idle()
    sim.mvcc.on_commit.remove(listener)
    assert (
        names(sim, PODSETS) == [] and names(sim, "deployments") == [] and names(sim, "pods") == []
    )
    deleted = [n for t, n, _ in seen if t == "DELETED"]
    assert deleted == ["leaf", "mid", "ps"]
    assert ("MODIFIED", "mid", ["foregroundDeletion"]) in seen


async def test_a_dependent_of_a_deleted_owner_is_collected(sim: KubeSim) -> None:
    """A dependent created after its owner was deleted (a stale cache) is collected; one
    naming an owner KubeSim never saw is left alone."""
    owner = sim.create("deployments", deployment("web"))
    sim.delete("deployments", "web", "default")
    await sim.wait_idle()
    sim.create("configmaps", owned("late", owner))
    ghost = {
        **owner,
        "metadata": {**owner["metadata"], "uid": "00000000-0000-0000-0000-000000000001"},
    }
    sim.create("configmaps", owned("orphaned-from-birth", ghost))
    await sim.wait_idle()
    assert names(sim, "configmaps") == ["orphaned-from-birth"]


async def test_kubectl_delete_cascade(tmp_path: Path) -> None:
    """``kubectl delete --cascade=foreground|orphan|background`` (which waits for the owner
    to be gone) and ``kubectl wait --for=delete`` return once the garbage collector is done:
    foreground leaves no dependent, orphan leaves it without its reference, background
    removes it afterwards."""
    async with kubectl_sim(tmp_path) as (sim, kubectl):
        for mode in ("foreground", "orphan", "background"):
            owner = sim.create("deployments", deployment(f"own-{mode}"))
            sim.create("configmaps", owned(f"dep-{mode}", owner))
            out = await kubectl.ok(
                "delete", "deployment", f"own-{mode}", f"--cascade={mode}", "--timeout=20s"
            )
            assert out.strip() == f'deployment.apps "own-{mode}" deleted'
            assert f"own-{mode}" not in names(sim, "deployments")
        await kubectl.ok("wait", "--for=delete", "configmap/dep-background", "--timeout=20s")
        assert names(sim, "configmaps") == ["dep-orphan"]
        assert "ownerReferences" not in sim.get("configmaps", "dep-orphan", "default")["metadata"]
