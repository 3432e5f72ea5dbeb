"""Server-side apply over HTTP, step by step against the recorded 22a-22d exchanges."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
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


# -- real clients -------------------------------------------------------------------------

KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: c1
        image: {image}
        ports:
        - containerPort: 80
"""


def kubectl(version: str) -> Path:
    path = KUBECTL_DIR / f"kubectl.{version}"
    if not os.access(path, os.X_OK):
        pytest.skip(f"kubectl {version} is not installed at {path}")
    return path


async def run(*argv: str | Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *map(str, argv), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tls_sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as sim:
        yield sim


@pytest.mark.parametrize("version", ["1.28", "1.32", "1.33"])
async def test_kubectl_server_side_apply(tls_sim: KubeSim, version: str, tmp_path: Path) -> None:
    k = kubectl(version)
    cfg = tls_sim.write_kubeconfig(tmp_path / "kubeconfig")
    name = "ssa" + version.replace(".", "")
    base = [k, "--kubeconfig", cfg, "-n", "default", "--validate=false"]
    v1 = tmp_path / "v1.yaml"
    v1.write_text(DEPLOYMENT.format(name=name, replicas=2, image="nginx:1.25"))
    v2 = tmp_path / "v2.yaml"
    v2.write_text(DEPLOYMENT.format(name=name, replicas=3, image="nginx:1.25"))
    rc, out = await run(*base, "apply", "--server-side", "-f", v1)
    assert (rc, out.strip()) == (0, f"deployment.apps/{name} serverside-applied"), out
    rv = tls_sim.get("deployments", name, "default")["metadata"]["resourceVersion"]
    rc, out = await run(*base, "apply", "--server-side", "-f", v1)  # re-apply: no write
    assert rc == 0, out
    assert tls_sim.get("deployments", name, "default")["metadata"]["resourceVersion"] == rv
    rc, out = await run(*base, "apply", "--server-side", "-f", v2, "--field-manager=other")
    assert rc == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in out
    assert tls_sim.get("deployments", name, "default")["metadata"]["resourceVersion"] == rv
    rc, out = await run(
        *base, "apply", "--server-side", "-f", v2, "--field-manager=other", "--force-conflicts"
    )
    assert rc == 0, out
    obj = tls_sim.get("deployments", name, "default")
    assert obj["spec"]["replicas"] == 3
    owners = {
        (e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]
    }
    assert "f:replicas" in owners[("other", "Apply")]["f:spec"]
    assert "f:replicas" not in owners[("kubectl", "Apply")]["f:spec"]


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_client_side_then_server_side_apply(
    tls_sim: KubeSim, version: str, tmp_path: Path
) -> None:
    """The upgrade path: kubectl apply, then kubectl apply --server-side of a changed image:
    no conflict, and client-side ownership is handed over to the kubectl applier."""
    k = kubectl(version)
    cfg = tls_sim.write_kubeconfig(tmp_path / "kubeconfig")
    name = "csa" + version.replace(".", "")
    base = [k, "--kubeconfig", cfg, "-n", "default", "--validate=false"]
    v1 = tmp_path / "v1.yaml"
    v1.write_text(DEPLOYMENT.format(name=name, replicas=2, image="nginx:1.25"))
    v2 = tmp_path / "v2.yaml"
    v2.write_text(DEPLOYMENT.format(name=name, replicas=2, image="nginx:1.26"))
    rc, out = await run(*base, "apply", "-f", v1)
    assert (rc, out.strip()) == (0, f"deployment.apps/{name} created"), out
    managers = [
        e["manager"]
        for e in tls_sim.get("deployments", name, "default")["metadata"]["managedFields"]
    ]
    assert managers == ["kubectl-client-side-apply"]
    rc, out = await run(*base, "apply", "--server-side", "-f", v2)
    assert (rc, out.strip()) == (0, f"deployment.apps/{name} serverside-applied"), out
    obj = tls_sim.get("deployments", name, "default")
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    entries = {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]}
    assert entries == {("kubectl-last-applied", "Apply"), ("kubectl", "Apply")}
    last = json.loads(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"


async def test_official_client_server_side_apply(ssa_sim: KubeSim) -> None:
    """kubernetes (the official client): patch with the apply content type, a conflict as
    ApiException 409, force, and the dynamic client's server_side_apply."""
    from kubernetes import client as kclient
    from kubernetes import dynamic
    from kubernetes.client.rest import ApiException

    conf = kclient.Configuration()
    conf.host = ssa_sim.url
    conf.api_key = {"authorization": f"Bearer {ssa_sim.token}"}
    api = kclient.ApiClient(conf)
    core = kclient.CoreV1Api(api)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "official"},
        "data": {"a": "1"},
    }

    def apply(manager: str, data: dict[str, str], force: bool | None = None) -> Any:
        doc = {**body, "data": data}
        kw: dict[str, Any] = {
            "field_manager": manager,
            "_content_type": "application/apply-patch+yaml",
        }
        if force is not None:
            kw["force"] = force
        return core.patch_namespaced_config_map("official", "rec-ssa-a", doc, **kw)

    try:
        first = await asyncio.to_thread(apply, "py-a", {"a": "1"})
        assert first.data == {"a": "1"}
        assert [(e.manager, e.operation) for e in first.metadata.managed_fields] == [
            ("py-a", "Apply")
        ]
        with pytest.raises(ApiException) as err:
            await asyncio.to_thread(apply, "py-b", {"a": "2"})
        assert err.value.status == 409
        assert json.loads(err.value.body)["message"] == (
            'Apply failed with 1 conflict: conflict with "py-a": .data.a'
        )
        forced = await asyncio.to_thread(apply, "py-b", {"a": "2"}, True)
        assert forced.data == {"a": "2"}

        def dyn() -> Any:
            client = dynamic.DynamicClient(api)
            cms = client.resources.get(api_version="v1", kind="ConfigMap")
            doc = {**body, "data": {"a": "2", "b": "3"}}
            return cms.server_side_apply(body=doc, namespace="rec-ssa-a", field_manager="py-c")

        out = (await asyncio.to_thread(dyn)).to_dict()
        assert out["data"] == {"a": "2", "b": "3"}
        owners = {e["manager"]: e["fieldsV1"] for e in out["metadata"]["managedFields"]}
        assert owners["py-c"] == {"f:data": {"f:a": {}, "f:b": {}}}  # shares a with py-b
        assert owners["py-b"] == {"f:data": {"f:a": {}}}
    finally:
        await asyncio.to_thread(api.close)


async def test_crd_list_types_drive_merges_and_conflicts(
    ssa_sim: KubeSim, recorder: aiohttp.ClientSession
) -> None:
    """A structural CRD schema: a list-map keyed by id merges per item, a set merges by
    value, and the conflict path names the item."""
    item = {"type": "object", "properties": {"id": {"type": "string"}, "v": {"type": "integer"}}}
    spec = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": item,
            },
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        },
    }
    crd = json.loads(json.dumps(PODSET_CRD))
    crd["metadata"]["name"] = "widgets.example.aioinformer.dev"
    crd["spec"]["names"] = {"plural": "widgets", "singular": "widget", "kind": "Widget"}
    crd["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}
    }
    ssa_sim.create("customresourcedefinitions", crd)
    await ssa_sim.wait_served("widgets")
    path = "/apis/example.aioinformer.dev/v1/namespaces/rec-ssa-a/widgets/w"
    hdr = {"Content-Type": "application/apply-patch+yaml"}

    def doc(items: list[dict[str, Any]], tags: list[str]) -> str:
        return json.dumps(
            {
                "apiVersion": "example.aioinformer.dev/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"items": items, "tags": tags},
            }
        )

    async with recorder.patch(
        path, params={"fieldManager": "a"}, data=doc([{"id": "x", "v": 1}], ["t1"]), headers=hdr
    ) as r:
        assert r.status == 201
    async with recorder.patch(
        path, params={"fieldManager": "b"}, data=doc([{"id": "y", "v": 2}], ["t2"]), headers=hdr
    ) as r:
        assert r.status == 200
        body = await r.json()
    assert body["spec"] == {
        "items": [{"id": "x", "v": 1}, {"id": "y", "v": 2}],
        "tags": ["t1", "t2"],
    }
    async with recorder.patch(
        path, params={"fieldManager": "b"}, data=doc([{"id": "x", "v": 9}], []), headers=hdr
    ) as r:
        assert r.status == 409
        status = await r.json()
    assert (
        status["message"]
        == 'Apply failed with 1 conflict: conflict with "a": .spec.items[id="x"].v'
    )
