"""Sharded informers on KubeSim (which, like v1.28, ignores ``shardSelector``: client mode):
each keeps exactly its ranges through the list and the watch, two replicas' caches partition
the resource, and ``rescope`` narrows at once (handlers told nothing), widens by a relist
(returning once the new scope is in the cache) and never shows readers less than the old
and the new ranges share. The factory holds one sharded informer per scope.

Server mode (a server that applies the selector): tests/client/test_shardfilter.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import (
    ConfigError,
    FreshnessTimeout,
    Informer,
    InformerFactory,
    KubeObject,
    ShardSelector,
)
from aioinformer.testing import KubeSim, eventually
from tests.support import pod, watch_options

HALVES = [ShardSelector.of_buckets([b], 2) for b in range(2)]
QUARTERS = [ShardSelector.of_buckets([b], 4) for b in range(4)]


def uids(sim: KubeSim, sel: ShardSelector | None = None) -> set[str]:
    """The uids of the pods in ``default`` (those ``sel`` selects)."""
    items = sim.list("pods", "default")
    return {p["metadata"]["uid"] for p in items if sel is None or sel.matches(p["metadata"]["uid"])}


def versions(source: KubeSim | Informer, sel: ShardSelector | None = None) -> set[tuple[str, str]]:
    """(uid, resourceVersion) of the pods in ``default`` an informer caches, or the sim
    holds (those ``sel`` selects)."""
    if isinstance(source, Informer):
        return {(o.uid, o.metadata.resource_version) for o in source.snapshot().list()}
    return {
        (p["metadata"]["uid"], p["metadata"]["resourceVersion"])
        for p in source.list("pods", "default")
        if sel is None or sel.matches(p["metadata"]["uid"])
    }


def cached(inf: Informer) -> set[str]:
    return {o.uid for o in inf.snapshot().list()}


@pytest.fixture
async def sharded(sim: KubeSim, api: Any) -> AsyncIterator[Informer]:
    """A running informer of ``default``'s pods sharded to HALVES[0], 40 pods created
    first."""
    for i in range(40):
        sim.create("pods", pod(f"p{i}"), "default")
    f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
    inf = f.informer("v1", "pods", namespace="default", shards=HALVES[0])
    async with f:
        await f.wait_for_sync(timeout=10)
        yield inf


async def test_two_replicas_caches_partition_the_resource_through_list_and_watch(
    sim: KubeSim, api: Any
) -> None:
    for i in range(30):
        sim.create("pods", pod(f"p{i}"), "default")
    factories = [InformerFactory(api, watch_options=watch_options()) for _ in HALVES]
    infs = [
        f.informer("v1", "pods", namespace="default", shards=sel)
        for f, sel in zip(factories, HALVES, strict=True)
    ]
    async with factories[0], factories[1]:
        for f in factories:
            await f.wait_for_sync(timeout=10)
        for i in range(30, 50):
            sim.create("pods", pod(f"p{i}"), "default")
        for i in range(0, 50, 5):
            sim.delete("pods", f"p{i}", "default")
        for i in (i for i in range(50) if i % 5):  # (every pod left: some in each half)
            sim.patch("pods", f"p{i}", {"metadata": {"labels": {"touched": "yes"}}}, "default")
        for inf, sel in zip(infs, HALVES, strict=True):
            await eventually(lambda i=inf, s=sel: versions(i) == versions(sim, s), "its ranges")  # type: ignore[misc]
        assert cached(infs[0]) | cached(infs[1]) == uids(sim)
        assert not cached(infs[0]) & cached(infs[1])
        for inf in infs:
            stats = inf.statistics()
            assert stats.shard_mode == "client" and stats.objects_dropped > 0
            assert stats.objects_kept + stats.objects_dropped == stats.objects_received
            touched = [o for o in inf.snapshot().list() if o.labels.get("touched")]
            assert touched, "the updates of its own objects reached it"


async def test_narrowing_drops_at_once_and_tells_handlers_nothing(
    sim: KubeSim, sharded: Informer
) -> None:
    inf = sharded
    deleted: list[KubeObject] = []
    sub = inf.add_handler(on_delete=deleted.append)
    await sub.wait_for_sync()
    before = inf.statistics()
    seq = inf.snapshot().seq
    narrow = QUARTERS[0]
    await inf.rescope(narrow)
    assert cached(inf) == uids(sim, narrow), "out of the new ranges at once"
    assert inf.snapshot().seq == seq + 1, "one published state"
    assert inf.shards == narrow
    after = inf.statistics()
    assert after.relists == before.relists, "narrowing does not relist"
    assert after.shard_selector == narrow.text
    await eventually(
        lambda: inf.statistics().watch_restarts > before.watch_restarts,
        "the watch sent again with the new selector",
    )
    sim.create("pods", pod("late"), "default")
    await eventually(lambda: cached(inf) == uids(sim, narrow), "the new ranges kept")
    assert deleted == [], "nothing was deleted in the cluster"


async def test_widening_relists_and_returns_with_the_new_scope_cached(
    sim: KubeSim, sharded: Informer
) -> None:
    inf = sharded
    added: list[str] = []
    sub = inf.add_handler(on_add=lambda o: added.append(o.uid))
    await sub.wait_for_sync()
    added.clear()
    relists = inf.statistics().relists
    wide = ShardSelector.of_buckets([0, 1, 2], 4)
    await inf.rescope(wide)
    assert cached(inf) == uids(sim, wide), "returns once the new scope is in the cache"
    assert inf.statistics().relists == relists + 1
    gained = uids(sim, wide) - uids(sim, HALVES[0])
    await eventually(lambda: set(added) == gained, "ADDED for the objects gained")


async def test_moving_ranges_never_shows_less_than_both_scopes_share(
    sim: KubeSim, sharded: Informer
) -> None:
    inf = sharded
    moved = ShardSelector.of_buckets([1, 2], 4)  # keeps bucket 1, drops 0, gains 2
    shared = uids(sim, ShardSelector.of_buckets([1], 4))
    seen: list[set[str]] = []
    inf.on_publish(lambda seq, rv: seen.append(cached(inf)))
    await inf.rescope(moved)
    assert cached(inf) == uids(sim, moved)
    assert seen and all(shared <= state for state in seen)
    assert not any(QUARTERS[0].matches(u) for u in seen[0]), "what left went first"


@pytest.mark.parametrize("pipeline", ["loop", "thread"])
async def test_parking_empties_the_cache_and_a_rescope_relists_its_scope(
    sim: KubeSim, api: Any, pipeline: str
) -> None:
    """``park`` (an empty scope) empties the cache in one published state, tells handlers
    nothing and sends no request; the next ``rescope``, even to the same ranges, relists
    and returns with them cached, the objects made meanwhile included."""
    for i in range(40):
        sim.create("pods", pod(f"p{i}"), "default")
    f = InformerFactory(api, watch_options=watch_options(), pipeline=pipeline)  # type: ignore[arg-type]
    inf = f.informer("v1", "pods", namespace="default", shards=HALVES[0])
    deleted: list[KubeObject] = []
    async with f:
        await f.wait_for_sync(timeout=10)
        sub = inf.add_handler(on_delete=deleted.append)
        await sub.wait_for_sync()
        assert cached(inf) == uids(sim, HALVES[0]) != set()
        seq, before = inf.snapshot().seq, inf.statistics()
        await inf.park(timeout=10)
        assert cached(inf) == set(), "every object left at once"
        assert inf.snapshot().seq == seq + 1, "one published state"
        assert inf.parked and inf.statistics().parked and inf.has_synced
        await inf.park(timeout=10)  # idempotent
        assert inf.snapshot().seq == seq + 1
        sent = inf.statistics().requests
        for i in range(40, 60):
            sim.create("pods", pod(f"p{i}"), "default")
        assert inf.statistics().requests == sent
        await inf.rescope(HALVES[0], timeout=10)
        assert cached(inf) == uids(sim, HALVES[0]), "its scope again, the new pods included"
        after = inf.statistics()
        assert not after.parked and after.relists == before.relists + 1
        sim.create("pods", pod("late"), "default")
        await eventually(lambda: cached(inf) == uids(sim, HALVES[0]), "watched again")
    assert deleted == [], "leaving the cache is no deletion"


async def test_parking_needs_a_running_informer(api: Any) -> None:
    f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
    idle = f.informer("v1", "pods", shards=HALVES[0])
    with pytest.raises(ConfigError, match="has not run"):
        await idle.park()


async def test_rescoping_checks_its_arguments(sim: KubeSim, api: Any, sharded: Informer) -> None:
    with pytest.raises(ConfigError):
        await sharded.rescope("shardRange(...)")  # type: ignore[arg-type]
    f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
    plain = f.informer("v1", "pods", namespace="default")
    with pytest.raises(ConfigError, match="not sharded"):
        await plain.rescope(HALVES[0])
    idle = f.informer("v1", "configmaps", shards=HALVES[0])
    await idle.rescope(HALVES[1])  # before it runs: only its ranges change
    assert idle.shards == HALVES[1]


async def test_the_factory_keeps_one_sharded_informer_per_scope(api: Any) -> None:
    f = InformerFactory(api)
    sharded = f.informer("v1", "pods", shards=HALVES[0])
    assert f.informer("v1", "pods", shards=HALVES[0]) is sharded
    plain = f.informer("v1", "pods")
    assert plain is not sharded and plain.shards is None
    with pytest.raises(ConfigError, match="rescope"):
        f.informer("v1", "pods", shards=HALVES[1])
    await sharded.rescope(HALVES[1])
    assert f.informer("v1", "pods", shards=HALVES[1]) is sharded, "the key follows rescope"


async def test_rescope_waits_for_the_new_scope_and_can_time_out(
    sim: KubeSim, sharded: Informer
) -> None:
    sim.faults.fail_next(1000, 500, verbs=["list"])
    with pytest.raises(FreshnessTimeout):
        await sharded.rescope(HALVES[1], timeout=0.3)
    assert sharded.shards == HALVES[1], "the change stays"
    assert not cached(sharded), "what left went at once"
    sim.faults.request_faults.clear()
    await sharded.wait_until(lambda s: cached(sharded) == uids(sim, HALVES[1]), timeout=10)


async def test_a_streaming_list_keeps_exactly_its_ranges() -> None:
    async with KubeSim(watch_list=True) as sim, sim.api_client() as api:
        await streaming(sim, api)


async def streaming(sim: KubeSim, api: Any) -> None:
    for i in range(30):
        sim.create("pods", pod(f"p{i}"), "default")
    f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
    inf = f.informer("v1", "pods", namespace="default", shards=HALVES[1], streaming_list=True)
    async with f:
        await f.wait_for_sync(timeout=10)
        assert cached(inf) == uids(sim, HALVES[1])
        sim.create("pods", pod("late"), "default")
        await eventually(lambda: inf.statistics().objects_received == 31, "the late pod's event")
        assert cached(inf) == uids(sim, HALVES[1])
        stats = inf.statistics()
        assert stats.shard_mode == "client" and stats.relists == 0
        assert stats.objects_kept == len(cached(inf)) and stats.objects_dropped == 31 - len(
            cached(inf)
        )


async def test_a_sharded_informer_follows_only_the_objects_of_its_ranges(api: Any) -> None:
    """What read-your-writes waits on: an object outside the ranges is not followed, nor is
    one whose uid is not known yet (a create before its answer) by a uid-sharded informer."""
    f = InformerFactory(api)
    by_uid = f.informer("v1", "pods", shards=HALVES[0])
    inside = next(u for u in (f"u{i}" for i in range(1000)) if HALVES[0].matches(u))
    outside = next(u for u in (f"u{i}" for i in range(1000)) if not HALVES[0].matches(u))
    assert by_uid.follows("default", {}, inside)
    assert not by_uid.follows("default", {}, outside)
    assert not by_uid.follows("default", {}), "an unknown uid"
    by_ns = f.informer("v1", "configmaps", shards=ShardSelector.of_buckets([0], 2, "namespace"))
    ns_in = next(n for n in (f"team{i}" for i in range(1000)) if HALVES[0].matches(n))
    ns_out = next(n for n in (f"team{i}" for i in range(1000)) if not HALVES[0].matches(n))
    assert by_ns.follows(ns_in, {}) and not by_ns.follows(ns_out, {}, inside)
