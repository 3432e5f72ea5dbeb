"""A Lease deleted under its holder (``kubectl delete lease``) never makes two holders:
a replica that saw it before creates it only once it has seen it missing for a whole
Lease duration (a pause between two looks starts the count again), whoever creates a
missing Lease leads only a renew deadline later (a fresh deployment too), and the holder
creates it again at its next renewal (or, if another created it first, stops at once). For the leader Lease, the shard Leases and the member
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
from tests.coordination.freeze import Freezer
from tests.coordination.history import lease_writes
from tests.coordination.overlap import sampled

pytestmark = pytest.mark.looptime

NS = "default"
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
FIRST = TIMING["lease_duration"] + 5  # (virtual) seconds: a fresh deployment's first leader
# waits a renew deadline
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
            await a.wait_leader(timeout=FIRST)
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


async def test_a_candidate_that_starts_after_the_deletion_leads_only_once_the_holder_stopped(
    sim: KubeSim,
) -> None:
    """c starts right after the Lease was deleted under a, never having seen it: it may
    create it, but leads only ``renew_deadline`` after it sent that create, when a (whose
    next renewal found the Lease taken, or whose deadline passed) counts itself leader no
    more: the two never lead at once, and one of them leads in the end."""
    async with sim.api_client() as api_a, sim.api_client() as api_c:
        a, c = elector(api_a, "a"), elector(api_c, "c")
        async with a, sampled(lambda: leading(a, c)) as overlaps:
            await a.wait_leader(timeout=FIRST)
            delete_lease(sim, "ctl-leader")
            async with c:
                await asyncio.sleep(3 * TIMING["lease_duration"])
                assert a.is_leader != c.is_leader
    assert overlaps.overlapping == 0, overlaps.summary()


async def test_a_fresh_deployments_first_leader_waits_one_renew_deadline(sim: KubeSim) -> None:
    """No Lease yet: the first candidate creates it at once but leads only
    ``renew_deadline`` (10 s) later (a deleted Lease looks the same, and its holder, not
    seen, may count itself leader that long), and not much later (within one more retry
    period and its jitter)."""
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api:
        a = elector(api, "a")
        started = loop.time()
        async with a:
            await a.wait_leader(timeout=FIRST)
            waited = loop.time() - started
    deadline = TIMING["renew_deadline"]
    assert deadline <= waited <= deadline + 2.2 * RETRY_PERIOD


async def test_a_replica_frozen_past_the_lease_does_not_create_it_deleted_meanwhile(
    sim: KubeSim,
) -> None:
    """The simulation's seeds 30, 81 and 83: b is frozen (SIGSTOP) longer than the Lease
    duration; right before it resumes, the Lease a leads by is deleted. b, whose last
    look at the Lease is long expired by its own clock, finds it missing: it must not
    create it and lead (a leads on until its next renewal, and then creates it again)."""
    loop = asyncio.get_running_loop()
    freezer = Freezer()
    with freezer.installed():
        async with sim.api_client() as api_a, sim.api_client() as api_b:
            a, b = elector(api_a, "a"), elector(api_b, "b")
            async with a, sampled(lambda: leading(a, b)) as overlaps:
                await a.wait_leader(timeout=FIRST)
                with freezer.replica("b"):
                    await b.__aenter__()
                try:
                    await eventually(lambda: b.leader == "a", "b sees a")
                    await asyncio.sleep(RETRY_PERIOD / 2)
                    freezer.freeze("b")
                    await eventually(lambda: sim_holder(sim) == "a", "a holds it", timeout=FIRST)
                    await asyncio.sleep(2 * TIMING["lease_duration"])
                    renewed = a.observed_record
                    await eventually(lambda: a.observed_record != renewed, "a renewal")
                    await asyncio.sleep(0.1)
                    assert delete_lease(sim, "ctl-leader")
                    thawed = loop.time()
                    freezer.thaw("b")
                    await eventually(lambda: sim_holder(sim) is not None, "the Lease again")
                    await asyncio.sleep(3 * TIMING["lease_duration"])
                    assert a.is_leader and not b.is_leader
                finally:
                    await b.__aexit__(None, None, None)
    assert freezer.stopped_steps > 0
    assert loop.time() - thawed > 3 * TIMING["lease_duration"]
    assert overlaps.overlapping == 0, overlaps.summary()


def sim_holder(sim: KubeSim) -> str | None:
    """The holder the Lease names on the server (None: no Lease)."""
    with contextlib.suppress(Exception):
        return str(sim.get("leases", "ctl-leader", NS)["spec"].get("holderIdentity") or "")
    return None


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


async def test_a_replica_frozen_past_its_shards_does_not_take_one_deleted_meanwhile(
    sim: KubeSim,
) -> None:
    """The same with shards: b is frozen past its shard Leases, a takes them all; right
    after one of a's renewals, a shard Lease of a is deleted and b resumes. b finds it
    missing, with its last look long expired: it must not take it while a owns it (a
    creates it again at its next renewal)."""
    shards = 4
    loop = asyncio.get_running_loop()
    freezer = Freezer()
    with freezer.installed():
        async with contextlib.AsyncExitStack() as stack:
            managers: list[ShardManager] = []
            for identity in ("a", "b"):
                api = await stack.enter_async_context(sim.api_client())
                managers.append(
                    ShardManager(
                        api,
                        name="ctl",
                        namespace=NS,
                        identity=identity,
                        shards=shards,
                        clock=loop.time,
                        **TIMING,
                    )
                )
            a, b = managers

            def owning() -> Mapping[str, Iterable[object]]:
                return {m.identity: m.owned_shards() for m in managers}

            async with sampled(owning) as overlaps:
                await stack.enter_async_context(a)
                with freezer.replica("b"):
                    await stack.enter_async_context(b)
                await eventually(lambda: balanced(a, b, shards), "balanced", timeout=120)
                freezer.freeze("b")
                await eventually(lambda: len(a.owned_shards()) == shards, "a owns all", timeout=120)
                await asyncio.sleep(2 * TIMING["lease_duration"])
                victim = sorted(a.owned_shards())[0]
                held = a._held[victim]
                renewed = held.renewed
                await eventually(lambda: held.renewed != renewed, "a renewal")
                await asyncio.sleep(0.1)
                assert delete_lease(sim, f"ctl-shard-{victim}")
                freezer.thaw("b")
                await eventually(lambda: balanced(a, b, shards), "balanced again", timeout=120)
                await stack.aclose()
    assert freezer.stopped_steps > 0
    assert overlaps.overlapping == 0, overlaps.summary()
