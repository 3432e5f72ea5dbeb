"""The built-in types KubeSim serves (kubesim.apis.builtin) and the registry looking them
up, checked against the kube-apiserver v1.28 transcripts in tests/kubesim/conformance."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesim.apis.builtin import BUILTIN_RESOURCES, builtin_registry
from kubesim.discovery.discovery import Discovery
from kubesim.registry.resource import STANDARD_VERBS
from tests.support import transcript


def dumps(doc: Any) -> str:
    """JSON text, so that comparisons also check key order."""
    return json.dumps(doc)


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
