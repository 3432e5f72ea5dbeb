"""Server-side apply over HTTP, step by step against the recorded 22a-22d exchanges."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from tests.support import transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")
RECORDER_UA = "aioinformer-recorder/0.2"
PODSET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podsets.example.aioinformer.dev"},
    "spec": {
        "group": "example.aioinformer.dev",
        "names": {"plural": "podsets", "singular": "podset", "kind": "PodSet"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                # as on the recorded server: the whole object preserves unknown fields
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
                "subresources": {"status": {}},
            }
        ],
    },
}


def without_times(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [
        {**{k: v for k, v in e.items() if k != "time"}, "has_time": "time" in e}
        for e in entries or []
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ssa_sim() -> AsyncIterator[KubeSim]:
    async with KubeSim() as sim:
        sim.create("namespaces", {"metadata": {"name": "rec-ssa-a"}})
        sim.create("customresourcedefinitions", PODSET_CRD)
        await sim.wait_served("podsets")
        yield sim


@pytest_asyncio.fixture(loop_scope="module")
async def recorder(ssa_sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {ssa_sim.token}", "User-Agent": RECORDER_UA}
    async with aiohttp.ClientSession(base_url=ssa_sim.url, headers=headers) as s:
        yield s


async def send(s: aiohttp.ClientSession, rq: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = rq["body"]
    data = body if isinstance(body, str) or body is None else json.dumps(body)
    ctype = dict(rq["headers"]).get("Content-Type")
    headers = {"Content-Type": ctype} if ctype else {}
    async with s.request(
        rq["method"], rq["path"], params=rq["query"], data=data, headers=headers
    ) as r:
        return r.status, await r.json()


async def replay(s: aiohttp.ClientSession, case: str, stop: str | None = None) -> list[str]:
    """Send every exchange of ``case`` (up to ``stop``) and compare it with the recording:
    status, Status message/reason/details, managedFields (times as present or absent), data
    and spec, and whether the resourceVersion moved. Returns the labels replayed."""
    rec = transcript(case)
    labels = []
    prev: tuple[str, str] | None = None  # (our RV, recorded RV) of the last object answer
    for ex in [rec, *rec.get("more_exchanges", [])]:
        label = ex.get("label", "first request")
        if stop is not None and label.startswith(stop):
            break
        status, got = await send(s, ex["request"])
        want = ex["response"]["body"]
        assert status == ex["response"]["status"], (label, got)
        if want.get("kind") == "Status":
            for k in ("message", "reason", "details", "code"):
                assert got.get(k) == want.get(k), (label, k)
        else:
            gm, wm = got["metadata"], want["metadata"]
            assert without_times(gm.get("managedFields")) == without_times(
                wm.get("managedFields")
            ), label
            assert got.get("data") == want.get("data"), label
            for k in ("replicas", "template"):
                if k in want.get("spec", {}):
                    assert _simple(got["spec"][k]) == _simple(want["spec"][k]), (label, k)
            assert got.get("status") == want.get("status") or ex["request"]["method"] != "PATCH", (
                label
            )
            if prev is not None:
                moved = gm["resourceVersion"] != prev[0]
                assert moved == (wm["resourceVersion"] != prev[1]), (label, "resourceVersion")
            prev = (gm["resourceVersion"], wm["resourceVersion"])
        labels.append(label)
    return labels


def _simple(v: Any) -> Any:
    """Container names and images only (defaulted container fields aside)."""
    if isinstance(v, dict) and "spec" in v and "containers" in v["spec"]:
        return [(c["name"], c.get("image")) for c in v["spec"]["containers"]]
    return v


async def test_configmap_apply_sequence_matches_22a(recorder: aiohttp.ClientSession) -> None:
    labels = await replay(recorder, "22a")
    assert len(labels) == 12  # create, re-apply, no-op, conflict, force, shared, release,
    # Update takes the field, conflict with the Update manager, stale RV, name mismatch, GET


async def test_custom_resource_apply_matches_22b(recorder: aiohttp.ClientSession) -> None:
    assert len(await replay(recorder, "22b")) == 5


async def test_missing_field_manager_and_force_on_merge_patch_match_22c(
    recorder: aiohttp.ClientSession,
) -> None:
    assert len(await replay(recorder, "22c")) == 3


async def test_deployment_containers_are_a_list_map_as_in_22d(
    ssa_sim: KubeSim, recorder: aiohttp.ClientSession
) -> None:
    labels = await replay(recorder, "22d", stop="PUT /scale")
    assert len(labels) == 4
    # the /scale writer (an Update on subresource scale) takes spec.replicas from a
    rt = ssa_sim.resource("deployments")
    ssa_sim.api.patch(
        rt,
        "rec-ssa-a",
        "ssa-dep",
        "application/merge-patch+json",
        {"spec": {"replicas": 5}},
        subresource="scale",
        manager="aioinformer-recorder",
    )
    rec = transcript("22d")
    rest = {ex["label"]: ex for ex in rec["more_exchanges"]}
    conflict = rest["re-apply fieldManager=a with replicas 2 -> conflict with the scale writer"]
    status, body = await send(recorder, conflict["request"])
    assert status == 409
    assert body["message"] == conflict["response"]["body"]["message"]
    assert body["details"] == conflict["response"]["body"]["details"]
    final = rest["GET ssa-dep (final, full managedFields)"]
    status, got = await send(recorder, final["request"])
    assert without_times(got["metadata"]["managedFields"]) == without_times(
        final["response"]["body"]["metadata"]["managedFields"]
    )


async def test_several_conflicts_list_every_field_by_manager(
    ssa_sim: KubeSim, recorder: aiohttp.ClientSession
) -> None:
    path = "/api/v1/namespaces/rec-ssa-a/configmaps/multi"
    hdr = {"Content-Type": "application/apply-patch+yaml"}
    first = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: multi}\ndata: {a: '1', b: '1'}\n"
    async with recorder.patch(path, params={"fieldManager": "x"}, data=first, headers=hdr) as r:
        assert r.status == 201
    async with recorder.patch(
        path,
        data=json.dumps({"data": {"c": "1"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    ) as r:
        assert r.status == 200
    second = (
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: multi}, data: {a: '2', b: '2', c: '2'}}"
    )
    async with recorder.patch(path, params={"fieldManager": "y"}, data=second, headers=hdr) as r:
        assert r.status == 409
        body = await r.json()
    # managers in the order of their identifiers ({"manager":..,"operation":..} as JSON)
    assert body["message"] == (
        "Apply failed with 3 conflicts: "
        'conflicts with "aioinformer-recorder" using v1:\n- .data.c\n'
        'conflicts with "x":\n- .data.a\n- .data.b'
    )
    assert [c["field"] for c in body["details"]["causes"]] == [".data.c", ".data.a", ".data.b"]


async def test_kubectl_takes_over_the_client_side_apply_fields(
    recorder: aiohttp.ClientSession,
) -> None:
    """A server-side apply by manager "kubectl" may take the fields listed in the
    last-applied annotation (the upgrade from client-side apply) and keeps it current;
    another manager gets the conflict."""
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa"}, "data": {"k": "1"}}
    last = json.dumps(cfg)
    created = {
        **cfg,
        "metadata": {
            "name": "csa",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last},
        },
    }
    async with recorder.post(
        "/api/v1/namespaces/rec-ssa-a/configmaps",
        params={"fieldManager": "kubectl-client-side-apply"},
        data=json.dumps(created),
        headers={"Content-Type": "application/json"},
    ) as r:
        assert r.status == 201
    new = json.dumps({**cfg, "data": {"k": "2"}})
    path = "/api/v1/namespaces/rec-ssa-a/configmaps/csa"
    hdr = {"Content-Type": "application/apply-patch+yaml"}
    async with recorder.patch(path, params={"fieldManager": "other"}, data=new, headers=hdr) as r:
        assert r.status == 409
    async with recorder.patch(path, params={"fieldManager": "kubectl"}, data=new, headers=hdr) as r:
        assert r.status == 200, await r.text()
        body = await r.json()
    assert body["data"] == {"k": "2"}
    annotation = body["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(annotation)["data"] == {"k": "2"}
    owners = {e["manager"]: e["fieldsV1"] for e in body["metadata"]["managedFields"]}
    assert owners["kubectl"]["f:data"] == {"f:k": {}}
    assert "f:k" not in owners["kubectl-client-side-apply"]["f:data"]


async def test_bad_apply_bodies_get_400_not_500(recorder: aiohttp.ClientSession) -> None:
    path = "/api/v1/namespaces/rec-ssa-a/configmaps/bad"
    hdr = {"Content-Type": "application/apply-patch+yaml"}
    for body, text in [
        ("a: [b", "error decoding YAML"),
        ("- 1\n- 2\n", "the object provided is unrecognized"),
        ("{apiVersion: v1, kind: Secret, metadata: {name: bad}}", "kind Secret does not match"),
        ("{apiVersion: v2, kind: ConfigMap, metadata: {name: bad}}", "the API version in the data"),
    ]:
        async with recorder.patch(path, params={"fieldManager": "m"}, data=body, headers=hdr) as r:
            assert r.status == 400, body
            assert text in (await r.json())["message"]
