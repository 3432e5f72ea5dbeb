"""The parts of sharded caches (``Sharding(caches="sharded")``) one at a time: the option
and its flag, the shard of a bucket, deferred informers, ``Informer.relabel`` and the key
map of a primary informer."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from aioinformer import (
    Client,
    ConfigError,
    InformerFactory,
    Invalid,
    KubeObject,
    Manager,
    Sharding,
    buckets_selector,
    shard_buckets,
    uid_bucket,
)
from aioinformer._cache.informer import Pipeline
from aioinformer._cli.main import build_parser
from aioinformer._cli.run import manager_from_args
from aioinformer._core.objects import decode_object
from aioinformer._runtime.catchup import caught_up
from aioinformer._runtime.shardcaches import ShardedCaches
from aioinformer.testing import KubeSim, eventually
from tests.support import pod, watch_options


def test_the_option_and_the_flag() -> None:
    def manager(*argv: str) -> Manager:
        args = build_parser().parse_args(["run", "examples/podset.py:build", *argv])
        return manager_from_args(object(), args)

    for argv in [(), ("--shard-caches", "sharded")]:  # the default
        sharded = manager("--shards", "4", *argv).sharded_caches
        assert sharded is not None and sharded.shards == 4, argv
    assert manager("--shards", "4", "--shard-caches", "full").sharded_caches is None
    assert manager("--shards", "300", "--shard-caches", "full").sharded_caches is None
    with pytest.raises(ConfigError, match='fewer shards, or caches="full"'):
        manager("--shards", "257")
    with pytest.raises(ConfigError, match="--shard-caches needs --shards"):
        manager("--shard-caches", "sharded")
    with pytest.raises(SystemExit):  # a value it needs: before TARGET, never TARGET
        build_parser().parse_args(["run", "--shards", "4", "--shard-caches", "x.py:build"])
    assert Manager(object(), sharding=Sharding("op", "ns", "a", 4)).sharded_caches is not None
    full = Manager(object(), sharding=Sharding("op", "ns", "a", 4, caches="full"))
    assert full.sharded_caches is None
    with pytest.raises(ConfigError, match="between 1 and 256"):
        Manager(object(), sharding=Sharding("op", "ns", "a", 257))
    with pytest.raises(ConfigError, match="caches"):
        Manager(object(), sharding=Sharding("op", "ns", "a", 4, caches="some"))  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 3, 7, 32, 256])
def test_every_bucket_belongs_to_the_shard_that_owns_it(n: int) -> None:
    caches = ShardedCaches(InformerFactory(object()), n)  # type: ignore[arg-type]
    for shard in range(n):
        assert {caches.shard_of_bucket(b) for b in shard_buckets(shard, n)} == {shard}


async def test_a_deferred_informer_sends_nothing_until_started(sim: KubeSim) -> None:
    sim.create("pods", pod("p"), "default")
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        pods = factory.informer("v1", "pods")
        configs = factory.informer("v1", "configmaps")
        factory.defer(pods)
        async with factory:
            await factory.wait_for_sync(timeout=10)  # (does not wait for the deferred one)
            assert configs.has_synced and not pods.has_synced
            await eventually(lambda: sim.open_watches == 1, "the configmaps watch open")
            assert not pods.has_synced and sim.open_watches == 1  # (none for pods)
            factory.start_deferred(pods)
            await pods.wait_for_sync(timeout=10)
            assert [o.name for o in pods.snapshot().list()] == ["p"]
            with pytest.raises(ConfigError, match="has started"):
                factory.defer(configs)


@pytest.mark.parametrize("pipeline", ["loop", "thread"])
async def test_relabel_narrows_at_once_and_widens_by_a_relist(
    sim: KubeSim, pipeline: Pipeline
) -> None:
    for name, bucket in [("a", "00"), ("b", "01"), ("c", "02")]:
        sim.create("pods", pod(name, bucket=bucket), "default")
    deleted: list[str] = []
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline=pipeline)
        pods = factory.informer("v1", "pods", namespace="default")
        await pods.relabel("bucket in (00,01)")  # before it runs: only the selector
        added: list[str] = []
        pods.add_handler(
            on_add=lambda o: added.append(o.name), on_delete=lambda o: deleted.append(o.name)
        )
        async with factory:
            await factory.wait_for_sync(timeout=10)
            assert sorted(o.name for o in pods.snapshot().list()) == ["a", "b"]
            await pods.relabel("bucket in (00)", relist=False, timeout=10)
            assert [o.name for o in pods.snapshot().list()] == ["a"]  # at once
            assert pods.follows("default", {"bucket": "00"})
            assert not pods.follows("default", {"bucket": "01"})
            await pods.relabel("bucket in (00,02)", timeout=10)
            assert sorted(o.name for o in pods.snapshot().list()) == ["a", "c"]
            await eventually(lambda: "c" in added, "the handler told of c")
            sim.create("pods", pod("d", bucket="02"), "default")
            sim.create("pods", pod("e", bucket="01"), "default")
            await eventually(lambda: pods.snapshot().get("default/d"), "d watched")
            assert pods.snapshot().get("default/e") is None
    assert deleted == []  # leaving the cache is no deletion


async def test_relabel_after_park_relists_even_the_same_selector(sim: KubeSim) -> None:
    for name, bucket in [("a", "00"), ("b", "01")]:
        sim.create("pods", pod(name, bucket=bucket), "default")
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        pods = factory.informer("v1", "pods", namespace="default", label_selector="bucket=00")
        async with factory:
            await factory.wait_for_sync(timeout=10)
            await pods.park(timeout=10)
            assert pods.snapshot().list() == []
            sim.create("pods", pod("c", bucket="00"), "default")
            await pods.relabel("bucket=00", relist=False, timeout=10)
            assert sorted(o.name for o in pods.snapshot().list()) == ["a", "c"]
            assert not pods.parked


async def test_a_key_maps_by_its_primary_uid_and_a_deletion_is_remembered(
    sim: KubeSim,
) -> None:
    made = sim.create("configmaps", {"metadata": {"name": "x"}}, "default")
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        configs = factory.informer("v1", "configmaps", namespace="default")
        caches = ShardedCaches(factory, 256)  # (one bucket per shard: shard == bucket)
        keys = caches.key_map(configs)
        gone: list[KubeObject] = []
        configs.add_handler(on_delete=gone.append)
        async with factory:
            await factory.wait_for_sync(timeout=10)
            bucket = uid_bucket(made["metadata"]["uid"])
            assert caches.shard_of(configs, "default/x") == bucket
            assert caches.shard_of(configs, "default/never") is None
            sim.delete("configmaps", "x", "default")
            await eventually(lambda: gone, "the deletion seen")
            assert keys.bucket("default/x") == bucket
            assert caches.shard_of(configs, "default/x") == bucket


class Leases:
    """What ShardedCaches asks of a ShardManager: every shard held, no Lease write."""

    namespace, name, renew_deadline = "default", "op", 10.0

    def lease_version(self, shard: int) -> int | None:
        return None

    def owns_shard(self, shard: int) -> bool:
        return True


@pytest.mark.looptime
async def test_a_shard_lost_and_taken_again_before_it_left_the_caches_is_ready_again(
    sim: KubeSim,
) -> None:
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        configs = factory.informer("v1", "configmaps", namespace="default")
        caches = ShardedCaches(factory, 4)
        caches.primaries = [configs]
        factory.defer(configs)
        async with factory:
            scoping = asyncio.create_task(caches.run(Leases(), 10))  # type: ignore[arg-type]
            try:
                caches.want(frozenset({0, 1}))
                await eventually(lambda: caches.ready == {0, 1}, "shards 0 and 1 ready")
                assert configs.has_synced
                caches.want(frozenset({0}))  # lost...
                assert caches.ready == {0}  # (at once)
                caches.want(frozenset({0, 1}))  # ...and taken again before the scope moved
                await eventually(lambda: caches.ready == {0, 1}, "shard 1 ready again")
                caches.want(frozenset({2}))
                await eventually(lambda: caches.ready == {2}, "moved to shard 2")
                assert configs.shards == buckets_selector(shard_buckets(2, 4))
            finally:
                scoping.cancel()
                await asyncio.wait([scoping])


async def test_informers_that_cannot_be_scoped_stay_full_and_each_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One INFO line per informer at start: how it is scoped, or why it stays full."""
    made = Manager(object(), namespace="ns", sharding=Sharding("op", "ns", "a", 4))

    async def reconcile(key: str) -> None:
        return None

    podsets = made.informer("example.aioinformer.dev/v1", "podsets")
    pods = made.informer("v1", "pods")
    configs = made.informer("v1", "configmaps")  # primary of one, owned by another
    nodes = made.informer("v1", "nodes", namespace=None)  # watches= of one
    secrets = made.informer("v1", "secrets", shards=buckets_selector([0]))  # its own scope
    made.informer("v1", "services")  # read by reconcilers only
    made.controller("podset", reconcile, primary=podsets, owns=[pods],
                    watches=[(nodes, lambda o: [])])  # fmt: skip
    made.controller("a", reconcile, primary=configs)
    made.controller("b", reconcile, primary=secrets, owns=[configs])
    assert made.sharded_caches is not None
    with caplog.at_level(logging.INFO, logger="aioinformer.manager"):
        made.sharded_caches.configure(made.controllers)
    told = [r.getMessage() for r in caplog.records if r.name == "aioinformer.manager"]
    assert told == [
        "podsets.example.aioinformer.dev/v1[ns]: sharded by uid buckets (primary of podset; "
        "server or client filtering decided at its first list)",
        "pods/v1[ns]: sharded by label shard.aioinformer.dev/bucket (owned by podset)",
        "configmaps/v1[ns]: full (primary of a and owned by b: cannot be scoped both by uid "
        "and by label)",
        "nodes/v1: full (watches= of podset)",
        f"secrets/v1[ns]: full (its own shard selector {buckets_selector([0]).text})",
        "services/v1[ns]: full (read by reconcilers only)",
    ]
    assert made.sharded_caches.primaries == [podsets]
    assert list(made.sharded_caches.owned) == [pods]
    assert [i for i in made.factory.informers if made.factory.is_deferred(i)] == [podsets, pods]


@pytest.mark.looptime
async def test_a_sharded_informer_that_holds_its_scope_has_caught_up(sim: KubeSim) -> None:
    """Writes outside its ranges move the server's resourceVersion past its store's: it
    has caught up all the same once it holds what the server lists in its ranges."""
    names = [f"c{i}" for i in range(40)]
    made = {n: sim.create("configmaps", {"metadata": {"name": n}}, "default") for n in names}
    mine = buckets_selector(range(128))
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
        configs = factory.informer("v1", "configmaps", namespace="default", shards=mine)
        async with factory:
            await factory.wait_for_sync(timeout=10)
            outside = [n for n in names if uid_bucket(made[n]["metadata"]["uid"]) >= 128]
            last = sim.patch("configmaps", outside[0], {"data": {"x": "1"}}, "default")
            rv = int(last["metadata"]["resourceVersion"])
            assert configs.snapshot().resource_version < rv
            assert await caught_up(configs, rv, factory.rest, timeout=5)


@pytest.mark.parametrize("preconditions", [True, False])
async def test_a_merge_patch_of_a_cached_object_does_not_reach_its_successor(
    sim: KubeSim, preconditions: bool
) -> None:
    """With ``uid_preconditions`` (set by a manager with sharded caches), a merge patch of
    an object read before it was deleted and re-created under its name is refused."""
    old = sim.create("configmaps", {"metadata": {"name": "x"}}, "default")
    async with sim.api_client() as api:
        client = Client(api, uid_preconditions=preconditions)
        cached = decode_object(orjson.dumps(old))
        sim.delete("configmaps", "x", "default")
        sim.create("configmaps", {"metadata": {"name": "x"}}, "default")
        if preconditions:
            with pytest.raises(Invalid, match=r"metadata\.uid"):  # (a uid is immutable)
                await client.patch(cached, {"data": {"a": "1"}})
            assert "data" not in sim.get("configmaps", "x", "default")
        else:
            await client.patch(cached, {"data": {"a": "1"}})
            assert sim.get("configmaps", "x", "default")["data"] == {"a": "1"}
    made = Manager(object(), sharding=Sharding("op", "ns", "a", 4, caches="sharded"))
    assert made.client.uid_preconditions
    full = Manager(object(), sharding=Sharding("op", "ns", "a", 4, caches="full"))
    assert not full.client.uid_preconditions


class Published:
    """A primary informer whose snapshot no longer holds a deleted object while its
    handlers have not been told yet (they run after the publish)."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def add_handler(self, **handlers: Any) -> None:
        self.handlers = handlers

    def snapshot(self) -> dict[str, KubeObject]:
        return {}


def test_a_key_keeps_its_bucket_while_its_deletion_is_still_being_told() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default", "uid": "u-1",
                         "resourceVersion": "1"}}  # fmt: skip
    obj = decode_object(orjson.dumps(body))
    primary = Published()
    caches = ShardedCaches(InformerFactory(object()), 256)  # type: ignore[arg-type]
    keys = caches.key_map(primary)  # type: ignore[arg-type]
    primary.handlers["on_add"](obj)
    # deleted: gone from the snapshot, on_delete not run yet (the controller's may run first)
    assert keys.bucket("default/x") == uid_bucket("u-1")
    keys.keep_only(frozenset({uid_bucket("u-1")}))
    assert keys.bucket("default/x") == uid_bucket("u-1")
    primary.handlers["on_delete"](obj)
    assert keys.bucket("default/x") == uid_bucket("u-1")  # remembered once deleted
    keys.keep_only(frozenset())
    assert keys.bucket("default/x") == uid_bucket("u-1")  # (a deletion is kept anyway)
    primary.handlers["on_add"](obj)
    keys.keep_only(frozenset())  # its bucket left the scope: forgotten
    assert keys.bucket("default/x") is None
