"""Built-in objects as protobuf: Go's marshalling rules, and every kind KubeSim serves
answered as protobuf with the same content as its JSON answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from kubesim.encoding.protobuf import decode_message, decode_object
from kubesim.encoding.protoencode import encode_message, encode_object
from tests.kubesim.differential.protobuf import fields
from tests.kubesim.replay import recorded_podset_crd

PB = "application/vnd.kubernetes.protobuf"
MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")


def test_every_non_pointer_field_is_written_and_pointers_only_when_set() -> None:
    meta = dict(fields(encode_message({"name": "a"}, "meta/v1.ObjectMeta")))
    # name, generateName, namespace, selfLink, uid, resourceVersion, generation, created
    assert sorted(meta) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert meta[2] == b"" and meta[7] == 0 and meta[8] == b""  # "" / 0 / the zero Time
    spec = dict(fields(encode_message({}, "apps/v1.DeploymentSpec")))
    assert 1 not in spec and 6 not in spec  # *replicas, *revisionHistoryLimit: unset
    spec = dict(fields(encode_message({"replicas": 0}, "apps/v1.DeploymentSpec")))
    assert spec[1] == 0  # a pointer set to zero is written


def test_maps_are_sorted_and_inline_structs_are_messages() -> None:
    cm = encode_message({"data": {"b": "2", "a": "1"}}, "v1.ConfigMap")
    entries = [dict(fields(v))[1] for n, v in fields(cm) if n == 2 and isinstance(v, bytes)]
    assert entries == [b"a", b"b"]
    volume = {"name": "v", "configMap": {"name": "cm"}}
    top = dict(fields(encode_message(volume, "v1.Volume")))
    assert isinstance(top[2], bytes) and 19 in dict(fields(top[2]))  # VolumeSource.configMap
    assert decode_message(encode_message(volume, "v1.Volume"), "v1.Volume") == volume


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ("v1.ServicePort", {"port": 80, "targetPort": "http", "protocol": "TCP"}),
        ("v1.ServicePort", {"port": 80, "targetPort": 8080, "protocol": "TCP"}),
        ("v1.ResourceRequirements", {"limits": {"cpu": "500m", "memory": "1Gi"}}),
        ("coordination.k8s.io/v1.LeaseSpec", {"renewTime": "2026-12-01T12:00:00.123456Z"}),
        ("v1.NodeCondition", {"type": "Ready", "status": "True",
                              "lastTransitionTime": "2026-12-01T12:00:00Z"}),
        ("apiextensions.k8s.io/v1.JSONSchemaProps", {
            "type": "object", "minimum": 1.5, "maximum": 10, "additionalProperties": False,
            "properties": {"a": {"type": "string", "enum": ["x", "y"], "default": "x"}},
            "items": {"type": "integer"}, "x-kubernetes-preserve-unknown-fields": True,
        }),
        ("apiextensions.k8s.io/v1.JSONSchemaProps", {
            "additionalProperties": {"type": "string"}, "items": [{"type": "string"}],
        }),
    ],
)  # fmt: skip
def test_special_types_survive_a_round_trip(message: str, value: dict[str, Any]) -> None:
    decoded = decode_message(encode_message(value, message), message)
    assert semantic(decoded) == semantic(value)
    if "additionalProperties" in value:  # a bool or a schema, either way round
        assert decoded["additionalProperties"] == value["additionalProperties"]


def semantic(doc: Any) -> Any:
    """``doc`` without what protobuf cannot tell from unset (Go's zero values), and what
    only the JSON form carries (a list's items' kind and apiVersion)."""
    if isinstance(doc, dict):
        out = {k: semantic(v) for k, v in doc.items()}
        return {k: v for k, v in out.items() if v not in (None, "", 0, False, [], {})}
    if isinstance(doc, list):
        return [semantic(v) for v in doc]
    return doc


CONTAINER = {
    "name": "c",
    "image": "busybox",
    "ports": [{"containerPort": 80}],
    "resources": {"requests": {"cpu": "100m"}},
    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
}
TEMPLATE = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {
        "containers": [CONTAINER],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    },
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim() as sim:
        sim.add_nodes(1)
        sim.start_cluster(start_delay=0.0)
        sim.create("namespaces", {"metadata": {"name": "pb"}})
        sim.create("customresourcedefinitions", recorded_podset_crd())
        await sim.wait_served("podsets")
        sim.create(
            "deployments",
            {"metadata": {"name": "d"},
             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                      "template": TEMPLATE}},
            "pb",
        )  # fmt: skip
        sim.create("services", {"metadata": {"name": "s"},
                                "spec": {"ports": [{"port": 80, "targetPort": "http"}]}}, "pb")  # fmt: skip
        sim.create("leases", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me",
                   "renewTime": "2026-12-01T12:00:00.123456Z"}}, "pb")  # fmt: skip
        sim.create("nodes", {"metadata": {"name": "n1"}})
        yield sim


@pytest_asyncio.fixture(loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
        yield s


@MODULE_LOOP
async def test_every_built_in_kind_as_protobuf_holds_its_json_answer(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """Lists of every built-in resource (the bootstrap objects, the workload, a pod's
    status and events as the kubelet emulation writes them) as protobuf decode to their
    JSON answer, and encode back to the same bytes."""
    sim.create("pods", {"metadata": {"name": "p"}, "spec": TEMPLATE["spec"]}, "pb")
    await sim.wait_idle()
    assert sim.get("pods", "p", "pb")["status"]["phase"] == "Running"
    compared: set[str] = set()
    for rt in sim.registry.all():
        if rt.custom or "list" not in rt.verbs:
            continue
        path = f"/api/{rt.version}" if not rt.group else f"/apis/{rt.group}/{rt.version}"
        path += f"/{rt.plural}"
        async with http.get(path, headers={"Accept": PB}) as r:
            assert (r.status, r.content_type) == (200, PB), path
            raw = await r.read()
        async with http.get(path, headers={"Accept": "application/json"}) as r:
            as_json = await r.json()
        decoded = decode_object(raw)
        assert semantic(decoded) == semantic(
            {**as_json, "items": [
                {k: v for k, v in i.items() if k not in ("kind", "apiVersion")}
                for i in as_json["items"]
            ]}
        ), path  # fmt: skip
        assert encode_object(decoded) == raw, path
        if decoded.get("items"):
            compared.add(rt.kind)
    held = {"Pod", "Event", "Node", "Deployment", "Service", "Lease", "Namespace", "FlowSchema",
            "CustomResourceDefinition", "APIService", "PriorityLevelConfiguration"}  # fmt: skip
    assert held <= compared, held - compared
