"""Manager and Controller over real HTTP against KubeSim: reconciles, metrics, leader
election (stop and freeze), sharding across three replicas."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from aioinformer import WatchOptions
from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer._runtime.controller import Result
from aioinformer._runtime.manager import LeaderElection, Manager, Sharding
from aioinformer.testing import KubeSim
from tests.support import eventually

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)
LEASE = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": data or {"v": "1"}}


class Activity:
    """Records reconciles per replica and checks that no two replicas overlap."""

    def __init__(self) -> None:
        self.active: dict[str, int] = defaultdict(int)
        self.overlaps = 0
        self.done: list[tuple[str, str]] = []

    def reconciler(self, replica: str) -> Callable[[str], Any]:
        async def reconcile(key: str) -> Result | None:
            self.active[replica] += 1
            if sum(1 for r, n in self.active.items() if n and r != replica):
                self.overlaps += 1
            try:
                await asyncio.sleep(0.01)
                self.done.append((replica, key))
            finally:
                self.active[replica] -= 1
            return None

        return reconcile


def build(api: Any, activity: Activity, replica: str, **options: Any) -> Manager:
    m = Manager(api, watch_options=FAST, **options)
    cms = m.informer("v1", "configmaps", namespace="default")
    m.controller("cm", activity.reconciler(replica), primary=cms, primary_kind="ConfigMap")
    return m


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(manager.run())
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_reconciles_and_metrics_endpoint(sim: KubeSim) -> None:
    for i in range(5):
        sim.create("configmaps", cm(f"c{i}"), "default")
    activity = Activity()
    async with sim.api_client() as api:
        m = build(api, activity, "solo", metrics_port=0)
        async with running(m):
            await eventually(
                lambda: {k for _, k in activity.done} >= {f"default/c{i}" for i in range(5)},
                "c0-c4 reconciled",
            )
            assert m.bound_metrics_port
            url = f"http://127.0.0.1:{m.bound_metrics_port}/metrics"
            async with aiohttp.ClientSession() as s:
                async with s.get(url) as r:
                    first = await r.text()
                sim.create("configmaps", cm("later"), "default")
                await eventually(
                    lambda: ("solo", "default/later") in activity.done, "the later key reconciled"
                )
                async with s.get(url) as r:
                    second = await r.text()
    for series in (
        'aioinformer_informer_objects{informer="configmaps[default]"}',
        "aioinformer_informer_fifo_depth",
        "aioinformer_informer_staleness_seconds",
        "aioinformer_informer_relists_total",
        "aioinformer_workqueue_adds_total",
        "aioinformer_workqueue_depth",
        "aioinformer_reconcile_total",
        "aioinformer_reconcile_duration_seconds_count",
        "aioinformer_stale_reads_avoided_total",
    ):
        assert series in second, series

    def value(text: str, prefix: str) -> float:
        return sum(
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
        )

    assert value(second, 'aioinformer_reconcile_total{controller="cm",result="success"}') > value(
        first, 'aioinformer_reconcile_total{controller="cm",result="success"}'
    )
    assert value(second, 'aioinformer_informer_objects{informer="configmaps[default]"}') == 6


async def test_controllers_run_on_the_lock_based_store(sim: KubeSim) -> None:
    """Manager(store="locked") (the baseline) runs controllers as the snapshot store does:
    the start requeues every cached key, events reconcile; reads go through read()."""
    for i in range(3):
        sim.create("configmaps", cm(f"c{i}"), "default")
    seen: list[tuple[str, str | None]] = []
    async with sim.api_client() as api:
        m = Manager(api, store="locked", watch_options=FAST)
        cms = m.informer("v1", "configmaps", namespace="default")
        assert cms.statistics().store == "locked"

        async def reconcile(key: str) -> Result | None:
            async with cms.read() as view:
                obj = view.get(key)
            seen.append((key, None if obj is None else obj.labels.get("v")))
            return None

        m.controller("cm", reconcile, primary=cms, primary_kind="ConfigMap")
        async with running(m):
            await eventually(
                lambda: {k for k, _ in seen} >= {f"default/c{i}" for i in range(3)},
                "c0-c2 reconciled",
            )
            sim.patch("configmaps", "c1", {"metadata": {"labels": {"v": "2"}}}, "default")
            await eventually(lambda: ("default/c1", "2") in seen, "c1's change reconciled")
    with pytest.raises(ConfigError, match="store='locked'"):
        cms.snapshot()


async def test_namespaced_controllers_of_one_kind_share_owned_informers(sim: KubeSim) -> None:
    """Two ConfigMap controllers scoped to namespaces a and b own Secrets through one shared
    all-namespaces informer: each reconciles only its own namespace's owners."""
    for ns in ("a", "b"):
        sim.create("namespaces", {"metadata": {"name": ns}})
        sim.create("configmaps", cm("owner"), ns)
    activity = Activity()
    async with sim.api_client() as api:
        m = Manager(api, watch_options=FAST)
        secrets = m.informer("v1", "secrets")
        assert secrets.namespace is None
        for ns in ("a", "b"):
            primary = m.informer("v1", "configmaps", namespace=ns)
            assert primary.namespace == ns
            m.controller(
                f"cm-{ns}",
                activity.reconciler(ns),
                primary=primary,
                primary_kind="ConfigMap",
                owns=[secrets],
            )
        async with running(m):
            await eventually(
                lambda: {("a", "a/owner"), ("b", "b/owner")} <= set(activity.done),
                "both owners reconciled",
            )
            ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "controller": True}
            ref["uid"] = sim.get("configmaps", "owner", "a")["metadata"]["uid"]
            secret = {"metadata": {"name": "s", "ownerReferences": [ref]}, "data": {}}
            before = len(activity.done)
            sim.create("secrets", secret, "a")
            await eventually(
                lambda: activity.done[before:].count(("a", "a/owner")) >= 1, "a's owner requeued"
            )
            # then one in "b": handlers see changes in order, so once cm-b's subscription has
            # handled b's secret it would have handled a's before it, had it been sent there
            ref["uid"] = sim.get("configmaps", "owner", "b")["metadata"]["uid"]
            sim.create("secrets", secret, "b")

            def handled() -> dict[str, int]:
                return {h.name: h.handled_total for h in secrets.statistics().handlers}

            await eventually(lambda: handled()["cm-b/owns:secrets"] >= 1, "b's secret handled")
            counts = handled()
    assert all(replica == key.split("/")[0] for replica, key in activity.done)
    # the secret in "a" never even reached cm-b's queue: owned objects share their
    # owner's namespace, so a namespaced controller subscribes to its namespace only
    assert counts["cm-a/owns:secrets"] == 1 and counts["cm-b/owns:secrets"] == 1, counts


async def test_a_missing_crd_fails_the_start_with_what_is_served(sim: KubeSim) -> None:
    """An informer of a resource the server does not serve (its CRD is not installed, a
    wrong version or plural) stops the manager at the start, after ``discovery_timeout``,
    with one clear error saying what the server serves; no controller ever ran."""
    activity = Activity()
    async with sim.api_client() as api:
        for group_version, plural, expected in (
            ("example.invalid/v1", "widgets", "is its CustomResourceDefinition installed?"),
            ("apps/v2", "deployments", "apps serves v1, not v2"),
            ("v1", "pod", "no resource 'pod' in v1: did you mean 'pods'?"),
        ):
            m = Manager(api, watch_options=FAST, discovery_timeout=0.5)
            widgets = m.informer(group_version, plural)
            m.controller("widgets", activity.reconciler("x"), primary=widgets)
            with pytest.raises(ConfigError) as err:
                await asyncio.wait_for(m.run(), 30)
            assert expected in str(err.value)
            assert all(not c._workers for c in m.controllers)
    assert activity.done == []


async def test_an_informer_that_cannot_sync_fails_the_start_after_cache_sync_timeout(
    sim: KubeSim,
) -> None:
    """A served resource the credentials may not list (RBAC) stops the manager after
    ``cache_sync_timeout`` with an error naming the informer and its last error."""
    activity = Activity()
    token = sim.add_user("nobody", rules=[("get", "*", "*")])
    cfg = sim.client_configuration()
    cfg.api_key = {"BearerToken": token}
    from kubernetes_asyncio import client

    async with client.ApiClient(configuration=cfg) as api:
        m = Manager(api, watch_options=FAST, cache_sync_timeout=1.0)
        cms = m.informer("v1", "configmaps", namespace="default")
        m.controller("cms", activity.reconciler("x"), primary=cms)
        with pytest.raises(FreshnessTimeout) as err:
            await asyncio.wait_for(m.run(), 30)
    message = str(err.value)
    assert "not synced after 1.0s" in message and "configmaps" in message and "403" in message
    assert activity.done == [] and all(not c._workers for c in m.controllers)


async def test_leader_election_stop_and_takeover(sim: KubeSim) -> None:
    activity = Activity()
    le = {"name": "cm-leader", "namespace": "default", **LEASE}
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = build(api_a, activity, "a", leader_election=LeaderElection(identity="a", **le))
        b = build(api_b, activity, "b", leader_election=LeaderElection(identity="b", **le))
        async with running(a) as task_a, running(b) as task_b:
            sim.create("configmaps", cm("x"), "default")
            await eventually(lambda: bool(activity.done), "a first reconcile")
            leader = activity.done[0][0]
            other = "b" if leader == "a" else "a"
            assert {r for r, _ in activity.done} == {leader}
            stopped = task_a if leader == "a" else task_b
            stopped.cancel()  # a clean stop releases the lease: the other takes over at once
            await asyncio.gather(stopped, return_exceptions=True)
            sim.create("configmaps", cm("y"), "default")
            await eventually(
                lambda: (other, "default/y") in activity.done, "y reconciled by the other replica"
            )
            assert (leader, "default/y") not in activity.done
    assert activity.overlaps == 0


async def test_frozen_leader_steps_down_and_no_reconcile_overlaps(sim: KubeSim) -> None:
    activity = Activity()
    le = {"name": "cm-freeze", "namespace": "default", **LEASE}
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = build(api_a, activity, "a", leader_election=LeaderElection(identity="a", **le))
        async with running(a):
            assert a.elector is not None
            await a.elector.wait_leader(timeout=10)
            b = build(api_b, activity, "b", leader_election=LeaderElection(identity="b", **le))
            async with running(b):
                sim.create("configmaps", cm("before"), "default")
                await eventually(
                    lambda: ("a", "default/before") in activity.done, "'before' reconciled by a"
                )
                # freeze a: its lease requests hang, as a paused process would look
                frozen = asyncio.Event()
                client = a.elector._client
                original = client.update

                async def hang(*args: Any, **kwargs: Any) -> Any:
                    await frozen.wait()
                    return await original(*args, **kwargs)

                client.update = hang  # type: ignore[method-assign]
                assert b.elector is not None
                await b.elector.wait_leader(timeout=15)
                assert not a.elector.is_leader
                sim.create("configmaps", cm("after"), "default")
                await eventually(
                    lambda: ("b", "default/after") in activity.done, "'after' reconciled by b"
                )
                frozen.set()
    assert activity.overlaps == 0


async def test_sharding_three_replicas_each_key_once(sim: KubeSim) -> None:
    keys = [f"s{i}" for i in range(30)]
    for k in keys:
        sim.create("configmaps", cm(k), "default")
    activity = Activity()
    sh = {"name": "cm-shards", "namespace": "default", "shards": 8, **LEASE}
    apis = [sim.api_client() for _ in range(3)]
    try:
        managers = [
            build(api, activity, r, sharding=Sharding(identity=r, **sh))
            for api, r in zip(apis, "abc", strict=True)
        ]
        tasks = [asyncio.create_task(m.run()) for m in managers]

        def owners(k: str) -> list[str]:
            return [
                m.shards.identity for m in managers if m.shards and m.shards.owns(f"default/{k}")
            ]

        await eventually(
            lambda: all(len(owners(k)) == 1 for k in keys), "one owner per key", timeout=20
        )
        activity.done.clear()
        for k in keys:
            sim.patch("configmaps", k, {"data": {"v": "2"}}, "default")
        await eventually(
            lambda: {k for _, k in activity.done} >= {f"default/{k}" for k in keys},
            "every key reconciled",
        )
        per_key = Counter(k for _, k in activity.done)
        by = {k: {r for r, kk in activity.done if kk == k} for k in per_key}
        assert all(len(rs) == 1 for rs in by.values()), "each key reconciled by exactly one replica"
        # kill c without releasing its leases: its keys move to a and b
        victim = managers[2]
        assert victim.shards is not None
        victim_keys = [k for k in keys if victim.shards.owns(f"default/{k}")]
        victim.shards.release_on_cancel = False
        tasks[2].cancel()
        await asyncio.gather(tasks[2], return_exceptions=True)
        live = managers[:2]
        await eventually(
            lambda: all(
                sum(1 for m in live if m.shards and m.shards.owns(f"default/{k}")) == 1
                for k in keys
            ),
            "one live owner per key after the victim died",
            timeout=20,
        )
        activity.done.clear()
        for k in victim_keys:
            sim.patch("configmaps", k, {"data": {"v": "3"}}, "default")
        await eventually(
            lambda: {k for _, k in activity.done} >= {f"default/{k}" for k in victim_keys},
            "the victim's keys reconciled by the survivors",
        )
        movers = {k: {r for r, kk in activity.done if kk == f"default/{k}"} for k in victim_keys}
        assert all(len(rs) == 1 and rs <= {"a", "b"} for rs in movers.values()), movers
        for t in tasks[:2]:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for api in apis:
            await api.close()
