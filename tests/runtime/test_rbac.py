"""Writes the generated RBAC would not grant: the manager's client warns once per (verb,
resource, namespace) naming the ``require_permission`` call to add, and what is declared
so is in the manifests ``python -m aioinformer rbac`` prints (no warning then)."""

from __future__ import annotations

import logging

import pytest

from aioinformer import Manager, Result
from aioinformer._cli.rbac import rbac_manifests
from aioinformer.testing import KubeSim, eventually

REGISTRY = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "registry",
            "namespace": "default"}, "data": {}}  # fmt: skip


def build(manager: Manager, written: list[str]) -> None:
    """A controller of Secrets labelled role=db that records each in a registry ConfigMap
    no informer watches (server-side apply), and patches its primary."""
    dbs = manager.informer("v1", "secrets", namespace="default", label_selector="role=db")

    async def reconcile(key: str) -> Result | None:
        db = dbs.snapshot().get(key)
        if db is None:
            return None
        entry = {**REGISTRY, "data": {db.name: "registered"}}
        await manager.client.apply(entry)
        await manager.client.patch(db, {"metadata": {"annotations": {"registered": "yes"}}})
        written.append(key)
        return None

    manager.controller("db", reconcile, primary=dbs)


def granted(manager: Manager, namespace: str, resource: str) -> set[str]:
    """The verbs the generated Role of ``namespace`` grants on core ``resource``."""
    docs = rbac_manifests(manager, name="op", service_account="op", service_account_namespace="ops")
    return {
        verb
        for doc in docs
        if doc["kind"] == "Role" and doc["metadata"]["namespace"] == namespace
        for rule in doc["rules"]
        if rule["apiGroups"] == [""] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("declared", [False, True])
async def test_a_write_the_generated_rbac_lacks_names_the_call_to_add(
    sim: KubeSim, caplog: pytest.LogCaptureFixture, declared: bool
) -> None:
    for name in ("a", "b"):
        sim.create("secrets", {"metadata": {"name": name, "labels": {"role": "db"}}}, "default")
    caplog.set_level(logging.WARNING, logger="aioinformer.rbac")
    written: list[str] = []
    async with sim.api_client() as api:
        manager = Manager(api)
        build(manager, written)
        if declared:
            manager.require_permission("", "configmaps", ["patch"], namespace="default")
        async with manager:
            await eventually(lambda: set(written) == {"default/a", "default/b"}, "a and b")
    warnings = [r.getMessage() for r in caplog.records if r.name == "aioinformer.rbac"]
    # the primary's patch is granted (a controller's primary: update, patch)
    assert "patch" in granted(manager, "default", "secrets")
    if declared:
        assert warnings == []
        assert granted(manager, "default", "configmaps") == {"patch"}
    else:
        assert len(warnings) == 1  # once for a and b: one (verb, resource, namespace)
        assert granted(manager, "default", "configmaps") == set()
        assert warnings[0].startswith("patch configmaps in namespace 'default': ")
        assert (
            "manager.require_permission('', 'configmaps', ['patch'], namespace='default')"
            in (warnings[0])
        )
