"""DELETE semantics over HTTP, replayed from 18a, 18b, 20a, 20b and 21a (a KubeSim without
its controllers, as the recordings had none), plus the official client's typed deletes."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from kubesim.errors import KubeSimApiError
from kubesim.registry.deletion import DeleteOptions, gc_finalizers
from tests.kubesim.replay import Replayer, masked, recorded_podset_crd, recorder
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript

PODSET_CRD = "example.aioinformer.dev/v1/podsets"


def _ips_masked(doc: Any) -> Any:
    """A Service's allocated addresses differ between two servers: mask them."""
    out = copy.deepcopy(doc)
    spec = out.get("spec") if isinstance(out, dict) else None
    if isinstance(spec, dict) and "clusterIP" in spec:
        spec["clusterIP"] = "*"
        spec["clusterIPs"] = ["*"]
    return out


@pytest_asyncio.fixture
async def apiserver() -> AsyncIterator[KubeSim]:
    """KubeSim serving its API alone: no namespace controller, no garbage collector."""
    async with KubeSim(controllers=False) as sim:
        sim.create("apiextensions.k8s.io/v1/customresourcedefinitions", recorded_podset_crd())
        await sim.wait_served(PODSET_CRD)
        yield sim


async def _replay_all(sim: KubeSim, case: str, *, skip: tuple[str, ...] = ()) -> Replayer:
    rec = transcript(case)
    async with recorder(sim) as http:
        replayer = Replayer(http)
        for exchange in rec.get("setup", []):
            status, _, _ = await replayer.send(exchange)
            assert status == 201, exchange["label"]
        for exchange in [rec, *rec.get("more_exchanges", [])]:
            if exchange.get("label", "") in skip:
                continue
            req, want = exchange["request"], exchange["response"]
            status, got, raw = await replayer.send(exchange)
            label = exchange.get("label", req["path"])
            assert status == want["status"], (label, got)
            assert _ips_masked(masked(got)) == _ips_masked(masked(replayer.ours(want["body"]))), (
                label
            )
            if want["body"].get("kind") == "Status":  # uid-free or same-length bytes
                assert len(raw) == want["body_raw_len"], label
    return replayer


def test_gc_finalizers_follow_the_options() -> None:
    """deletionFinalizersForGarbageCollection: the option wins over the finalizers present,
    orphanDependents=false means Background, other finalizers are kept in place."""
    fg = DeleteOptions(propagation="Foreground")
    assert gc_finalizers(["a"], fg) == (True, ["a", "foregroundDeletion"])
    assert gc_finalizers(["foregroundDeletion"], DeleteOptions(propagation="Orphan")) == (
        True,
        ["orphan"],
    )
    assert gc_finalizers(["orphan", "a"], DeleteOptions(propagation="Background")) == (True, ["a"])
    assert gc_finalizers(["orphan"], DeleteOptions()) == (False, ["orphan"])
    assert gc_finalizers([], DeleteOptions(orphan_dependents=True)) == (True, ["orphan"])
    assert gc_finalizers(["orphan"], DeleteOptions(orphan_dependents=False)) == (True, [])


def test_delete_options_validation() -> None:
    """ValidateDeleteOptions: both options set, an unknown policy (the recorded texts)."""
    with pytest.raises(KubeSimApiError) as err:
        DeleteOptions.from_mapping({"propagationPolicy": "Foreground", "orphanDependents": True})
    want = next(w for w in transcript("20a")["writes"] if "both set" in w["label"])["response"]
    assert (err.value.code, err.value.body) == (422, want["body"])
    with pytest.raises(KubeSimApiError) as err:
        DeleteOptions.from_mapping({"propagationPolicy": "Sideways"})
    assert err.value.body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'
    )


async def test_delete_answers_per_kind_as_recorded(apiserver: KubeSim) -> None:
    """18a: ConfigMap, Secret, Deployment and CR answer a Status with the uid; Service and
    ServiceAccount the object; a pending finalizer the object with deletionTimestamp (a CR
    also with generation + 1); releasing it answers the pre-deletion RV."""
    await _replay_all(apiserver, "18a")
    assert apiserver.list("configmaps", "rec-del-b") == []


async def test_pod_delete_answers_as_recorded(apiserver: KubeSim) -> None:
    """18b: an unscheduled pod is deleted at once (the object, deletion RV); a bound pod is
    graceful (30 s) and stays, a repeat changes nothing, gracePeriodSeconds=0 removes it."""
    rec = transcript("18a")
    async with recorder(apiserver) as http:
        replayer = Replayer(http)
        for exchange in rec["setup"]:
            await replayer.send(exchange)
    await _replay_all(apiserver, "18b")
    assert apiserver.list("pods", "rec-del-b") == []


async def test_propagation_policy_as_recorded(apiserver: KubeSim) -> None:
    """20a with both watches: Foreground/Orphan add their finalizer (generation + 1,
    deletionTimestamp, grace 0), Background and orphanDependents=false delete at once, a
    policy switch rewrites the finalizer, Background on an orphaning owner deletes it, both
    options set is 422; the watch events are the recorded ones, and the dependents' watch
    sees nothing (no garbage collector here)."""
    rec = transcript("20a")
    async with recorder(apiserver) as http:
        replayer = Replayer(http)
        for exchange in rec["setup"]:
            assert (await replayer.send(exchange))[0] == 201
        rv = str(apiserver.resource_version)
        params = watch_params(resourceVersion=rv, timeoutSeconds="1")
        async with (
            http.get("/apis/apps/v1/namespaces/rec-prop-a/deployments", params=params) as owners,
            http.get("/api/v1/namespaces/rec-prop-a/configmaps", params=params) as dependents,
        ):
            for write in rec["writes"]:
                await replayer.check(write)
            owner_events = await WatchReader(owners).events_until_eof()
            dependent_events = await WatchReader(dependents).events_until_eof()
    want = [
        (
            e["line"]["type"],
            e["line"]["object"]["metadata"]["name"],
            e["line"]["object"]["metadata"].get("finalizers"),
        )
        for e in rec["response"]["events"]
        if e["line"]["type"] != "BOOKMARK"
    ]
    got = [
        (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"].get("finalizers"))
        for e in owner_events
    ]
    assert got == want
    assert dependent_events == []


async def test_202_only_for_orphan_dependents_false(apiserver: KubeSim) -> None:
    """20b: 202 for orphanDependents=false on an object kept by a finalizer or a grace
    period, 200 otherwise (orphanDependents=true adds the orphan finalizer)."""
    apiserver.create("namespaces", {"metadata": {"name": "rec-prop-a"}})
    await _replay_all(apiserver, "20b")


async def test_first_finalizer_delete_bumps_generation(apiserver: KubeSim) -> None:
    """21a: for a CR and a Deployment the first DELETE of a finalizer-held object bumps
    metadata.generation, a repeat does not; a ConfigMap has none to bump."""
    await _replay_all(apiserver, "21a")


async def test_official_client_typed_deletes(apiserver: KubeSim) -> None:
    """The official ``kubernetes`` client deserializes each typed delete: the object for a
    Service, ServiceAccount and Pod, a V1Status for a ConfigMap and a Deployment."""
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes import client

    apiserver.create("services", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})
    apiserver.create("serviceaccounts", {"metadata": {"name": "sa"}})
    apiserver.create("configmaps", {"metadata": {"name": "cm"}})
    apiserver.create(
        "pods", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    cfg = client.Configuration()
    cfg.host = apiserver.url
    cfg.api_key = {"authorization": f"Bearer {apiserver.token}"}

    def run() -> list[Any]:
        with client.ApiClient(cfg) as api:
            core = client.CoreV1Api(api)
            return [
                core.delete_namespaced_service("svc", "default"),
                core.delete_namespaced_service_account("sa", "default"),
                core.delete_namespaced_pod("p", "default"),
                core.delete_namespaced_config_map("cm", "default"),
            ]

    svc, sa, pod, cm = await asyncio.to_thread(run)
    assert kubernetes is not None
    assert isinstance(svc, client.V1Service) and svc.metadata.name == "svc"
    assert isinstance(sa, client.V1ServiceAccount) and sa.metadata.name == "sa"
    assert isinstance(pod, client.V1Pod) and pod.metadata.deletion_timestamp is not None
    assert cm["kind"] == "Status" and cm["status"] == "Success"  # typed "object" since v36
    assert cm["details"]["kind"] == "configmaps" and cm["details"]["name"] == "cm"


async def test_a_pod_in_its_grace_period_survives_status_writes(apiserver: KubeSim) -> None:
    """The kubelet keeps writing the status of a pod it is stopping: such a write does not
    delete it (only a write that drops the last finalizer of an object with no grace
    period running does)."""
    body = {
        "metadata": {"name": "web"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]},
    }
    apiserver.create("pods", body, "default")
    apiserver.delete("pods", "web", "default")
    apiserver.patch(
        "pods", "web", {"status": {"phase": "Running"}}, "default", subresource="status"
    )
    apiserver.patch("pods", "web", {"metadata": {"labels": {"a": "b"}}}, "default")
    pod = apiserver.get("pods", "web", "default")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    assert pod["status"]["phase"] == "Running"
    apiserver.delete("pods", "web", "default", gracePeriodSeconds=0)
    assert apiserver.list("pods", "default") == []
