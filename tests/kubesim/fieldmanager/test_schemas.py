"""The structural type of a custom resource (kubesim.registry.objects.type_for, on
kubesim.fieldmanager.schemas) comes from the CRD the server serves."""

from __future__ import annotations

import copy

from aioinformer.testing import KubeSim
from kubesim.fieldmanager.schemas import MapType
from kubesim.registry.objects import type_for
from tests.kubesim.replay import recorded_podset_crd

PODSETS = "example.aioinformer.dev/v1/podsets"


async def test_two_servers_same_crd_revision_different_schemas() -> None:
    """Two KubeSims in one process may hold a CRD of the same name at the same revision
    with different schemas; each one's custom resources are typed by its own CRD."""
    typed = copy.deepcopy(recorded_podset_crd())
    spec = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    for version in typed["spec"]["versions"]:
        schema = {"type": "object", "properties": {"spec": spec}}
        version["schema"] = {"openAPIV3Schema": schema}
    types = []
    for crd in (typed, recorded_podset_crd()):
        async with KubeSim(controllers=False) as sim:
            sim.create("apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            await sim.wait_served(PODSETS)
            types.append(type_for(sim.resource(PODSETS), sim.mvcc))
    first, second = (t.fields.get("spec") for t in types if isinstance(t, MapType))
    assert isinstance(first, MapType) and "replicas" in first.fields
    assert not (isinstance(second, MapType) and "replicas" in second.fields)
