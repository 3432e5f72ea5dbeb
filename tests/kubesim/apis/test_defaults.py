"""Defaulting (the kinds' strategies) against the kube-apiserver v1.28 transcripts in
tests/kubesim/conformance: recorded create responses, key order, per-kind defaults."""

from __future__ import annotations

import copy
import json

import pytest

from kubesim.apis.core.podspec import qos_class
from tests.kubesim.apis.test_validation import PODS, apply_defaults, pod, rt, validate_create
from tests.support import transcript

# -- recorded cases -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["06-watch-from-list-rv", "10b-watch-fieldselector-nodename"])
def test_pod_defaults_match_recorded_creates(case: str) -> None:
    """The 201 bodies of the recorded pod creates: spec and status equal, in the same key order."""
    creates = [
        w
        for w in transcript(case)["writes"]
        if w["request"]["method"] == "POST" and w["response"]["status"] == 201
        and w["response"]["body"].get("kind") == "Pod"
    ]  # fmt: skip
    assert creates
    for write in creates:
        obj = copy.deepcopy(write["request"]["body"])
        obj["metadata"]["namespace"] = write["response"]["body"]["metadata"]["namespace"]
        assert validate_create(PODS, obj) == []
        apply_defaults(PODS, obj)
        response = write["response"]["body"]
        assert json.dumps(obj["spec"]) == json.dumps(response["spec"])
        assert json.dumps(obj["status"]) == json.dumps(response["status"])
        assert list(obj)[:2] == ["kind", "apiVersion"]
        before = copy.deepcopy(obj)
        apply_defaults(PODS, obj, creating=False)  # idempotent on updates
        assert obj == before


def test_crd_defaults_match_13a() -> None:
    """13a-crd-create-established: the created CRD's spec (conversion defaulted, Go key order)
    and its initial status."""
    rec = transcript("13a-crd-create-established")
    obj = copy.deepcopy(rec["request"]["body"])
    crd_rt = rt("customresourcedefinitions", "apiextensions.k8s.io")
    assert validate_create(crd_rt, obj) == []
    apply_defaults(crd_rt, obj)
    assert json.dumps(obj["spec"]) == json.dumps(rec["response"]["body"]["spec"])
    assert json.dumps(obj["status"]) == json.dumps(rec["response"]["body"]["status"])


# -- per-kind defaults --------------------------------------------------------------------------


def test_image_pull_policy_and_qos() -> None:
    obj = pod()
    obj["spec"]["containers"] = [
        {"name": "a", "image": "nginx"},
        {"name": "b", "image": "nginx:latest"},
        {"name": "c", "image": "registry:5000/nginx"},
        {"name": "d", "image": "nginx@sha256:abc"},
        {"name": "f", "image": "Registry/Nginx"},
        {
            "name": "e",
            "image": "nginx:1.25",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
        },
    ]
    apply_defaults(PODS, obj)
    policies = [c["imagePullPolicy"] for c in obj["spec"]["containers"]]
    assert policies == [
        "Always",
        "Always",
        "Always",
        "IfNotPresent",
        "IfNotPresent",
        "IfNotPresent",
    ]
    assert obj["spec"]["containers"][5]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert obj["status"]["qosClass"] == "Burstable"
    guaranteed = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert qos_class({"containers": [{"resources": guaranteed}]}) == "Guaranteed"
    assert qos_class({"containers": [{"resources": {}}]}) == "BestEffort"


def test_probe_and_lifecycle_http_defaults() -> None:
    """``SetDefaults_Probe`` and ``SetDefaults_HTTPGetAction``: what kube-apiserver v1.28
    answered for bench/realserver.py's pods (``{"httpGet": {"path": "/readyz", "port":
    8080}}``), in its key order; a 0 takes the default as an absent value does, a value set
    is kept; a gRPC probe gets ``service: ""``; lifecycle hooks' HTTP actions their defaults."""
    obj = pod()
    obj["spec"]["containers"] = [
        {
            "name": "a",
            "image": "nginx:1.25",
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}},
            "livenessProbe": {"periodSeconds": 0, "failureThreshold": 5, "httpGet": {"port": 80}},
            "startupProbe": {"grpc": {"port": 9000}},
            "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
        }
    ]
    apply_defaults(PODS, obj)
    (c,) = obj["spec"]["containers"]
    assert json.dumps(c["readinessProbe"]) == json.dumps(
        {
            "httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        }
    )
    assert c["livenessProbe"]["httpGet"] == {"path": "/", "port": 80, "scheme": "HTTP"}
    assert (c["livenessProbe"]["periodSeconds"], c["livenessProbe"]["failureThreshold"]) == (10, 5)
    assert c["startupProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert c["lifecycle"]["preStop"]["httpGet"] == {"path": "/stop", "port": 80, "scheme": "HTTP"}
    assert list(c).index("readinessProbe") < list(c).index("terminationMessagePath")
    before = copy.deepcopy(obj)
    apply_defaults(PODS, obj, creating=False)  # idempotent on updates
    assert obj == before


def test_node_service_secret_defaults() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    apply_defaults(rt("nodes"), node)
    assert node["spec"] == {}
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert set(node["status"]["nodeInfo"].values()) == {""}
    svc = {"metadata": {"name": "s", "namespace": "n"}, "spec": {"ports": [{"port": 80}]}}
    apply_defaults(rt("services"), svc)
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 80, "targetPort": 80}]
    assert (svc["spec"]["type"], svc["status"]) == ("ClusterIP", {"loadBalancer": {}})
    secret = {"metadata": {"name": "s", "namespace": "n"}, "stringData": {"k": "v"}}
    apply_defaults(rt("secrets"), secret)
    assert secret == {
        "metadata": {"name": "s", "namespace": "n"},
        "data": {"k": "dg=="},
        "type": "Opaque",
    }


@pytest.mark.parametrize(
    ("case", "plural"),
    [("18a", "deployments"), ("23b", "statefulsets"), ("18a", "persistentvolumeclaims")],
)
def test_workload_defaults_match_recorded_creates(case: str, plural: str) -> None:
    """18a's Deployment (strategy 25%/25%, no enableServiceLinks in the template), 23b's
    StatefulSet (updateStrategy partition 0, PVC retention Retain/Retain): spec and status
    as recorded, key order included. A PVC (no recording) gets volumeMode Filesystem and
    the Pending phase the v1 defaults give."""
    if plural == "persistentvolumeclaims":
        pvc = {
            "metadata": {"name": "data", "namespace": "n"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        apply_defaults(rt(plural), pvc)
        assert list(pvc["spec"]) == ["accessModes", "resources", "volumeMode"]
        assert pvc["spec"]["volumeMode"] == "Filesystem" and pvc["status"] == {"phase": "Pending"}
        return
    creates = [
        s
        for s in transcript(case)["setup"]
        if s["request"]["path"].endswith(f"/{plural}") and s["response"]["status"] == 201
    ]
    assert creates
    for create in creates:
        obj = copy.deepcopy(create["request"]["body"])
        obj["metadata"]["namespace"] = create["response"]["body"]["metadata"]["namespace"]
        apply_defaults(rt(plural, "apps"), obj)
        assert json.dumps(obj["spec"]) == json.dumps(create["response"]["body"]["spec"])
        assert json.dumps(obj["status"]) == json.dumps(create["response"]["body"]["status"])
