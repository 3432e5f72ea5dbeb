"""Sharded caches (``Sharding(caches="sharded")``): replicas of a StatefulSet-shaped operator
(ConfigMaps own one pod each, made with ``owner=``) each cache only their shards' primaries
and those primaries' children, every primary is reconciled and gets exactly one child, and
no key is ever held by two replicas at once, through a join, a graceful leave and a crash;
on KubeSim with the ShardedListAndWatch gate on (the server filters) and off (the informers
filter). Pods made by another client without the bucket label are labelled by the replica
owning their owner.

On virtual time (looptime), with client-go's Lease durations."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from aioinformer import (
    ControllerOptions,
    Informer,
    Manager,
    Sharding,
    shard_buckets,
    uid_bucket,
)
from aioinformer._core.shardbuckets import SHARD_LABEL
from aioinformer.testing import KubeSim, eventually
from tests.coordination.overlap import sampled
from tests.coordination.proxy import FaultProxy
from tests.support import child_pod

pytestmark = pytest.mark.looptime

NS = "default"
SHARDS = 6
PRIMARIES = 24
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
LONG = 120.0


@pytest.fixture(params=[True, False], ids=["gate-on", "gate-off"])
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[KubeSim]:
    async with KubeSim(feature_gates={"ShardedListAndWatch": request.param}) as s:
        yield s


class Replica:
    def __init__(self, api: Any, identity: str) -> None:
        loop = asyncio.get_running_loop()
        sharding = Sharding("op", NS, identity, SHARDS, caches="sharded", **TIMING)
        self.identity = identity
        self.manager = manager = Manager(api, pipeline="loop", clock=loop.time, sharding=sharding)
        self.configs = manager.informer("v1", "configmaps", namespace=NS)
        self.pods = manager.informer("v1", "pods", namespace=NS)
        self.reconciled: set[str] = set()
        self.on_reconcile: Callable[[str], None] | None = None
        self.task: asyncio.Task[None] | None = None

        async def reconcile(key: str) -> None:
            self.reconciled.add(key)
            if self.on_reconcile is not None:
                self.on_reconcile(key)
            config = self.configs.snapshot().get(key)
            if config is None or self.pods.snapshot().by_index("controller", config.uid):
                return
            await manager.client.create(child_pod(config.name, NS), owner=config)

        self.ctl = manager.controller(
            "children", reconcile, primary=self.configs, owns=[self.pods],
            options=ControllerOptions(freshness=False),
        )  # fmt: skip

    def ready_buckets(self) -> set[int]:
        caches = self.manager.sharded_caches
        assert caches is not None
        return {b for s in caches.ready for b in shard_buckets(s, SHARDS)}

    def holds(self, keys: list[str]) -> list[str]:
        return [k for k in keys if self.ctl.may_act(k)]


def cached(inf: Informer) -> set[str]:
    return {o.key for o in inf.snapshot().list()}


def owners_with_unlabeled_children(sim: KubeSim, n: int) -> None:
    """``n`` primaries, each with one pod another client made (no bucket label)."""
    for i in range(n):
        meta = sim.create("configmaps", {"metadata": {"name": f"p-{i}"}}, NS)["metadata"]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"],
               "controller": True}  # fmt: skip
        sim.create("pods", {"metadata": {"name": f"{meta['name']}-x", "ownerReferences": [ref]},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}}, NS)  # fmt: skip


def check_stable(sim: KubeSim, replicas: list[Replica]) -> None:
    """Every primary has one child; every live replica has ready shards and caches exactly
    the primaries of their buckets and those primaries' children; together they cache
    every primary once."""
    configs = {f"{NS}/{c['metadata']['name']}": c for c in sim.list("configmaps", NS)}
    configs = {k: c for k, c in configs.items() if c["metadata"]["name"].startswith("p-")}
    children: dict[str, list[str]] = {}
    for p in sim.list("pods", NS):
        for ref in p["metadata"].get("ownerReferences") or ():
            children.setdefault(ref["uid"], []).append(f"{NS}/{p['metadata']['name']}")
    counts = sorted(len(children.get(c["metadata"]["uid"], [])) for c in configs.values())
    assert set(counts) == {1}, f"children per primary: {counts}"
    total = 0
    for r in replicas:
        buckets = r.ready_buckets()
        assert buckets, f"{r.identity} has no ready shard"
        mine = {k for k, c in configs.items() if uid_bucket(c["metadata"]["uid"]) in buckets}
        kids = {kid for k in mine for kid in children[configs[k]["metadata"]["uid"]]}
        primaries = {k for k in cached(r.configs) if k.startswith(f"{NS}/p-")}
        assert primaries == mine, f"{r.identity} caches {len(primaries)} of {len(mine)} primaries"
        assert cached(r.pods) == kids, (
            f"{r.identity} caches {len(cached(r.pods))} of {len(kids)} pods"
        )
        total += len(mine)
    assert total == len(configs), f"{total} primaries cached, of {len(configs)}"


async def test_replicas_cache_and_reconcile_their_shards_only(sim: KubeSim) -> None:
    random.seed(27)  # the jitter of the Lease loops
    for i in range(PRIMARIES):
        sim.create("configmaps", {"metadata": {"name": f"p-{i}"}}, NS)
    keys = [f"{NS}/p-{i}" for i in range(PRIMARIES)]
    live: list[Replica] = []
    async with contextlib.AsyncExitStack() as stack:

        async def start(identity: str) -> Replica:
            api = await stack.enter_async_context(sim.api_client())
            replica = Replica(api, identity)
            task = replica.task = asyncio.create_task(replica.manager.run())
            stack.push_async_callback(stop, task)
            live.append(replica)
            return replica

        async def stop(task: asyncio.Task[None]) -> None:
            task.cancel()
            await asyncio.wait([task])

        async def stable(what: str) -> None:
            await eventually(
                lambda: check_stable(sim, live) or True,
                what,
                timeout=LONG,
                interval=0.5,
                retry_on=AssertionError,
            )

        async with sampled(lambda: {str(i): r.holds(keys) for i, r in enumerate(live)}) as ov:
            a = await start("a")
            await stable("a alone caches every primary and child")
            assert len(cached(a.configs)) == PRIMARIES
            b = await start("b")
            c = await start("c")
            await stable("three replicas split the primaries and their children")
            for r in live:  # each holds less than all (6 shards over 3: 2 each)
                assert 0 < len(cached(r.configs)) < PRIMARIES, cached(r.configs)
                assert r.reconciled
                assert r.manager.shards is not None  # owns(key) agrees with the controller
                assert [r.manager.shards.owns(k) for k in keys] == [r.ctl.may_act(k) for k in keys]
            # graceful leave: b stops, its shards are released and taken by a and c
            live.remove(b)
            assert b.task is not None
            b.task.cancel()
            await asyncio.wait([b.task])
            await stable("a and c take b's shards after it left")
            # crash: c is cancelled without releasing its Leases; a takes them once expired
            assert c.manager.shards is not None and c.task is not None
            c.manager.shards.release_on_cancel = False
            live.remove(c)
            c.task.cancel()
            await asyncio.wait([c.task])
            await stable("a takes c's shards once their Leases expired")
            assert len(cached(a.configs)) == PRIMARIES
            assert set(a.reconciled) == set(keys)
        assert ov.overlapping == 0, ov.summary()


async def test_unlabeled_children_are_labeled_by_their_owners_replica(sim: KubeSim) -> None:
    """Pods another client made without the bucket label are labelled (by the replica that
    owns their owner), and then cached by it."""
    random.seed(28)
    owners_with_unlabeled_children(sim, 6)
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = Replica(api_a, "a"), Replica(api_b, "b")
        async with a.manager, b.manager:
            await eventually(
                lambda: check_stable(sim, [a, b]) or True,
                "every pod labelled with its owner's bucket and cached by its owner's replica",
                timeout=LONG,
                interval=0.5,
                retry_on=AssertionError,
            )
    for p in sim.list("pods", NS):
        owner = p["metadata"]["ownerReferences"][0]["uid"]
        assert p["metadata"]["labels"][SHARD_LABEL] == f"{uid_bucket(owner):02x}"


async def test_shards_stay_unready_until_every_existing_child_is_labelled(sim: KubeSim) -> None:
    """A replica whose labeler cannot place the existing children for longer than a
    renew deadline (their patches fail) does not reconcile their owners on a cache that
    lacks them: its shards become ready only once every child is labelled and cached, so
    no owner gets a second child."""
    owners_with_unlabeled_children(sim, 6)
    sim.fail_next(60, 500, path_contains="/pods/", verbs=["patch"])
    unlabelled_at_reconcile: list[int] = []

    def count_unlabelled(_key: str) -> None:
        pods = sim.list("pods", NS)
        unlabelled_at_reconcile.append(
            sum(SHARD_LABEL not in (p["metadata"].get("labels") or {}) for p in pods)
        )

    async with sim.api_client() as api:
        a = Replica(api, "a")
        a.on_reconcile = count_unlabelled
        async with a.manager:
            caches = a.manager.sharded_caches
            assert caches is not None
            await eventually(lambda: a.manager.shards.owned_shards() == frozenset(range(SHARDS)),
                             "every shard held", timeout=LONG, interval=0.5)  # fmt: skip
            await eventually(lambda: caches.ready, "the shards ready", timeout=LONG)
            await eventually(
                lambda: check_stable(sim, [a]) or True,
                "every owner with its one child",
                timeout=LONG,
                interval=0.5,
                retry_on=AssertionError,
            )
    assert unlabelled_at_reconcile and set(unlabelled_at_reconcile) == {0}, (
        f"children still unlabelled at each reconcile: {unlabelled_at_reconcile}"
    )


async def test_a_replica_that_loses_every_shard_parks_its_caches_until_it_gains_one(
    sim: KubeSim,
) -> None:
    """A replica cut off from its Leases loses every shard: its sharded informers park
    (nothing cached, no watch open) while the other replica takes them all, and once it
    can renew again it gains its share back and caches it again (a relist)."""
    random.seed(29)
    for i in range(PRIMARIES):
        sim.create("configmaps", {"metadata": {"name": f"p-{i}"}}, NS)

    async def stable(what: str, replicas: list[Replica]) -> None:
        await eventually(lambda: check_stable(sim, replicas) or True, what, timeout=LONG,
                         interval=0.5, retry_on=AssertionError)  # fmt: skip

    async with FaultProxy(sim) as proxy, proxy.api_client() as api_a, sim.api_client() as api_b:
        a, b = Replica(api_a, "a"), Replica(api_b, "b")
        async with a.manager, b.manager:
            await stable("a and b split the primaries and their children", [a, b])
            proxy.hold()  # a's renewals hang: it stops owning, b takes every shard
            await stable("b alone caches every primary and child", [b])
            await eventually(lambda: a.configs.parked and a.pods.parked, "a's informers parked",
                             timeout=LONG, interval=0.5)  # fmt: skip
            assert cached(a.configs) == set() and cached(a.pods) == set()
            assert a.configs.statistics().parked
            sent = [inf.statistics().requests for inf in (a.configs, a.pods)]
            sim.create("configmaps", {"metadata": {"name": f"p-{PRIMARIES}"}}, NS)
            await stable("b reconciles a primary made meanwhile", [b])
            assert [inf.statistics().requests for inf in (a.configs, a.pods)] == sent, (
                "a parked informer sends no request"
            )
            assert cached(a.configs) == set() and cached(a.pods) == set()
            relists = a.configs.statistics().relists
            proxy.release()
            await stable("a gains its share back and caches it again", [a, b])
            assert not a.configs.parked and not a.pods.parked
            assert a.configs.statistics().relists == relists + 1
