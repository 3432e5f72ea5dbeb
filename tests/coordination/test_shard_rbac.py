"""A sharded operator (sharded caches, the default) runs on exactly the RBAC ``python -m
aioinformer rbac`` derives for it: its Leases, its scoped informers and the shard labelers
that patch the bucket label on children made by another client, in two namespaces (one
labeler per namespace of the owned informers, each needing only what those informers
are granted there). On KubeSim as a user holding only the derived rules; virtual time."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from kubernetes_asyncio import client

from aioinformer import ControllerOptions, Manager, Sharding
from aioinformer._cli.rbac import rbac_manifests
from aioinformer._core.shardbuckets import SHARD_LABEL
from aioinformer._runtime.rbac import derive_rules
from aioinformer.testing import KubeSim, eventually
from tests.support import rules_of

pytestmark = pytest.mark.looptime

NAMESPACES = ("team-a", "team-b")
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}


def operator(api: Any) -> Manager:
    """One controller per namespace: ConfigMaps there own pods there."""
    loop = asyncio.get_running_loop()
    sharding = Sharding("op", "default", "solo", 2, **TIMING)
    manager = Manager(api, pipeline="loop", clock=loop.time, sharding=sharding)

    async def reconcile(key: str) -> None:
        return None

    for ns in NAMESPACES:
        configs = manager.informer("v1", "configmaps", namespace=ns)
        pods = manager.informer("v1", "pods", namespace=ns)
        manager.controller(f"c-{ns}", reconcile, primary=configs, owns=[pods],
                           options=ControllerOptions(freshness=False))  # fmt: skip
    return manager


def derived_rules(manager: Manager) -> list[tuple[str, str, str]]:
    """The manifests' rules as KubeSim user rules (verb, group, resource)."""
    return rules_of(
        rbac_manifests(manager, name="op", service_account="op", service_account_namespace="x")
    )


async def test_the_derived_rbac_grants_what_sharding_and_its_labelers_do(sim: KubeSim) -> None:
    random.seed(35)
    for ns in NAMESPACES:
        sim.create("namespaces", {"metadata": {"name": ns}})
        for i in range(3):
            owner = sim.create("configmaps", {"metadata": {"name": f"p-{i}"}}, ns)["metadata"]
            ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["name"],
                   "uid": owner["uid"], "controller": True}  # fmt: skip
            sim.create("pods", {"metadata": {"name": f"p-{i}-x", "ownerReferences": [ref]},
                                "spec": {"containers": [{"name": "c", "image": "i"}]}}, ns)  # fmt: skip
    async with sim.api_client() as admin:
        rules = derived_rules(operator(admin))
    cfg = sim.client_configuration()
    cfg.api_key = {"BearerToken": sim.add_user("operator", rules)}
    async with client.ApiClient(configuration=cfg) as api:
        manager = operator(api)
        async with manager:

            def labeled_and_ready() -> bool:
                pods = [p for ns in NAMESPACES for p in sim.list("pods", ns)]
                caches = manager.sharded_caches
                assert caches is not None
                return caches.ready == {0, 1} and all(
                    SHARD_LABEL in (p["metadata"].get("labels") or {}) for p in pods
                )

            await eventually(labeled_and_ready, "every child labelled, both shards ready",
                             timeout=120, interval=0.5)  # fmt: skip
            labelers = manager.shard_labelers
            scopes = sorted(inf.namespace or "" for lab in labelers for inf in lab.informers)
            assert scopes == sorted(NAMESPACES)  # one labeler per namespace, not cluster-wide
            derived = derive_rules(manager)
            for lab in labelers:
                for inf in lab.informers:
                    for verb in ("list", "watch", "patch"):
                        assert derived.grants(inf.namespace, inf.group, inf.plural, verb), (
                            verb,
                            inf.name,
                        )
