"""The discovery documents (kubesim.discovery.discovery) against the kube-apiserver v1.28
transcripts in tests/kubesim/conformance (15a-15e, 13d)."""

from __future__ import annotations

import json
from typing import Any

from kubesim.apiextensions.crd import resource_types_from_crd
from kubesim.apis.builtin import builtin_registry
from kubesim.discovery.discovery import Discovery, version_info
from kubesim.registry.resource import CRD_VERBS, STANDARD_VERBS
from tests.kubesim.apiextensions.test_crd import podset_crd
from tests.support import transcript


def dumps(doc: Any) -> str:
    """JSON text, so that comparisons also check key order."""
    return json.dumps(doc)


def test_api_versions_matches_15a() -> None:
    """15a-discovery-api: GET /api."""
    recorded = transcript("15a-discovery-api")["response"]["body"]
    assert dumps(Discovery(builtin_registry()).api_versions("127.0.0.1:6443")) == dumps(recorded)


def test_api_resource_list_matches_15b() -> None:
    """15b-discovery-api-v1: the recorded entries (pods, pods/status, configmaps, nodes) are
    reproduced key for key, the document head too, and entries are sorted by name."""
    recorded = transcript("15b-discovery-api-v1")["response"]["body"]
    doc = Discovery(builtin_registry()).api_resource_list("", "v1")
    assert doc is not None
    assert dumps({k: v for k, v in doc.items() if k != "resources"}) == dumps(
        {k: v for k, v in recorded.items() if k != "resources"}
    )
    ours = {e["name"]: e for e in doc["resources"]}
    for entry in recorded["resources"]:
        assert dumps(ours[entry["name"]]) == dumps(entry)
    names = [e["name"] for e in doc["resources"]]
    assert names == sorted(names)
    assert "pods/binding" in names and "pods/log" not in names


def test_api_group_list_matches_15c() -> None:
    """15c-discovery-apis: every group we serve appears as recorded, in the recorded order."""
    recorded = transcript("15c-discovery-apis")["response"]["body"]
    doc = Discovery(builtin_registry()).api_group_list()
    assert [k for k in doc if k != "groups"] == [k for k in recorded if k != "groups"]
    assert doc["kind"] == recorded["kind"] and doc["apiVersion"] == recorded["apiVersion"]
    recorded_groups = {g["name"]: g for g in recorded["groups"]}
    assert [g["name"] for g in doc["groups"]] == [
        g["name"] for g in recorded["groups"] if g["name"] in {x["name"] for x in doc["groups"]}
    ]
    for group in doc["groups"]:
        assert dumps(group) == dumps(recorded_groups[group["name"]])


def test_version_matches_15d() -> None:
    """15d-version: GET /version."""
    assert dumps(version_info()) == dumps(transcript("15d-version")["response"]["body"])


def test_aggregated_discovery_matches_15e() -> None:
    """15e-aggregated-discovery-apis: apps and coordination.k8s.io as recorded, */scale
    with its autoscaling/v1 responseKind included."""
    recorded = transcript("15e-aggregated-discovery-apis")["response"]["body"]
    doc = Discovery(builtin_registry()).aggregated_discovery(core=False)
    assert dumps({k: v for k, v in doc.items() if k != "items"}) == dumps(
        {k: v for k, v in recorded.items() if k != "items"}
    )
    ours = {item["metadata"]["name"]: item for item in doc["items"]}
    for item in recorded["items"]:
        assert dumps(ours[item["metadata"]["name"]]) == dumps(item)
    names = [i["metadata"]["name"] for i in doc["items"]]
    assert sorted(names) == sorted(g for g, _ in builtin_registry().groups() if g)
    recorded_names = [i["metadata"]["name"] for i in recorded["items"]]
    assert [n for n in names if n in recorded_names] == recorded_names


def test_aggregated_discovery_core() -> None:
    doc = Discovery(builtin_registry()).aggregated_discovery(core=True)
    (item,) = doc["items"]
    assert item["metadata"] == {"creationTimestamp": None}
    (version,) = item["versions"]
    assert version["version"] == "v1" and version["freshness"] == "Current"
    pods = next(r for r in version["resources"] if r["resource"] == "pods")
    assert dumps(pods) == dumps(
        {
            "resource": "pods",
            "responseKind": {"group": "", "version": "", "kind": "Pod"},
            "scope": "Namespaced",
            "singularResource": "pod",
            "verbs": list(STANDARD_VERBS),
            "shortNames": ["po"],
            "categories": ["all"],
            "subresources": [
                {
                    "subresource": "binding",
                    "responseKind": {"group": "", "version": "", "kind": "Binding"},
                    "verbs": ["create"],
                },
                {
                    "subresource": "status",
                    "responseKind": {"group": "", "version": "", "kind": "Pod"},
                    "verbs": ["get", "patch", "update"],
                },
            ],
        }
    )


def test_crd_group_discovery_matches_13d() -> None:
    """13d-podset-discovery: /apis/example.aioinformer.dev/v1 and /apis/example.aioinformer.dev
    (compared exactly; the storageVersionHash happens to be reproducible too)."""
    rec = transcript("13d-podset-discovery")
    reg = builtin_registry()
    for rt in resource_types_from_crd(podset_crd()):
        reg.add(rt)
    assert dumps(Discovery(reg).api_resource_list("example.aioinformer.dev", "v1")) == dumps(
        rec["response"]["body"]
    )
    assert dumps(Discovery(reg).api_group("example.aioinformer.dev")) == dumps(
        rec["more_exchanges"][0]["response"]["body"]
    )
    listed = Discovery(reg).api_group_list()["groups"]
    assert listed[-1]["name"] == "example.aioinformer.dev"
    item = Discovery(reg).aggregated_discovery(core=False)["items"][-1]
    resource = item["versions"][0]["resources"][0]
    assert resource["responseKind"] == {
        "group": "example.aioinformer.dev",
        "version": "v1",
        "kind": "PodSet",
    }
    assert resource["verbs"] == list(CRD_VERBS)
    assert resource["subresources"][0]["responseKind"] == resource["responseKind"]


def test_unserved_discovery() -> None:
    reg = builtin_registry()
    assert Discovery(reg).api_resource_list("", "v2") is None
    assert Discovery(reg).api_resource_list("certificates.k8s.io", "v1beta1") is None
    assert Discovery(reg).api_resource_list("autoscaling", "v2beta2") is None
    assert Discovery(reg).api_group("resource.k8s.io") is None
    assert Discovery(reg).api_group("") is None
    apps = Discovery(reg).api_resource_list("apps", "v1")
    assert apps is not None and list(apps)[:3] == ["kind", "apiVersion", "groupVersion"]
