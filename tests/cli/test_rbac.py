"""``python -m aioinformer rbac TARGET``: the manifests derived from what the example operators
register, as YAML on stdout and nothing on stderr; a bad TARGET or option is one line."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support import run_cli


def rules(doc: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    return {
        (group, resource): rule["verbs"]
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


async def test_the_podset_operators_manifests() -> None:
    result = await run_cli("rbac", "examples/podset.py:build", "--leader-election", "podset-op",
                           "--lease-namespace", "ops", "--service-account-namespace", "operators")  # fmt: skip
    assert result.code == 0, result.err
    assert result.err == ""  # nothing left open by building the operator
    docs = list(yaml.safe_load_all(result.out))
    assert [(d["kind"], d["metadata"].get("namespace")) for d in docs] == [
        ("ServiceAccount", "operators"),
        ("ClusterRole", None),
        ("ClusterRoleBinding", None),
        ("Role", "ops"),
        ("RoleBinding", "ops"),
    ]
    assert {d["metadata"]["name"] for d in docs} == {"podset"}  # from the target's name
    assert rules(docs[1]) == {
        ("", "pods"): ["create", "delete", "get", "list", "patch", "update", "watch"],
        ("", "events"): ["create", "patch"],  # its event recorder
        ("example.aioinformer.dev", "podsets"): ["get", "list", "patch", "update", "watch"],
        ("example.aioinformer.dev", "podsets/status"): ["get", "patch", "update"],
    }
    assert rules(docs[3]) == {("coordination.k8s.io", "leases"): ["create", "get", "update"]}
    subject = {"kind": "ServiceAccount", "name": "podset", "namespace": "operators"}
    assert docs[2]["subjects"] == [subject] and docs[4]["subjects"] == [subject]
    assert docs[2]["roleRef"]["kind"] == "ClusterRole" and docs[4]["roleRef"]["kind"] == "Role"


async def test_informers_of_one_namespace_and_shard_leases_get_roles() -> None:
    result = await run_cli("rbac", "examples/podset.py:build", "-n", "team", "--shards", "3",
                           "--name", "ps", "--service-account", "ps-sa")  # fmt: skip
    assert result.code == 0, result.err
    docs = list(yaml.safe_load_all(result.out))
    assert [(d["kind"], d["metadata"].get("namespace")) for d in docs] == [
        ("ServiceAccount", "default"),
        ("ClusterRole", None),  # the PodSet informer watches every namespace
        ("ClusterRoleBinding", None),
        ("Role", "default"),  # the shard Leases
        ("RoleBinding", "default"),
        ("Role", "team"),  # the pods informer of -n team
        ("RoleBinding", "team"),
    ]
    assert ("", "pods") not in rules(docs[1])
    assert rules(docs[3]) == {
        ("coordination.k8s.io", "leases"): ["create", "delete", "get", "list", "update"]
    }
    assert rules(docs[5]) == {
        ("", "pods"): ["create", "delete", "get", "list", "patch", "update", "watch"]
    }
    assert docs[0]["metadata"]["name"] == "ps-sa" and docs[5]["metadata"]["name"] == "ps"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["examples/nope.py:build"], "examples/nope.py:build: no such file examples/nope.py"),
        (["aioinformer.nothing:build"], "aioinformer.nothing:build: no module named 'aioinformer.nothing'"),
        (["examples/podset.py:nothing"], "examples/podset.py:nothing: examples/podset.py has no callable 'nothing'"),
        (["examples/podset.py:build", "--leader-election", "x", "--shards", "2"],
         "--leader-election and --shards exclude each other"),
    ],
)  # fmt: skip
async def test_a_bad_target_or_option_is_one_line(args: list[str], message: str) -> None:
    result = await run_cli("rbac", *args)
    assert result.code == 2
    assert result.out == ""
    assert result.err == f"python -m aioinformer rbac: {message}\n"
