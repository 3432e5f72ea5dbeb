"""Manager and Controller over real HTTP against KubeSim: reconciles, metrics, owned
informers shared between namespaced controllers, the lock-based baseline, a start that
fails clearly (a resource not served, caches that cannot sync), leader election (stop and
cut off) and sharding across three replicas.

The leases and timeouts run on virtual time (looptime: the manager's clock is the loop's,
its informers run on the loop, KubeSim answers on the same loop), with client-go's lease
durations and the manager's default timeouts; the rest runs on the real clock with the
default pipeline thread."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer._harness.locked_informer import LockedManager, reading
from aioinformer._runtime.controller import Result
from aioinformer._runtime.manager import LeaderElection, Manager, Sharding
from aioinformer.testing import KubeSim, eventually
from tests.coordination.proxy import FaultProxy

LEASE = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}  # client-go's
LONG = 10 * LEASE["lease_duration"]  # (virtual) seconds a change of hands may take at most


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
    m = Manager(api, **options)
    cms = m.informer("v1", "configmaps", namespace="default")
    m.controller("cm", activity.reconciler(replica), primary=cms, primary_kind="ConfigMap")
    return m


def on_the_loop(**options: Any) -> dict[str, Any]:
    """Manager options for virtual time: its informers on the loop, the loop's clock."""
    return {"pipeline": "loop", "clock": asyncio.get_running_loop().time, **options}


async def test_reconciles_and_metrics_endpoint(sim: KubeSim) -> None:
    for i in range(5):
        sim.create("configmaps", cm(f"c{i}"), "default")
    activity = Activity()
    async with sim.api_client() as api:
        m = build(api, activity, "solo", metrics_port=0)
        async with m:
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
    """The benchmarks' baseline manager (LockedManager: every informer over the lock-based
    store) runs controllers as the library's does: the start reconciles every cached key,
    changes reconcile theirs; reads across awaits go through the read lock."""
    for i in range(3):
        sim.create("configmaps", cm(f"c{i}"), "default")
    seen: list[tuple[str, str | None]] = []
    async with sim.api_client() as api:
        m = LockedManager(api)
        cms = m.informer("v1", "configmaps", namespace="default")

        async def reconcile(key: str) -> Result | None:
            async with reading(cms) as view:
                obj = view.get(key)
            seen.append((key, None if obj is None else obj.labels.get("v")))
            return None

        m.controller("cm", reconcile, primary=cms, primary_kind="ConfigMap")
        async with m:
            await eventually(
                lambda: {k for k, _ in seen} >= {f"default/c{i}" for i in range(3)},
                "c0-c2 reconciled",
            )
            sim.patch("configmaps", "c1", {"metadata": {"labels": {"v": "2"}}}, "default")
            await eventually(lambda: ("default/c1", "2") in seen, "c1's change reconciled")
    assert m.factory.pipeline == "loop"  # (the baseline's lock is the loop's)


async def test_namespaced_controllers_of_one_kind_share_owned_informers(sim: KubeSim) -> None:
    """Two ConfigMap controllers scoped to namespaces a and b own Secrets through one shared
    all-namespaces informer: each reconciles only its own namespace's owners."""
    for ns in ("a", "b"):
        sim.create("namespaces", {"metadata": {"name": ns}})
        sim.create("configmaps", cm("owner"), ns)
    activity = Activity()
    async with sim.api_client() as api:
        m = Manager(api)
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
        async with m:
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


@pytest.mark.looptime
async def test_a_missing_crd_fails_the_start_with_what_is_served(sim: KubeSim) -> None:
    """An informer of a resource the server does not serve (its CRD is not installed, a
    wrong version or plural) stops the manager at the start, after ``discovery_timeout``
    (10 s), with one clear error saying what the server serves; no controller ever ran."""
    loop = asyncio.get_running_loop()
    activity = Activity()
    async with sim.api_client() as api:
        for group_version, plural, expected in (
            ("example.invalid/v1", "widgets", "is its CustomResourceDefinition installed?"),
            ("apps/v2", "deployments", "apps serves v1, not v2"),
            ("v1", "pod", "no resource 'pod' in v1: did you mean 'pods'?"),
        ):
            m = Manager(api, **on_the_loop())
            widgets = m.informer(group_version, plural)
            m.controller("widgets", activity.reconciler("x"), primary=widgets)
            started = loop.time()
            with pytest.raises(ConfigError) as err:
                async with m:
                    pytest.fail("the manager started")
            assert expected in str(err.value)
            assert 0 < loop.time() - started <= 10.0 + 1.0
            assert not m.controllers[0].running
    assert activity.done == []


@pytest.mark.looptime
async def test_an_informer_that_cannot_sync_fails_the_start_after_cache_sync_timeout(
    sim: KubeSim,
) -> None:
    """A served resource the credentials may not list (RBAC) stops the manager after
    ``cache_sync_timeout`` (controller-runtime's 2 minutes) with an error naming the
    informer and its last error."""
    loop = asyncio.get_running_loop()
    activity = Activity()
    token = sim.add_user("nobody", rules=[("get", "*", "*")])
    cfg = sim.client_configuration()
    cfg.api_key = {"BearerToken": token}
    from kubernetes_asyncio import client

    async with client.ApiClient(configuration=cfg) as api:
        m = Manager(api, **on_the_loop())
        cms = m.informer("v1", "configmaps", namespace="default")
        m.controller("cms", activity.reconciler("x"), primary=cms)
        started = loop.time()
        with pytest.raises(FreshnessTimeout) as err:
            await m.run()
        assert loop.time() - started == pytest.approx(120.0, abs=0.1)
    message = str(err.value)
    assert "not synced after 120.0s" in message and "configmaps" in message and "403" in message
    assert activity.done == [] and not m.controllers[0].running


@pytest.mark.looptime
async def test_leader_election_stop_and_takeover(sim: KubeSim) -> None:
    activity = Activity()
    le = {"name": "cm-leader", "namespace": "default", **LEASE}
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = build(
            api_a, activity, "a", **on_the_loop(leader_election=LeaderElection(identity="a", **le))
        )
        b = build(
            api_b, activity, "b", **on_the_loop(leader_election=LeaderElection(identity="b", **le))
        )
        async with contextlib.AsyncExitStack() as stack:
            running = {
                "a": await stack.enter_async_context(contextlib.AsyncExitStack()),
                "b": await stack.enter_async_context(contextlib.AsyncExitStack()),
            }
            await running["a"].enter_async_context(a)
            await running["b"].enter_async_context(b)
            sim.create("configmaps", cm("x"), "default")
            await eventually(lambda: bool(activity.done), "a first reconcile", timeout=LONG)
            leader = activity.done[0][0]
            other = "b" if leader == "a" else "a"
            assert {r for r, _ in activity.done} == {leader}
            await running[leader].aclose()  # a clean stop releases the lease
            sim.create("configmaps", cm("y"), "default")
            await eventually(
                lambda: (other, "default/y") in activity.done,
                "y reconciled by the other replica",
                timeout=LONG,
            )
            assert (leader, "default/y") not in activity.done
    assert activity.overlaps == 0


@pytest.mark.looptime
async def test_a_leader_cut_off_from_its_lease_steps_down_and_no_reconcile_overlaps(
    sim: KubeSim,
) -> None:
    activity = Activity()
    le = {"name": "cm-freeze", "namespace": "default", **LEASE}
    async with FaultProxy(sim) as proxy, proxy.api_client() as api_a, sim.api_client() as api_b:
        a = build(
            api_a, activity, "a", **on_the_loop(leader_election=LeaderElection(identity="a", **le))
        )
        b = build(
            api_b, activity, "b", **on_the_loop(leader_election=LeaderElection(identity="b", **le))
        )
        assert a.elector is not None and b.elector is not None
        async with a:
            await a.elector.wait_leader(timeout=LONG)
            async with b:
                sim.create("configmaps", cm("before"), "default")
                await eventually(
                    lambda: ("a", "default/before") in activity.done, "'before' reconciled by a"
                )
                proxy.hold()  # a's lease requests hang from now on
                await b.elector.wait_leader(timeout=LONG)
                assert not a.elector.is_leader
                sim.create("configmaps", cm("after"), "default")
                await eventually(
                    lambda: ("b", "default/after") in activity.done, "'after' reconciled by b"
                )
                assert ("a", "default/after") not in activity.done
                proxy.release()
    assert activity.overlaps == 0


@pytest.mark.looptime
async def test_sharding_three_replicas_each_key_once(sim: KubeSim) -> None:
    keys = [f"s{i}" for i in range(30)]
    for k in keys:
        sim.create("configmaps", cm(k), "default")
    activity = Activity()
    sh = {"name": "cm-shards", "namespace": "default", "shards": 8, "caches": "full", **LEASE}
    async with contextlib.AsyncExitStack() as stack:
        apis = [await stack.enter_async_context(sim.api_client()) for _ in range(3)]
        managers = [
            build(api, activity, r, **on_the_loop(sharding=Sharding(identity=r, **sh)))
            for api, r in zip(apis, "abc", strict=True)
        ]
        running = [await stack.enter_async_context(contextlib.AsyncExitStack()) for _ in "abc"]
        for m, block in zip(managers, running, strict=True):
            await block.enter_async_context(m)

        def owners(k: str, among: list[Manager]) -> list[str]:
            return [m.shards.identity for m in among if m.shards and m.shards.owns(f"default/{k}")]

        await eventually(
            lambda: all(len(owners(k, managers)) == 1 for k in keys),
            "one owner per key",
            timeout=LONG,
        )
        activity.done.clear()
        for k in keys:
            sim.patch("configmaps", k, {"data": {"v": "2"}}, "default")
        await eventually(
            lambda: {k for _, k in activity.done} >= {f"default/{k}" for k in keys},
            "every key reconciled",
        )
        by = {k: {r for r, kk in activity.done if kk == k} for _, k in activity.done}
        assert all(len(rs) == 1 for rs in by.values()), "each key reconciled by exactly one replica"
        # kill c without releasing its leases: its keys move to a and b
        victim = managers[2]
        assert victim.shards is not None
        victim_keys = [k for k in keys if victim.shards.owns(f"default/{k}")]
        victim.shards.release_on_cancel = False
        await running[2].aclose()
        live = managers[:2]
        await eventually(
            lambda: all(len(owners(k, live)) == 1 for k in keys),
            "one live owner per key after the victim died",
            timeout=LONG,
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


@pytest.mark.looptime
async def test_the_leader_gauge_reads_1_on_a_replica_that_acts_alone_or_leads(
    sim: KubeSim,
) -> None:
    """``aioinformer_leader`` is 1 while the controllers run on a replica without leader
    election (it acts alone: a "no leader" alert must not fire on it) and while an elected
    replica leads; 0 once the manager stopped, and 0 with sharding."""
    activity = Activity()
    le = LeaderElection("cm-leader", "default", "a", **LEASE)
    sh = Sharding("cm", "default", "a", 2, **LEASE)
    async with sim.api_client() as api:
        for options in ({}, {"leader_election": le}):
            m = build(api, activity, "solo", **on_the_loop(**options))
            assert m.metrics.leader._value.get() == 0
            gauge = m.metrics.leader
            async with m:
                await eventually(lambda g=gauge: g._value.get() == 1, "1", timeout=LONG)
            assert gauge._value.get() == 0
        m = build(api, activity, "sharded", **on_the_loop(sharding=sh))
        async with m:
            await eventually(lambda: m.metrics.shards_owned._value.get() == 2, "2", timeout=LONG)
            assert m.metrics.leader._value.get() == 0


async def test_a_manager_informer_can_be_sharded(sim: KubeSim) -> None:
    """``Manager.informer`` takes the factory's options unchanged, ``shards`` included: its
    informer caches only those ranges."""
    from aioinformer import ShardSelector

    for i in range(12):
        sim.create("configmaps", cm(f"c{i}"), "default")
    half = ShardSelector.of_buckets([1], 2)
    async with sim.api_client() as api:
        m = Manager(api)
        inf = m.informer("v1", "configmaps", namespace="default", shards=half)
        async with m:
            await inf.wait_for_sync(timeout=10)
            want = {c["metadata"]["uid"] for c in sim.list("configmaps", "default")}
            assert {o.uid for o in inf.snapshot().list()} == {u for u in want if half.matches(u)}
            assert inf.statistics().shard_mode == "client"
