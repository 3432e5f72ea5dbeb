"""Served resource types, CRD-defined types and discovery documents, checked
against the kube-apiserver v1.28 transcripts in tests/kubesim/conformance."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesim.apiextensions.crd import resource_types_from_crd, validate_crd
from kubesim.apis.builtin import BUILTIN_RESOURCES, builtin_registry
from kubesim.discovery.discovery import Discovery, version_info
from kubesim.registry.resource import CRD_VERBS, STANDARD_VERBS, ResourceType
from kubesim.registry.types import version_sort_key
from tests.support import transcript


def dumps(doc: Any) -> str:
    """JSON text, so that comparisons also check key order."""
    return json.dumps(doc)


def podset_crd() -> dict[str, Any]:
    """The PodSet CRD as POSTed in 13a-crd-create-established."""
    body: dict[str, Any] = transcript("13a-crd-create-established")["request"]["body"]
    return copy.deepcopy(body)


# (group, version, plural, singular, kind, namespaced, shortNames, categories, has_status)
EXPECTED = [
    ("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), (), True),
    ("", "v1", "pods", "pod", "Pod", True, ("po",), ("all",), True),
    ("", "v1", "nodes", "node", "Node", False, ("no",), (), True),
    ("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",), (), False),
    ("", "v1", "secrets", "secret", "Secret", True, (), (), False),
    ("", "v1", "services", "service", "Service", True, ("svc",), ("all",), True),
    ("", "v1", "events", "event", "Event", True, ("ev",), (), False),
    ("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, ("sa",), (), False),
    ("", "v1", "endpoints", "endpoints", "Endpoints", True, ("ep",), (), False),
    ("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", True,
     ("pvc",), (), True),
    ("apps", "v1", "statefulsets", "statefulset", "StatefulSet", True, ("sts",), ("all",), True),
    ("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, ("ds",), ("all",), True),
    ("apps", "v1", "deployments", "deployment", "Deployment", True, ("deploy",), ("all",), True),
    ("apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, ("rs",), ("all",), True),
    ("coordination.k8s.io", "v1", "leases", "lease", "Lease", True, (), (), False),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
     "CustomResourceDefinition", False, ("crd", "crds"), ("api-extensions",), True),
]  # fmt: skip


@pytest.mark.parametrize("row", EXPECTED, ids=[f"{r[2]}.{r[0]}" for r in EXPECTED])
def test_builtin_lookup(row: tuple[Any, ...]) -> None:
    group, version, plural, singular, kind, namespaced, short, categories, has_status = row
    reg = builtin_registry()
    rt = reg.lookup(group, version, plural)
    assert rt is not None
    assert (rt.singular, rt.kind, rt.namespaced) == (singular, kind, namespaced)
    assert (rt.short_names, rt.categories, rt.has_status) == (short, categories, has_status)
    assert rt.verbs == STANDARD_VERBS and not rt.custom
    assert rt.api_version == (f"{group}/{version}" if group else version)
    assert rt.list_kind == f"{kind}List"
    assert rt.group_resource == (f"{plural}.{group}" if group else plural)
    assert reg.by_kind(rt.api_version, kind) is rt
    assert rt in BUILTIN_RESOURCES


def test_lookup_misses() -> None:
    reg = builtin_registry()
    assert reg.lookup("", "v1", "podz") is None
    assert reg.lookup("apps", "v2", "deployments") is None
    assert reg.by_kind("v1", "Deployment") is None
    assert {rt.plural for rt in reg.all()} >= {r[2] for r in EXPECTED}


def test_subresources_served_only() -> None:
    """pods/binding, */status, namespaces/finalize, certificatesigningrequests/approval and
    the apps workloads' */scale are listed; log, exec and the like are not served."""
    reg = builtin_registry()
    pods = reg.lookup("", "v1", "pods")
    assert pods is not None
    assert [(s.name, s.kind, s.verbs) for s in pods.subresources] == [
        ("binding", "Binding", ("create",)),
        ("status", "Pod", ("get", "patch", "update")),
    ]
    served = {(rt.plural, s.name) for rt in reg.all() for s in rt.subresources}
    assert {name for _, name in served} == {"status", "binding", "scale", "finalize", "approval"}
    assert {p for p, name in served if name == "approval"} == {"certificatesigningrequests"}
    assert {p for p, name in served if name == "scale"} == {
        "deployments",
        "replicasets",
        "statefulsets",
        "replicationcontrollers",
    }
    assert {p for p, name in served if name == "finalize"} == {"namespaces"}
    core = Discovery(reg).api_resource_list("", "v1")
    assert core is not None
    finalize = next(r for r in core["resources"] if r["name"] == "namespaces/finalize")
    assert finalize == {
        "name": "namespaces/finalize",
        "singularName": "",
        "namespaced": False,
        "kind": "Namespace",
        "verbs": ["update"],
    }
    apps = Discovery(reg).api_resource_list("apps", "v1")
    assert apps is not None
    scale = next(r for r in apps["resources"] if r["name"] == "deployments/scale")
    assert json.dumps(scale) == json.dumps(
        {
            "name": "deployments/scale",
            "singularName": "",
            "namespaced": True,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }
    )


def test_storage_version_hash_matches_15b() -> None:
    """15b-discovery-api-v1: storageVersionHash is sha256("group/version/kind")[:8], base64."""
    recorded = transcript("15b-discovery-api-v1")["response"]["body"]["resources"]
    reg = builtin_registry()
    for entry in recorded:
        if "storageVersionHash" in entry:
            rt = reg.lookup("", "v1", entry["name"])
            assert rt is not None and rt.storage_version_hash == entry["storageVersionHash"]


def test_podset_crd_to_resource_type() -> None:
    """13a-crd-create-established: the PodSet CRD becomes one custom, namespaced type."""
    (rt,) = resource_types_from_crd(podset_crd())
    assert rt == ResourceType(
        group="example.aioinformer.dev",
        version="v1",
        plural="podsets",
        singular="podset",
        kind="PodSet",
        namespaced=True,
        short_names=("ps",),
        categories=(),
        has_status=True,
        custom=True,
        verbs=CRD_VERBS,
        storage_version="v1",
        list_kind_name="PodSetList",
    )
    assert rt.api_version == "example.aioinformer.dev/v1"
    assert rt.list_kind == "PodSetList"
    assert rt.group_resource == "podsets.example.aioinformer.dev"
    assert validate_crd(podset_crd()) == []


def test_crd_versions_scope_and_storage_hash() -> None:
    crd = podset_crd()
    spec = crd["spec"]
    spec["scope"] = "Cluster"
    spec["names"].pop("singular")
    spec["names"]["categories"] = ["all"]
    v1 = spec["versions"][0]
    v1beta1 = {**copy.deepcopy(v1), "name": "v1beta1", "storage": False}
    v1beta1.pop("subresources")
    v2alpha1 = {**copy.deepcopy(v1), "name": "v2alpha1", "storage": False, "served": False}
    spec["versions"] = [v1beta1, v1, v2alpha1]
    types = resource_types_from_crd(crd)
    assert [rt.version for rt in types] == ["v1beta1", "v1"]  # v2alpha1 is not served
    assert [rt.has_status for rt in types] == [False, True]
    assert all(not rt.namespaced and rt.singular == "podset" for rt in types)
    assert all(rt.categories == ("all",) for rt in types)
    assert types[0].storage_version_hash == types[1].storage_version_hash == "4U/eW5ORUjo="
    reg = builtin_registry()
    for rt in types:
        reg.add(rt)
    assert reg.groups()[-1] == ("example.aioinformer.dev", ["v1", "v1beta1"])
    group = Discovery(reg).api_group("example.aioinformer.dev")
    assert group is not None
    assert group["preferredVersion"]["version"] == "v1"
    reg.remove("example.aioinformer.dev", "v1", "podsets")
    reg.remove("example.aioinformer.dev", "v1beta1", "podsets")
    assert Discovery(reg).api_group("example.aioinformer.dev") is None
    assert Discovery(reg).api_resource_list("example.aioinformer.dev", "v1") is None


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda c: c["metadata"].update(name="podsets.other.dev"),
            [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "podsets.other.dev": must be '
                    'spec.names.plural+"."+spec.group',
                    "field": "metadata.name",
                }
            ],
        ),
        (
            lambda c: c["spec"]["names"].pop("kind"),
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.names.kind",
                }
            ],
        ),
        (
            lambda c: c["spec"].update(scope="Global"),
            [
                {
                    "reason": "FieldValueNotSupported",
                    "message": 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
                    "field": "spec.scope",
                }
            ],
        ),
        (
            lambda c: c["spec"].update(versions=[]),
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: must have at least one version",
                    "field": "spec.versions",
                }
            ],
        ),
    ],
    ids=["name", "kind", "scope", "no-versions"],
)
def test_validate_crd(mutate: Any, expected: list[dict[str, str]]) -> None:
    crd = podset_crd()
    mutate(crd)
    assert [c.to_dict() for c in validate_crd(crd)] == expected


def test_validate_crd_storage_versions_and_group() -> None:
    crd = podset_crd()
    crd["spec"]["versions"].append({**crd["spec"]["versions"][0], "name": "v2"})
    messages = [str(c) for c in validate_crd(crd)]
    assert len(messages) == 1
    assert messages[0].startswith("spec.versions: Invalid value: ")
    assert messages[0].endswith(": must have exactly one version marked as storage version")
    crd = podset_crd()
    crd["spec"]["group"] = ""
    crd["metadata"]["name"] = "podsets."
    fields = [c.field for c in validate_crd(crd)]
    assert fields == ["spec.group"]  # the name matches plural + "." + (empty) group


# -- discovery ----------------------------------------------------------------------------------


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


def test_crd_groups_sort_after_builtins_by_name() -> None:
    """Equal-priority (CRD) groups sort by APIService name, not by creation order."""
    reg = builtin_registry()
    for group in ("zeta.example.dev", "alpha.example.dev"):
        reg.add(ResourceType(group, "v1", "things", "thing", "Thing", True, custom=True))
    recorded = [g["name"] for g in transcript("15c-discovery-apis")["response"]["body"]["groups"]]
    builtin = {g for g, _ in builtin_registry().groups()}
    assert [g for g, _ in reg.groups()] == [
        "",
        *(g for g in recorded if g in builtin),
        "alpha.example.dev",
        "zeta.example.dev",
    ]


def test_version_sort_key() -> None:
    versions = ["v1alpha1", "foo10", "v2", "v11beta2", "v1", "v10beta3", "v3beta1", "foo1"]
    versions += ["v12alpha1", "v11alpha2"]
    assert sorted(versions, key=version_sort_key) == [
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "v1alpha1",
        "foo1",
        "foo10",
    ]
