"""The resource-type registry (kubesim.registry.types): the order of groups and versions."""

from __future__ import annotations

from kubesim.apis.builtin import builtin_registry
from kubesim.registry.resource import ResourceType
from kubesim.registry.types import version_sort_key
from tests.support import transcript


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
