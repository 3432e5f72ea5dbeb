"""The namespace controller KubeSim runs (kubesim.controllers.namespace): a deleted namespace is
emptied through the normal DELETE, its conditions say what is left, and it goes once
nothing is."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aioinformer.testing import KubeSim
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.registry.test_listing import pod
from tests.kubesim.replay import recorder, send
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import eventually, transcript

PODSETS = "example.aioinformer.dev/v1/podsets"


def _conditions(sim: KubeSim, ns: str) -> dict[str, tuple[str, str, str]]:
    status = sim.get("namespaces", ns).get("status") or {}
    return {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions") or []
    }


def _gone(sim: KubeSim, ns: str) -> bool:
    return all(n["metadata"]["name"] != ns for n in sim.list("namespaces"))


async def test_finalizers_hold_the_namespace_until_released(sim: KubeSim) -> None:
    """Deleting a namespace deletes its content through DELETE: objects without finalizers
    go at once (watchers get DELETED), a ConfigMap and a CR with a finalizer get their
    deletionTimestamp (what an operator's on-delete handler waits for) and stay; the
    namespace stays Terminating with the upstream conditions naming what is left; once the
    finalizers are released the namespace is finalized and deleted, and can be created again."""
    sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
    await sim.wait_served(PODSETS)
    sim.create("namespaces", {"metadata": {"name": "team"}})
    sim.create("configmaps", {"metadata": {"name": "plain"}}, "team")
    sim.create(
        "configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, "team"
    )
    body = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet", "spec": {"replicas": 1}}
    sim.create(
        PODSETS,
        {
            **body,
            "metadata": {"name": "ps", "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]},
        },
        "team",
    )
    sim.create("pods", pod("unscheduled"), "team")
    async with recorder(sim) as http:
        params = watch_params(resourceVersion=str(sim.resource_version), timeoutSeconds="1")
        async with http.get(
            "/apis/example.aioinformer.dev/v1/namespaces/team/podsets", params=params
        ) as watch:
            status, ns, _ = await send(http, "DELETE", "/api/v1/namespaces/team")
            assert status == 200 and ns["status"]["phase"] == "Terminating"
            await sim.wait_idle()
            events = await WatchReader(watch).events_until_eof()
    assert [
        (e["type"], bool(e["object"]["metadata"].get("deletionTimestamp"))) for e in events
    ] == [("MODIFIED", True)]
    assert [c["metadata"]["name"] for c in sim.list("configmaps", "team")] == ["held"]
    assert sim.list("pods", "team") == []
    assert sim.get(PODSETS, "ps", "team")["metadata"]["deletionTimestamp"]
    conditions = _conditions(sim, "team")
    assert conditions["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: configmaps. has 1 resource instances, "
        "podsets.example.aioinformer.dev has 1 resource instances",
    )
    assert conditions["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource "
        "instances, kopf.zalando.org/KopfFinalizerMarker in 1 resource instances",
    )
    assert conditions["NamespaceDeletionContentFailure"][0] == "False"
    assert sim.get("namespaces", "team")["spec"]["finalizers"] == ["kubernetes"]
    sim.patch(PODSETS, "ps", {"metadata": {"finalizers": None}}, "team")
    await sim.wait_idle()
    assert not _gone(sim, "team")
    sim.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "team")
    await sim.wait_idle()
    assert _gone(sim, "team")
    sim.create("namespaces", {"metadata": {"name": "team"}})
    assert sim.get("namespaces", "team")["status"] == {"phase": "Active"}


async def test_a_bound_pod_waits_for_its_kubelet(sim: KubeSim) -> None:
    """A pod bound to a node gets its grace period; with no kubelet running it stays (no
    error condition, the pod is accounted for), and the namespace goes once the kubelet
    emulation finishes the pod."""
    sim.add_nodes(1)
    sim.create("namespaces", {"metadata": {"name": "apps"}})
    bound: dict[str, Any] = pod("web")
    bound["spec"] = {**bound["spec"], "nodeName": "node-0"}
    sim.create("pods", bound, "apps")
    sim.delete("namespaces", "apps")
    await sim.wait_idle()
    assert sim.get("pods", "web", "apps")["metadata"]["deletionGracePeriodSeconds"] == 30
    conditions = _conditions(sim, "apps")
    assert (
        conditions["NamespaceContentRemaining"][2]
        == "Some resources are remaining: pods. has 1 resource instances"
    )
    assert conditions["NamespaceDeletionContentFailure"] == (
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    )
    sim.start_cluster(delete_grace_cap=0.0)
    await eventually(lambda: _gone(sim, "apps"), "the namespace to go after its pod")


async def test_kubectl_delete_namespace_waits_for_the_finalizer(tmp_path: Path) -> None:
    """``kubectl delete namespace`` returns once the namespace is gone: it is still running
    while a finalizer holds a ConfigMap inside, and finishes when the finalizer is removed;
    meanwhile kubectl shows it Terminating."""
    async with kubectl_sim(tmp_path) as (sim, kubectl):
        sim.create("namespaces", {"metadata": {"name": "doomed"}})
        sim.create(
            "configmaps",
            {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
            "doomed",
        )
        deleting = asyncio.create_task(kubectl("delete", "namespace", "doomed", "--timeout=30s"))
        await eventually(
            lambda: bool(
                sim.get("configmaps", "held", "doomed")["metadata"].get("deletionTimestamp")
            ),
            "the ConfigMap to be deleted",
        )
        phase = await kubectl.ok("get", "namespace", "doomed", "-o", "jsonpath={.status.phase}")
        assert phase == "Terminating" and not deleting.done()
        sim.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "doomed")
        result = await deleting
        assert result.code == 0, result.err
        assert result.out.strip() == 'namespace "doomed" deleted'
        assert _gone(sim, "doomed")
