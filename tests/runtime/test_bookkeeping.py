"""The manager's write client keeps the controller's books by itself (over real HTTP against
KubeSim, the informers on the manager's pipeline thread): a reconcile that writes then
reads sees its write, creations and deletions of owned objects are expected and settled,
every write is fenced, writes outside a reconcile pass untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer import (
    AlreadyExists,
    ControllerOptions,
    KubeObject,
    Manager,
    NotOwner,
    Result,
    WatchOptions,
)
from aioinformer.testing import KubeSim, eventually

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0, backoff_initial=0.05)
PATIENT = ControllerOptions(freshness_timeout=60.0)
"""A write waits up to a minute for the caches to see it: a hang guard, not a measurement."""


def cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": "1"}}


def cm_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}


async def test_a_reconcile_sees_its_own_writes_and_its_creations_are_expected(
    sim: KubeSim,
) -> None:
    """The reconcile creates an owned Secret through manager.client and reads the secrets
    cache right after: the Secret is there. Its creation was expected (the key was held
    until the owned informer saw it) and is settled once seen."""
    seen: list[tuple[str, bool]] = []
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        secrets = m.informer("v1", "secrets", namespace="default")

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            if owner is None:
                return None
            name = f"{owner.name}-secret"
            if secrets.snapshot().get(f"default/{name}") is None:
                await m.client.create(secret(name), owner=owner)
                seen.append((key, secrets.snapshot().get(f"default/{name}") is not None))
            return None

        ctl = m.controller("cm", reconcile, primary=cms, owns=[secrets])
        sim.create("configmaps", cm("a"), "default")
        async with m:
            await eventually(lambda: bool(seen), "the reconcile to write")
            assert seen == [("default/a", True)]  # read-your-writes inside the reconcile
            await eventually(lambda: ctl.expectations.satisfied("default/a"), "the creation seen")
            assert ctl.primary_kind == "ConfigMap"  # learned from discovery
            created = sim.get("secrets", "a-secret", "default")
            ref = created["metadata"]["ownerReferences"][0]
            assert (ref["kind"], ref["name"], ref["controller"]) == ("ConfigMap", "a", True)


async def test_a_refused_create_lowers_the_expectation_it_raised(sim: KubeSim) -> None:
    outcomes: list[str] = []
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        secrets = m.informer("v1", "secrets", namespace="default")

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            assert owner is not None
            try:
                await m.client.create(secret("taken"), owner=owner)
            except AlreadyExists:
                outcomes.append("exists")
            return None

        ctl = m.controller("cm", reconcile, primary=cms, owns=[secrets])
        sim.create("secrets", secret("taken"), "default")
        sim.create("configmaps", cm("b"), "default")
        async with m:
            await eventually(lambda: outcomes == ["exists"], "the refused create")
            assert ctl.expectations.pending("default/b") == (0, 0)  # lowered again
            assert ctl.expectations.satisfied("default/b")


async def test_a_delete_of_an_owned_object_is_expected_until_seen(sim: KubeSim) -> None:
    gone: list[bool] = []
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        secrets = m.informer("v1", "secrets", namespace="default")

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            if owner is None:
                return None
            child = secrets.snapshot().get("default/child")
            if child is None:
                await m.client.create(secret("child"), owner=owner)
                return Result(requeue_after=0.01)
            if child.labels.get("delete") == "me":
                await m.client.delete(child)
                gone.append(secrets.snapshot().get("default/child") is None)
            return None

        ctl = m.controller("cm", reconcile, primary=cms, owns=[secrets])
        sim.create("configmaps", cm("c"), "default")
        async with m:
            await eventually(lambda: secrets.snapshot().get("default/child") is not None, "child")
            sim.patch("secrets", "child", {"metadata": {"labels": {"delete": "me"}}}, "default")
            await eventually(lambda: bool(gone), "the delete")
            assert gone == [True]  # the cache had seen the deletion when the write returned
            await eventually(lambda: ctl.expectations.satisfied("default/c"), "deletion settled")


async def test_a_creation_deleted_before_it_was_seen_is_not_expected_for_ever(
    sim: KubeSim,
) -> None:
    """The reconcile creates an owned Secret while the watches are stalled; it is deleted
    and the server restarts before the informer saw it, so the relist never shows it. Once
    the informer caught up with its creation the write finds it gone and settles its
    expectation (not after the 5-minute ttl)."""
    go, done = asyncio.Event(), asyncio.Event()
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        secrets = m.informer("v1", "secrets", namespace="default")

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            if owner is None or done.is_set():
                return None
            await go.wait()
            await m.client.create(secret("ghost"), owner=owner)
            done.set()
            return None

        ctl = m.controller("cm", reconcile, primary=cms, owns=[secrets], options=PATIENT)
        sim.create("configmaps", cm("g"), "default")
        async with m:
            await cms.wait_for_sync(10)
            await secrets.wait_for_sync(10)
            sim.faults.stall_watches()
            go.set()
            await eventually(lambda: bool(sim.list("secrets", "default")), "the create sent")
            assert ctl.expectations.pending("default/g") == (1, 0)
            sim.delete("secrets", "ghost", "default")
            sim.restart()  # the stalled watches never deliver; the next ones get 410
            sim.faults.unstall_watches()
            await asyncio.wait_for(done.wait(), 60)
            assert secrets.statistics().relists >= 1
            assert secrets.snapshot().get("default/ghost") is None  # never seen
            assert ctl.expectations.pending("default/g") == (0, 0)
            assert ctl.expectations.satisfied("default/g")


async def test_an_owned_informer_with_a_label_selector_is_kept_by_the_writes_it_sees(
    sim: KubeSim,
) -> None:
    """The owned secrets informer selects ``app=mine``. A create it will see (matching
    labels) is expected and read back at once, and so is its delete; a create it will
    never see (other labels) is neither expected nor waited for: with a freshness timeout
    of 60 s, the reconcile still ends and the key's expectations are settled."""
    seen: list[tuple[str, bool]] = []
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        secrets = m.informer("v1", "secrets", namespace="default", label_selector="app=mine")

        def labelled(name: str, app: str) -> dict[str, Any]:
            return {**secret(name), "metadata": {"name": name, "labels": {"app": app}}}

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            if owner is None or seen:
                return None
            made = await m.client.create(labelled("mine", "mine"), owner=owner)
            seen.append(("created", secrets.snapshot().get("default/mine") is not None))
            await m.client.create(labelled("other", "other"), owner=owner)
            await m.client.delete(made)
            seen.append(("deleted", secrets.snapshot().get("default/mine") is None))
            return None

        ctl = m.controller("cm", reconcile, primary=cms, owns=[secrets], options=PATIENT)
        sim.create("configmaps", cm("d"), "default")
        async with m:
            await eventually(lambda: len(seen) == 2, "the reconcile to end")
            assert seen == [("created", True), ("deleted", True)]
            await eventually(lambda: ctl.expectations.satisfied("default/d"), "settled")
            assert "default/other" in sim.versions("secrets", "default")


async def test_writes_are_fenced_and_writes_outside_a_reconcile_are_not(sim: KubeSim) -> None:
    """A reconcile of a key this replica no longer holds cannot write: NotOwner, nothing
    sent, the reconcile fails and is retried. Outside any reconcile the client just writes."""
    holds = {"yes": True}
    refused: list[str] = []
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")

        async def reconcile(key: str) -> Result | None:
            holds["yes"] = False  # lost while reconciling (a Lease that lapsed meanwhile)
            try:
                await m.client.create(cm_object("written-while-not-holding"))
            except NotOwner as exc:
                refused.append(exc.key)
            return None

        ctl = m.controller("cm", reconcile, primary=cms)
        ctl._may_act = lambda key: holds["yes"]
        sim.create("configmaps", cm("d"), "default")
        async with m:
            await eventually(lambda: bool(refused), "the fenced write")
            assert refused == ["default/d"]
            with pytest.raises(Exception, match="not found"):
                sim.get("configmaps", "written-while-not-holding", "default")
            outside = await m.client.create(cm_object("outside"))
            assert isinstance(outside, KubeObject) and outside.name == "outside"
