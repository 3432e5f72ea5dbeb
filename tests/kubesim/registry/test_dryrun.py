"""dryRun=All over HTTP against 17a-dryrun-configmap and 17b-dryrun-pod: every write verb
answers as a real write would and stores nothing (no new RV, no watch event)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aioinformer.testing import KubeSim
from kubesim.errors import KubeSimApiError
from kubesim.registry import dryrun
from kubesim.registry.dryrun import parse_dry_run
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.replay import MERGE, masked, recorder, send
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript


def _writes(case: str) -> dict[str, dict[str, object]]:
    return {w["label"]: w for w in transcript(case)["writes"]}


async def _setup(sim: KubeSim) -> None:
    """17a/17b's fixtures, made as the recorder made them: rec-dry-a with cm1, an
    unscheduled p1 and p2 bound to a node."""
    async with recorder(sim) as http:
        for exchange in transcript("17a")["setup"]:
            req = exchange["request"]
            status, _, _ = await send(http, req["method"], req["path"], req["body"])
            assert status == 201


def test_parse_dry_run() -> None:
    assert parse_dry_run([], "CreateOptions") is False
    assert parse_dry_run(None, "DeleteOptions") is False
    assert parse_dry_run(["All"], "UpdateOptions") is True
    with pytest.raises(KubeSimApiError) as err:
        parse_dry_run(["All", "foo"], "PatchOptions")
    assert err.value.code == 422
    assert err.value.body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"All", "foo"}: supported values: "All"'
    )


async def test_dry_run_configmap_writes_store_nothing(sim: KubeSim) -> None:
    """17a: POST (201, uid, no RV), duplicate POST (409), PUT and merge PATCH (new content,
    old RV), DELETE by query and by DeleteOptions body (the Status), DELETE of a missing
    object (404), dryRun=foo (422): bodies as recorded; then the ConfigMap is unchanged,
    cm2 was never created, the global RV did not move and the watch saw nothing."""
    await _setup(sim)
    writes = _writes("17a")
    base = "/api/v1/namespaces/rec-dry-a/configmaps"
    cm1 = sim.get("configmaps", "cm1", "rec-dry-a")
    rv_before = sim.resource_version
    async with recorder(sim) as http:
        params = watch_params(resourceVersion=str(rv_before), timeoutSeconds="1")
        async with http.get(base, params=params) as watch:
            answers = {}
            for label, write in writes.items():
                req = write["request"]
                body = req["body"]
                if req["method"] == "PUT":
                    body = {
                        **body,
                        "metadata": {
                            **body["metadata"],
                            "resourceVersion": cm1["metadata"]["resourceVersion"],
                        },
                    }
                headers = MERGE if req["method"] == "PATCH" else None
                answers[label] = await send(
                    http, req["method"], req["path"], body, query=req["query"], headers=headers
                )
            events = await WatchReader(watch).events_until_eof()
        for label, write in writes.items():
            status, body, raw = answers[label]
            want = write["response"]
            assert status == want["status"], label
            assert masked(body) == masked(want["body"]), label
            if status >= 400:  # an error body is the same bytes, newline included
                assert len(raw) == want["body_raw_len"], label
        created = answers["POST cm2 ?dryRun=All (new name)"][1]
        assert "resourceVersion" not in created["metadata"] and created["metadata"]["uid"]
        for label in (
            "PUT cm1 ?dryRun=All (data.k=v2-put, with current RV)",
            "PATCH cm1 ?dryRun=All merge-patch data.k=v3-patch",
        ):
            assert (
                answers[label][1]["metadata"]["resourceVersion"]
                == cm1["metadata"]["resourceVersion"]
            )
        for label in ("DELETE cm1 ?dryRun=All", "DELETE cm1 with body DeleteOptions{dryRun:[All]}"):
            assert answers[label][1]["details"]["uid"] == cm1["metadata"]["uid"]
        assert events == []
        assert sim.resource_version == rv_before
        assert sim.get("configmaps", "cm1", "rec-dry-a") == cm1
        status, _, _ = await send(http, "GET", f"{base}/cm2")
        assert status == 404


async def test_dry_run_pod_writes_store_nothing(sim: KubeSim) -> None:
    """17b: a dry-run pod create is fully defaulted without an RV; PUT and PATCH keep the old
    RV; a dry-run DELETE answers what a real one would (unscheduled: deletionTimestamp and
    grace 0; bound: grace 30) with the old RV, and both pods stay as they were."""
    await _setup(sim)
    writes = _writes("17b")
    base = "/api/v1/namespaces/rec-dry-a/pods"
    before = {n: sim.get("pods", n, "rec-dry-a") for n in ("p1", "p2")}
    rv_before = sim.resource_version
    async with recorder(sim) as http:
        params = watch_params(resourceVersion=str(rv_before), timeoutSeconds="1")
        async with http.get(base, params=params) as watch:
            answers = {}
            for label, write in writes.items():
                req = write["request"]
                body = req["body"]
                if req["method"] == "PUT":
                    body = {
                        **before["p1"],
                        "metadata": {
                            **before["p1"]["metadata"],
                            "labels": {"app": "web", "dry": "put"},
                        },
                    }
                headers = MERGE if req["method"] == "PATCH" else None
                answers[label] = await send(
                    http, req["method"], req["path"], body, query=req["query"], headers=headers
                )
            events = await WatchReader(watch).events_until_eof()
    for label, write in writes.items():
        status, body, _ = answers[label]
        want = write["response"]
        assert status == want["status"], label
        assert masked(body) == masked(want["body"]), label
        old = before.get(want["body"]["metadata"]["name"])
        if old is None:
            assert "resourceVersion" not in body["metadata"], label
        else:
            assert body["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"], label
    deleted = answers["DELETE p2 ?dryRun=All (scheduled: graceful 30 s)"][1]["metadata"]
    assert deleted["deletionGracePeriodSeconds"] == 30
    assert events == []
    assert sim.resource_version == rv_before
    assert {n: sim.get("pods", n, "rec-dry-a") for n in ("p1", "p2")} == before


async def test_dry_run_reaches_status_and_deletecollection(sim: KubeSim) -> None:
    """The other write paths: a status patch and a deletecollection under dryRun=All answer
    and store nothing; an invalid value is refused with the verb's options kind."""
    await _setup(sim)
    rv_before = sim.resource_version
    async with recorder(sim) as http:
        status, body, _ = await send(
            http,
            "PATCH",
            "/api/v1/namespaces/rec-dry-a/pods/p1/status",
            {"status": {"phase": "Running"}},
            query={"dryRun": "All"},
            headers=MERGE,
        )
        assert status == 200 and body["status"]["phase"] == "Running"
        status, body, _ = await send(
            http, "DELETE", "/api/v1/namespaces/rec-dry-a/configmaps", query={"dryRun": "All"}
        )
        assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["cm1"]
        status, body, _ = await send(
            http,
            "PUT",
            "/api/v1/namespaces/rec-dry-a/configmaps/cm1",
            {"metadata": {"name": "cm1"}, "data": {}},
            query={"dryRun": "x"},
        )
        assert status == 422 and body["details"]["kind"] == "UpdateOptions"
        status, body, _ = await send(
            http, "DELETE", "/api/v1/namespaces/rec-dry-a/configmaps/cm1", {"dryRun": ["Nope"]}
        )
        assert status == 422 and body["details"]["kind"] == "DeleteOptions"
    assert sim.resource_version == rv_before
    assert sim.get("pods", "p1", "rec-dry-a")["status"]["phase"] == "Pending"
    assert [c["metadata"]["name"] for c in sim.list("configmaps", "rec-dry-a")] == ["cm1"]
    assert dryrun.is_dry_run() is False


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: c
        image: busybox:{tag}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: {mode}
"""


async def test_kubectl_apply_dry_run_and_diff_change_nothing(tmp_path: Path) -> None:
    """``kubectl apply --dry-run=server`` reports the objects configured (server dry run) and
    ``kubectl diff`` shows the change (exit 1), yet neither moves the ConfigMap's data, the
    Deployment's generation or any resourceVersion; a plain apply then does. (kubectl 1.29+
    for diff: kubectl 1.28's diff downloads /openapi/v2 first; ``--validate=false`` because
    client-side validation does too.)"""
    async with kubectl_sim(tmp_path, min_minor=29) as (sim, kubectl):
        await kubectl.ok(
            "apply",
            "--validate=false",
            "-f",
            "-",
            stdin=DEPLOYMENT.format(replicas=1, tag="1.36", mode="a"),
        )
        before = (
            sim.get("deployments", "web", "default"),
            sim.get("configmaps", "settings", "default"),
        )
        rv = sim.resource_version
        changed = DEPLOYMENT.format(replicas=3, tag="1.37", mode="b")
        out = await kubectl.ok(
            "apply", "--validate=false", "--dry-run=server", "-f", "-", stdin=changed
        )
        assert out.splitlines() == [
            "deployment.apps/web configured (server dry run)",
            "configmap/settings configured (server dry run)",
        ]
        diff = await kubectl("diff", "-f", "-", stdin=changed)
        assert diff.code == 1, diff.err
        assert "-  replicas: 1" in diff.out and "+  replicas: 3" in diff.out
        assert "-  mode: a" in diff.out and "+  mode: b" in diff.out
        after = (
            sim.get("deployments", "web", "default"),
            sim.get("configmaps", "settings", "default"),
        )
        assert after == before and sim.resource_version == rv
        await kubectl.ok("apply", "--validate=false", "-f", "-", stdin=changed)
        deployed = sim.get("deployments", "web", "default")
        assert (deployed["spec"]["replicas"], deployed["metadata"]["generation"]) == (3, 2)
        assert sim.get("configmaps", "settings", "default")["data"] == {"mode": "b"}


async def test_dry_run_server_side_apply_stores_nothing(sim: KubeSim) -> None:
    """Apply goes through the same commit points: a dry-run apply that would create answers
    201 without an RV, one that would change answers the change with the stored RV and
    managedFields it would record; nothing is stored either time."""
    apply = {"Content-Type": "application/apply-patch+yaml"}
    query = {"fieldManager": "tester", "dryRun": "All"}
    path = "/api/v1/namespaces/default/configmaps/applied"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"k": "1"},
    }
    async with recorder(sim) as http:
        status, created, _ = await send(http, "PATCH", path, body, query=query, headers=apply)
        assert status == 201 and "resourceVersion" not in created["metadata"]
        assert sim.list("configmaps", "default") == []
        stored = sim.create(
            "configmaps", {"metadata": {"name": "applied"}, "data": {"k": "0"}}, "default"
        )
        rv = sim.resource_version
        forced = {**query, "force": "true"}  # kubesim, the creator, owns data.k
        status, changed, _ = await send(http, "PATCH", path, body, query=forced, headers=apply)
        assert status == 200 and changed["data"] == {"k": "1"}
        assert changed["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
        assert "tester" in [e["manager"] for e in changed["metadata"]["managedFields"]]
    assert sim.get("configmaps", "applied", "default") == stored and sim.resource_version == rv
