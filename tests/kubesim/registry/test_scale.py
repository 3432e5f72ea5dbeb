"""The scale subresource (kubesim.registry.scale) replayed from 23a, 23b and 23c, with the official client
and kubectl."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aioinformer.testing import KubeSim
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.replay import Replayer, masked, recorder
from tests.support import transcript


async def _replay(sim: KubeSim, case: str, *, loose: tuple[str, ...] = ()) -> list[Any]:
    """Replay ``case`` (setup, main exchange, more exchanges) and compare every answer; for
    the labels in ``loose`` managedFields are not compared."""
    rec = transcript(case)
    answers = []
    async with recorder(sim) as http:
        replayer = Replayer(http)
        for exchange in rec.get("setup", []):
            status, _, _ = await replayer.send(exchange)
            assert status in (200, 201), exchange["label"]
            if exchange["request"]["path"].endswith("/customresourcedefinitions"):
                await sim.wait_served("rec.aioinformer.dev/v1/recpodsets")
        for exchange in [rec, *rec["more_exchanges"]]:
            label = exchange.get("label", "main")
            if label in loose:
                status, got, _ = await replayer.send(exchange)
                want = masked(replayer.ours(exchange["response"]["body"]))
                mine = masked(got)
                mine["metadata"].pop("managedFields"), want["metadata"].pop("managedFields")
                assert (status, mine) == (exchange["response"]["status"], want), label
            else:
                got = await replayer.check(exchange)
            answers.append(got)
    return answers


async def test_deployment_scale_as_recorded(sim: KubeSim) -> None:
    """23a: GET; PUT with the current RV, a stale RV (the Deployment's 409), no RV; merge
    and strategic merge patches; -1 (Scale.autoscaling 422); a name mismatch (400); the
    Deployment afterwards (replicas 6, generation 5, the scale manager); a kind without
    scale (404)."""
    answers = await _replay(sim, "23a")
    rvs = [a["metadata"]["resourceVersion"] for a in answers if a.get("kind") == "Scale"]
    assert len(set(rvs)) == len(rvs)  # each write moved the parent's RV
    assert answers[-2]["metadata"]["resourceVersion"] == rvs[-1]
    # the scale writer owns spec.replicas (an entry without time), taken from the creator
    recorded = next(
        e for e in transcript("23a")["more_exchanges"] if e["label"].startswith("GET deployment")
    )
    want = recorded["response"]["body"]["metadata"]["managedFields"]
    got = answers[-2]["metadata"]["managedFields"]
    assert [{k: v for k, v in e.items() if k != "time"} for e in got] == [
        {k: v for k, v in e.items() if k != "time"} for e in want
    ]
    assert ["time" in e for e in got] == ["time" in e for e in want] == [False, True]


async def test_statefulset_scale_as_recorded(sim: KubeSim) -> None:
    """23b: GET, PUT, merge patch, and the StatefulSet afterwards."""
    sim.create("namespaces", {"metadata": {"name": "rec-scale-a"}})
    await _replay(sim, "23b")


async def test_custom_resource_scale_as_recorded(sim: KubeSim) -> None:
    """23c: a CRD with a scale subresource: the selector appears once status has it; PUT,
    stale PUT (409), merge patch; strategic merge (415); -1 gives the schema's and the scale
    check's causes; a CR kind without scale, or an unknown subresource, is the CR's 404."""
    sim.create("namespaces", {"metadata": {"name": "rec-scale-a"}})
    sim.create("namespaces", {"metadata": {"name": "rec-ssa-a"}})
    sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
    await sim.wait_served("example.aioinformer.dev/v1/podsets")
    body = {
        "apiVersion": "example.aioinformer.dev/v1",
        "kind": "PodSet",
        "metadata": {"name": "ssa-ps"},
    }
    sim.create("example.aioinformer.dev/v1/podsets", body, "rec-ssa-a")
    await _replay(sim, "23c", loose=("GET recpodset rps-1 after",))
    async with recorder(sim) as http:
        async with http.get("/apis/rec.aioinformer.dev/v1") as r:
            resources = {e["name"]: e for e in (await r.json())["resources"]}
    assert resources["recpodsets/scale"]["group"] == "autoscaling"
    assert resources["recpodsets/scale"]["verbs"] == ["get", "patch", "update"]


async def test_scale_is_its_own_rbac_resource(sim: KubeSim) -> None:
    """deployments/scale is authorized apart from deployments: a user who may patch the
    scale but not the deployment scales it and nothing else."""
    sim.create("namespaces", {"metadata": {"name": "rec-scale-a"}})
    await _replay(sim, "23b")  # any parent will do: the StatefulSet
    token = sim.add_user(
        "autoscaler", rules=[("patch", "apps", "*/scale"), ("get", "apps", "statefulsets/scale")]
    )
    merge = {"Content-Type": "application/merge-patch+json"}
    base = "/apis/apps/v1/namespaces/rec-scale-a/statefulsets/sc-sts"
    async with recorder(sim, token) as http:
        async with http.patch(f"{base}/scale", data=b'{"spec":{"replicas":7}}', headers=merge) as r:
            assert r.status == 200 and (await r.json())["spec"]["replicas"] == 7
        async with http.patch(base, data=b'{"spec":{"replicas":8}}', headers=merge) as r:
            assert r.status == 403


async def test_official_client_reads_and_patches_deployment_scale(sim: KubeSim) -> None:
    """``read_namespaced_deployment_scale`` / ``patch_namespaced_deployment_scale`` of the
    official client give V1Scale objects; the patch moves the Deployment."""
    pytest.importorskip("kubernetes")
    from kubernetes import client

    labels = {"app": "web"}
    sim.create(
        "deployments",
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
    cfg = client.Configuration()
    cfg.host = sim.url
    cfg.api_key = {"authorization": f"Bearer {sim.token}"}

    def run() -> tuple[Any, Any]:
        with client.ApiClient(cfg) as api:
            apps = client.AppsV1Api(api)
            before = apps.read_namespaced_deployment_scale("web", "default")
            after = apps.patch_namespaced_deployment_scale(
                "web", "default", {"spec": {"replicas": 4}}
            )
            return before, after

    before, after = await asyncio.to_thread(run)
    assert isinstance(before, client.V1Scale) and before.spec.replicas == 2
    assert before.status.selector == "app=web" and before.status.replicas == 0
    assert isinstance(after, client.V1Scale) and after.spec.replicas == 4
    deployed = sim.get("deployments", "web", "default")
    assert (deployed["spec"]["replicas"], deployed["metadata"]["generation"]) == (4, 2)


async def test_kubectl_scale(tmp_path: Path) -> None:
    """``kubectl scale`` finds deployments/scale in discovery and scales through it."""
    async with kubectl_sim(tmp_path) as (sim, kubectl):
        labels = {"app": "web"}
        sim.create(
            "deployments",
            {
                "metadata": {"name": "web"},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                },
            },
        )
        out = await kubectl.ok("scale", "deployment/web", "--replicas=3")
        assert out.strip() == "deployment.apps/web scaled"
        assert sim.get("deployments", "web", "default")["spec"]["replicas"] == 3
        out = await kubectl.ok("scale", "deployment/web", "--current-replicas=3", "--replicas=1")
        assert sim.get("deployments", "web", "default")["spec"]["replicas"] == 1
        failed = await kubectl("scale", "deployment/web", "--current-replicas=5", "--replicas=2")
        assert failed.code != 0 and "Expected replicas to be 5, was 1" in failed.err


async def test_malformed_scale_bodies_are_400(sim: KubeSim) -> None:
    """A Scale whose spec, metadata or replicas has the wrong JSON type is the decoder's 400
    (never a 500), and the Deployment is not touched."""
    labels = {"app": "w"}
    sim.create(
        "deployments",
        {
            "metadata": {"name": "w"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
    before = sim.get("deployments", "w", "default")
    path = "/apis/apps/v1/namespaces/default/deployments/w/scale"
    async with recorder(sim) as http:
        for body, field in (
            ({"spec": "x"}, "Scale.spec of type v1.ScaleSpec"),
            ({"metadata": [], "spec": {"replicas": 1}}, "Scale.metadata of type v1.ObjectMeta"),
            ({"spec": {"replicas": "3"}}, "ScaleSpec.spec.replicas of type int32"),
            ({"spec": {"replicas": 1.5}}, "ScaleSpec.spec.replicas of type int32"),
        ):
            async with http.put(path, json=body) as r:
                answer = await r.json()
            assert r.status == 400 and answer["reason"] == "BadRequest", body
            assert answer["message"].endswith(f"into Go struct field {field}"), answer["message"]
    assert sim.get("deployments", "w", "default") == before
