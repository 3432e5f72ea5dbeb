"""Two live replicas with the same identity never both hold a Lease: each elector and
shard manager writes an instance token of its own next to its ``holderIdentity``, so a
record naming its identity but another instance is another replica's. The second one
says so once at ERROR, naming the identity, and does not lead (or take shards) while the
first holds them; a restarted process (same identity, new instance) takes its
predecessor's Lease once that record expired, or at once if it was released.

On virtual time (looptime), with client-go's durations."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from aioinformer._coordination.leader import JITTER, LeaderElector
from aioinformer._coordination.sharding import ShardManager
from aioinformer.testing import KubeSim, eventually
from tests.coordination.freeze import cut_off
from tests.coordination.overlap import sampled

pytestmark = pytest.mark.looptime

NS = "default"
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
FIRST = TIMING["lease_duration"] + 5  # (virtual) seconds: a fresh deployment's first leader
# waits a renew deadline
LEASE_DURATION, RETRY_PERIOD = TIMING["lease_duration"], TIMING["retry_period"]


def elector(api: Any, identity: str, **options: Any) -> LeaderElector:
    return LeaderElector(
        api, name="ctl-leader", namespace=NS, identity=identity,
        clock=asyncio.get_running_loop().time, **TIMING | options,
    )  # fmt: skip


def leading(*electors: LeaderElector) -> Mapping[str, Iterable[object]]:
    return {f"#{i}": {"leader"} if e.is_leader else () for i, e in enumerate(electors)}


def duplicate_errors(caplog: pytest.LogCaptureFixture, identity: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.ERROR and f"uses the identity {identity!r}" in r.getMessage()
    ]


async def test_two_electors_with_one_identity_never_both_lead(
    sim: KubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    """The first leads; the second, same identity, watches it renew for a minute: it
    never leads and says so once at ERROR, naming the identity. When the first stops
    (releasing the Lease) the second takes over at its next try."""
    random.seed(26)
    async with sim.api_client() as api_1, sim.api_client() as api_2:
        first, second = elector(api_1, "ctl-0"), elector(api_2, "ctl-0")
        async with (
            sampled(lambda: leading(first, second)) as overlaps,
            contextlib.AsyncExitStack() as stack,
        ):
            running_first = await stack.enter_async_context(contextlib.AsyncExitStack())
            await running_first.enter_async_context(first)
            await first.wait_leader(timeout=FIRST)
            await stack.enter_async_context(second)
            await asyncio.sleep(4 * LEASE_DURATION)
            assert first.is_leader and not second.is_leader
            errors = duplicate_errors(caplog, "ctl-0")
            assert len(errors) == 1, errors
            assert "Identities must be unique" in errors[0]
            await running_first.aclose()  # stopped: it releases the Lease
            await second.wait_leader(timeout=RETRY_PERIOD * (1 + JITTER))
    print(f"duplicate identity, leader election: {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()


async def test_a_frozen_leader_and_its_namesake_never_both_lead(
    sim: KubeSim, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first leads and is then cut off from the server; the second (same identity)
    takes the Lease over only once it expired in its eyes, long after the first stepped
    down; the first, reachable again, finds its Lease held by its namesake and stays a
    follower, saying so at ERROR."""
    random.seed(26)
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api_1, sim.api_client() as api_2:
        thawed = cut_off(api_1, monkeypatch)
        first, second = elector(api_1, "ctl-0"), elector(api_2, "ctl-0")
        async with sampled(lambda: leading(first, second)) as overlaps, first:
            await first.wait_leader(timeout=FIRST)
            async with second:
                await asyncio.sleep(RETRY_PERIOD * 3)
                thawed.clear()
                cut = loop.time()
                await second.wait_leader(timeout=4 * LEASE_DURATION)
                assert loop.time() - cut >= LEASE_DURATION - RETRY_PERIOD
                thawed.set()
                await asyncio.sleep(2 * LEASE_DURATION)
                assert second.is_leader and not first.is_leader
    assert duplicate_errors(caplog, "ctl-0")
    print(f"duplicate identity, a frozen leader: {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()


async def test_a_restarted_process_takes_its_predecessors_lease_once_expired(
    sim: KubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    """The same identity in a new process (a new instance): after a crash (nothing
    released) it leads only once the old record expired in its eyes, and logs no ERROR
    (the old instance never renewed while it watched); after a graceful stop (released)
    it leads at its first try."""
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api:
        crashed = elector(api, "ctl-0", release_on_cancel=False)
        async with crashed:
            await crashed.wait_leader(timeout=FIRST)
        started = loop.time()
        restarted = elector(api, "ctl-0")
        async with restarted:
            await restarted.wait_leader(timeout=4 * LEASE_DURATION)
            assert loop.time() - started >= LEASE_DURATION - RETRY_PERIOD
        assert duplicate_errors(caplog, "ctl-0") == []
        started = loop.time()
        async with elector(api, "ctl-0") as again:
            await again.wait_leader(timeout=FIRST)
            assert loop.time() - started < 1.0


async def test_two_shard_managers_with_one_identity_never_both_own_a_shard(
    sim: KubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    """Replicas a, a (same identity) and b share 8 shards: no shard ever has two owners;
    the second a takes no shard while the first renews, says so once at ERROR naming the
    identity, and every shard stays owned."""
    random.seed(26)
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        managers: list[ShardManager] = []
        for identity in ("a", "b", "a"):
            api = await stack.enter_async_context(sim.api_client())
            managers.append(ShardManager(
                api, name="ctl", namespace=NS, identity=identity, shards=8, clock=loop.time,
                **TIMING,
            ))  # fmt: skip
        first, b, second = managers

        def owning() -> Mapping[str, Iterable[object]]:
            return {f"{m.identity}#{i}": m.owned_shards() for i, m in enumerate(managers)}

        def covered() -> bool:
            return frozenset().union(*(m.owned_shards() for m in managers)) == set(range(8))

        async with sampled(owning) as overlaps:
            await stack.enter_async_context(first)
            await stack.enter_async_context(b)
            await eventually(covered, "every shard owned", timeout=120)
            await stack.enter_async_context(second)
            await asyncio.sleep(6 * LEASE_DURATION)
            assert second.owned_shards() == frozenset()
            assert covered()
            await stack.aclose()
    errors = [e for e in duplicate_errors(caplog, "a") if "shards ctl" in e]
    assert len(errors) == 1, errors
    print(f"duplicate identity, sharding: {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()
