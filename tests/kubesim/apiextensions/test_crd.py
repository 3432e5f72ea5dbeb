"""CRD-defined resource types and the CRD's own validation (kubesim.apiextensions.crd),
checked against the kube-apiserver v1.28 transcripts in tests/kubesim/conformance."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.apiextensions.crd import resource_types_from_crd, validate_crd
from kubesim.apis.builtin import builtin_registry
from kubesim.discovery.discovery import Discovery
from kubesim.registry.resource import CRD_VERBS, ResourceType
from tests.support import transcript


def podset_crd() -> dict[str, Any]:
    """The PodSet CRD as POSTed in 13a-crd-create-established."""
    body: dict[str, Any] = transcript("13a-crd-create-established")["request"]["body"]
    return copy.deepcopy(body)


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
