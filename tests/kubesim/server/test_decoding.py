"""Decoding written objects as kube-apiserver does (25a, 25b), fieldValidation, pruning of
unknown fields, Go's type errors; the official client still lists what was written, and
kubectl sees the server's strict validation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from tests.kubesim.kubectl import Kubectl, kubectl_binary
from tests.kubesim.replay import (
    bad_input_namespace,
    duplicated,
    exchanges,
    recorded_warnings,
    send_exchange,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "rec-bad-a"
CM = f"/api/v1/namespaces/{NS}/configmaps"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as s:
        await bad_input_namespace(s)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    import ssl

    assert sim.ca_file is not None
    conn = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(sim.ca_file)))
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers, connector=conn) as s:
        yield s


async def test_decode_errors_as_recorded(http: aiohttp.ClientSession) -> None:
    """25a: a string and a float for an int32, truncated JSON, the wrong kind."""
    for ex in exchanges("25a-bad-body-decode-errors"):
        got = await send_exchange(http, ex)
        assert (got.status, got.body) == (ex["response"]["status"], ex["response"]["body"]), ex.get(
            "label"
        )


async def test_field_validation_as_recorded(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    """25b: Strict (400 listing every unknown/duplicate field in document order), Warn and
    no parameter (201 + one Warning per field, the field pruned), Ignore (silent), case
    matters (422), nested paths, a CR's unknown field, a YAML body."""
    for ex in exchanges("25b-field-validation"):
        label = ex.get("label", "Strict")
        data = duplicated(ex) if label.startswith("duplicate field") else None
        got = await send_exchange(http, ex, data)
        want = ex["response"]
        assert got.status == want["status"], label
        assert got.warnings == recorded_warnings(ex), label
        if want["body"]["kind"] == "Status":
            assert got.body == want["body"], label
            continue
        name = got.body["metadata"]["name"]
        assert name == want["body"]["metadata"]["name"]
        resource = {"ConfigMap": "configmaps", "Deployment": "deployments"}.get(
            got.body["kind"], "rec.aioinformer.dev/v1/recpodsets"
        )
        for answer in (got.body, sim.get(resource, name, NS)):
            # what decoding dropped is gone, what the recording kept is there
            assert "foo" not in answer and answer.get("data") == want["body"].get("data")
            spec = answer.get("spec", {})
            assert "replicaz" not in spec and "unknownField" not in spec
            if got.body["kind"] == "Deployment":
                assert spec["replicas"] == want["body"]["spec"]["replicas"]
                container = spec["template"]["spec"]["containers"][0]
                assert "imagee" not in container and container["image"] == "busybox:1.36"
            elif got.body["kind"] == "RecPodSet":
                assert spec == want["body"]["spec"]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            CM,
            {"metadata": {"name": "num"}, "data": {"k": 1}},
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string',
        ),
        (
            DEPLOY,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "t"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                },
                "status": {
                    "conditions": [
                        {"type": "Available", "status": "True", "lastTransitionTime": "not-a-time"}
                    ]
                },
            },
            'Deployment in version "v1" cannot be handled as a Deployment: parsing time "not-a-time" as "2006-01-02T15:04:05Z07:00": cannot parse "not-a-time" as "2006"',
        ),
        (
            DEPLOY,
            {
                "kind": "Deployment",
                "apiVersion": "apps/v1",
                "metadata": {"name": "t"},
                "spec": {"template": {"spec": {"containers": {"name": "c"}}}},
            },
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container',
        ),
        (
            DEPLOY,
            {
                "kind": "Deployment",
                "apiVersion": "apps/v1",
                "metadata": {"name": "t"},
                "spec": "all of it",
            },
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec',
        ),
        (
            DEPLOY,
            {
                "kind": "Deployment",
                "apiVersion": "apps/v1",
                "metadata": {"name": "t"},
                "spec": {"replicas": 3000000000},
            },
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32',
        ),
        (
            DEPLOY,
            {
                "kind": "Deployment",
                "apiVersion": "apps/v1",
                "metadata": {"name": "t"},
                "spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}},
            },
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal bool into Go value of type int32',
        ),
        (
            f"/api/v1/namespaces/{NS}/pods",
            {
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}
                    ]
                },
            },
            "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            f"/api/v1/namespaces/{NS}/secrets",
            {"metadata": {"name": "s"}, "data": {"k": "not base64!"}},
            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
        ),
        (
            f"/api/v1/namespaces/{NS}/events",
            {
                "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p"},
                "eventTime": "2024-01-01T00:00:00Z",
            },
            'Event in version "v1" cannot be handled as a Event: parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
        ),
    ],
)
async def test_type_errors_are_gos(
    http: aiohttp.ClientSession, path: str, body: dict[str, Any], message: str
) -> None:
    async with http.post(path, json=body) as r:
        got = await r.json()
    assert r.status == 400
    assert got == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


async def test_decoding_normalises_what_go_would(http: aiohttp.ClientSession) -> None:
    """Times are written back in UTC seconds (MicroTime in microseconds), a null label
    value is "", an unknown field whose name differs only in case is unknown."""
    event = {  # valid: an Event with eventTime names who reported it and what it did
        "metadata": {"name": "when", "labels": {"empty": None}},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
        "firstTimestamp": "2024-01-01T10:00:00.999+02:00",
        "eventTime": "2024-01-01T10:00:00.123456+02:00",
        "reason": "Seen",
        "action": "Seen",
        "reportingComponent": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "Reason": "capitalised",
    }
    async with http.post(f"/api/v1/namespaces/{NS}/events", json=event) as r:
        got = await r.json()
        warnings = r.headers.getall("Warning", [])
    assert r.status == 201
    assert got["firstTimestamp"] == "2024-01-01T08:00:00Z"
    assert got["eventTime"] == "2024-01-01T08:00:00.123456Z"
    assert got["metadata"]["labels"] == {"empty": ""}
    assert "Reason" not in got and warnings == ['299 - "unknown field \\"Reason\\""']


async def test_patches_are_decoded_after_they_apply(
    http: aiohttp.ClientSession, sim: KubeSim
) -> None:
    """A merge patch that makes a type error is the patch handler's 422; unknown fields in
    the result follow fieldValidation (Strict: 400 without the "cannot be handled" prefix)."""
    sim.create("configmaps", {"metadata": {"name": "patched"}, "data": {"a": "1"}}, NS)
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{CM}/patched", json={"data": {"a": 2}}, headers=merge) as r:
        body = await r.json()
    assert r.status == 422 and body["reason"] == "Invalid"
    cause = body["details"]["causes"][0]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].endswith(
        ": json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )
    assert body["message"] == ' "" is invalid: patch: ' + cause["message"]
    async with http.patch(
        f"{CM}/patched", params={"fieldValidation": "Strict"}, json={"extra": 1}, headers=merge
    ) as r:
        assert r.status == 400
        assert (await r.json())["message"] == 'strict decoding error: unknown field "extra"'
    async with http.patch(
        f"{CM}/patched", json={"extra": 1, "data": {"b": "2"}}, headers=merge
    ) as r:
        assert r.status == 200
        assert r.headers.getall("Warning") == ['299 - "unknown field \\"extra\\""']
        assert (await r.json())["data"] == {"a": "1", "b": "2"}
    assert "extra" not in sim.get("configmaps", "patched", NS)


async def test_the_typed_client_still_lists_after_a_bad_write(
    http: aiohttp.ClientSession, sim: KubeSim, tmp_path: Path
) -> None:
    """Before, ``spec.replicas: "three"`` was stored and the official client could no
    longer list Deployments in that namespace. Now the write is refused and listing works."""
    from kubernetes import client, config

    sim.create("namespaces", {"metadata": {"name": "typed"}})
    good = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "good"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    async with http.post("/apis/apps/v1/namespaces/typed/deployments", json=good) as r:
        assert r.status == 201
    bad = {**good, "metadata": {"name": "bad"}, "spec": {**good["spec"], "replicas": "three"}}
    async with http.post("/apis/apps/v1/namespaces/typed/deployments", json=bad) as r:
        assert r.status == 400
    kc = sim.write_kubeconfig(tmp_path / "kc")

    def list_names() -> list[str]:
        api_client = config.new_client_from_config(str(kc))
        try:
            items = client.AppsV1Api(api_client).list_namespaced_deployment("typed").items
            return [d.metadata.name for d in items]
        finally:
            api_client.close()

    assert await asyncio.to_thread(list_names) == ["good"]


BAD_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: typo-{v}
spec:
  replicaz: 2
  selector:
    matchLabels: {{app: typo}}
  template:
    metadata:
      labels: {{app: typo}}
    spec:
      containers:
      - {{name: c, image: busybox:1.36}}
"""


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_gets_the_servers_strict_validation(
    sim: KubeSim, tmp_path: Path, version: str
) -> None:
    kubectl = Kubectl(kubectl_binary(version), sim.write_kubeconfig(tmp_path / "kc"), tmp_path)
    path = tmp_path / "bad.yaml"
    tag = version.replace(".", "")
    path.write_text(BAD_DEPLOYMENT.format(v=tag))
    res = await kubectl.run("apply", "-n", NS, "-f", str(path))
    assert res.code == 1
    assert (
        f'Error from server (BadRequest): error when creating "{path}": Deployment in version '
        '"v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replicaz"'
    ) in res.err
    res = await kubectl.run("apply", "-n", NS, "--validate=warn", "-f", str(path))
    assert res.code == 0, res.err
    assert 'Warning: unknown field "spec.replicaz"' in res.err
    assert "replicaz" not in sim.get("deployments", f"typo-{tag}", NS)["spec"]


async def test_hostile_shapes_get_a_400_not_a_500(http: aiohttp.ClientSession) -> None:
    """A CR whose metadata is not an object, and strings with unpaired surrogates (JSON
    and YAML escapes, which Go decodes as U+FFFD)."""
    rps = f"/apis/rec.aioinformer.dev/v1/namespaces/{NS}/recpodsets"
    body = {"apiVersion": "rec.aioinformer.dev/v1", "kind": "RecPodSet", "metadata": [1, "a"]}
    async with http.post(rps, json=body) as r:
        assert r.status == 400
        assert (await r.json())["message"] == (
            'RecPodSet in version "v1" cannot be handled as a RecPodSet: .metadata accessor '
            "error: [1 a] is of the type []interface {}, expected map[string]interface {}"
        )
    yaml_body = (
        b'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "s\\uD800"}\ndata: {k: "\\ud800x"}\n'
    )
    async with http.post(CM, data=yaml_body, headers={"Content-Type": "application/yaml"}) as r:
        assert r.status == 422  # the name is checked and refused, readably
        assert "s\ufffd" in (await r.json())["message"]
    json_body = b'{"metadata":{"name":"sur"},"data":{"k":"\\ud800x"}}'
    async with http.post(CM, data=json_body, headers={"Content-Type": "application/json"}) as r:
        assert r.status == 201
        assert (await r.json())["data"] == {"k": "\ufffdx"}
