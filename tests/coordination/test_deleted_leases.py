"""A Lease deleted under its holder (``kubectl delete lease``) never makes two holders:
a replica that last saw it held by another waits until that record would have expired by
its own clock, and the holder creates it again at its next renewal (or, if another
created it first, stops at once). For the leader Lease, the shard Leases and the member
Leases, sampled every 50 (virtual) milliseconds over thousands of samples.

On virtual time (looptime), with client-go's durations (15 s, renewed within 10 s, every
2 s)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from aioinformer._coordination.leader import LeaderElector
from aioinformer._coordination.sharding import ShardManager
from aioinformer.testing import KubeSim, eventually
from tests.coordination.history import lease_writes
from tests.coordination.overlap import sampled

pytestmark = pytest.mark.looptime

NS = "default"
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
RETRY_PERIOD = TIMING["retry_period"]
DELETIONS = 8


def elector(api: Any, identity: str, **options: Any) -> LeaderElector:
    return LeaderElector(
        api,
        name="ctl-leader",
        namespace=NS,
        identity=identity,
        clock=asyncio.get_running_loop().time,
        **TIMING | options,
    )


def leading(*electors: LeaderElector) -> Mapping[str, Iterable[object]]:
    return {f"{e.identity}#{i}": {"leader"} if e.is_leader else () for i, e in enumerate(electors)}


def balanced(a: ShardManager, b: ShardManager, shards: int) -> bool:
    held = sorted([len(a.owned_shards()), len(b.owned_shards())])
    return held == [shards // 2, shards - shards // 2]


def delete_lease(sim: KubeSim, name: str) -> bool:
    """``kubectl delete lease NAME``; whether it was there."""
    with contextlib.suppress(Exception):
        sim.get("leases", name, NS)
        sim.delete("leases", name, NS)
        return True
    return False


async def test_a_deleted_leader_lease_never_makes_two_leaders(sim: KubeSim) -> None:
    """a leads, b watches; the Lease is deleted 8 times, each at a seeded random instant
    within a second after one of a's renewals (when b's next try is as likely to come
    before a's next renewal as after): b never leads while a counts itself leader (a
    re-creates its Lease at its next renewal and leads on)."""
    rng = random.Random(26)
    random.seed(26)  # the electors' jitter
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = elector(api_a, "a"), elector(api_b, "b")
        async with lease_writes(api_b, NS) as writes, a, sampled(lambda: leading(a, b)) as overlaps:
            await a.wait_leader(timeout=5)
            async with b:
                await eventually(lambda: b.leader == "a", "b sees a")
                for _ in range(DELETIONS):
                    await asyncio.sleep(rng.uniform(10.0, 30.0))
                    renewals = len(writes)
                    await eventually(lambda n=renewals: len(writes) > n, "a renewal")
                    await asyncio.sleep(rng.uniform(0.0, 1.0))
                    assert delete_lease(sim, "ctl-leader")
                await asyncio.sleep(2 * TIMING["lease_duration"])
                assert a.is_leader != b.is_leader  # someone leads
    print(f"deleted leader lease: {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()
    assert overlaps.samples > 4000


async def test_a_leader_whose_deleted_lease_another_created_stops_at_its_next_renewal(
    sim: KubeSim,
) -> None:
    """The limit: c starts right after the deletion, never saw the Lease, creates it and
    leads at once (as client-go does: a first deployment has no Lease). a finds it taken
    at its next renewal and stops then, not at its renew deadline: the two overlap at most
    one retry period."""
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api_a, sim.api_client() as api_c:
        a, c = elector(api_a, "a"), elector(api_c, "c")
        async with a, sampled(lambda: leading(a, c)) as overlaps:
            await a.wait_leader(timeout=5)
            delete_lease(sim, "ctl-leader")
            deleted = loop.time()
            async with c:
                await c.wait_leader(timeout=5)
                await a.wait_not_leader()
                assert loop.time() - deleted <= RETRY_PERIOD + 0.01
                await asyncio.sleep(1)
    assert overlaps.seconds <= RETRY_PERIOD, overlaps.summary()


@pytest.mark.parametrize("shards", [8, 5])
async def test_deleted_shard_and_member_leases_never_make_two_owners(
    sim: KubeSim, shards: int
) -> None:
    """Two replicas split the shards (5: one holds 3, the other is below its share of 3
    and takes any shard it sees free); shard and member Leases are deleted 8 times, at
    seeded random instants: no shard is ever owned by both, and they stay balanced."""
    rng = random.Random(26)
    random.seed(26)  # the shard managers' jitter
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        managers: list[ShardManager] = []
        for identity in ("a", "b"):
            api = await stack.enter_async_context(sim.api_client())
            manager = ShardManager(
                api, name="ctl", namespace=NS, identity=identity, shards=shards, clock=loop.time,
                **TIMING,
            )  # fmt: skip
            managers.append(manager)
        a, b = managers

        def owning() -> Mapping[str, Iterable[object]]:
            return {m.identity: m.owned_shards() for m in managers}

        async with sampled(owning) as overlaps:
            await stack.enter_async_context(a)
            await stack.enter_async_context(b)
            await eventually(lambda: balanced(a, b, shards), "balanced", timeout=120)
            names = [f"ctl-shard-{s}" for s in range(shards)] + ["ctl-member-a", "ctl-member-b"]
            deleted = 0
            while deleted < DELETIONS:
                await asyncio.sleep(rng.uniform(5.0, 30.0))
                deleted += delete_lease(sim, rng.choice(names))
            await eventually(lambda: balanced(a, b, shards), "balanced", timeout=120)
            await stack.aclose()
    print(f"deleted shard leases ({shards} shards): {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()
