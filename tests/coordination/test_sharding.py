"""Sharding with per-shard Leases against KubeSim over HTTP: balance, exclusive ownership
(sampled continuously), a crashed replica's shards moving, a frozen replica letting go
before the others take over, a joining replica's fair share.

On virtual time (looptime): the replicas' clock is the loop's, KubeSim answers on the same
loop in no virtual time, so the Leases have client-go's durations (15 s, renewed within
10 s, every 2 s) and no test waits for one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from aioinformer._coordination.sharding import STALE_MEMBER_DURATIONS, ShardManager, shard_of
from aioinformer._core.errors import ConfigError
from aioinformer.testing import KubeSim, eventually

pytestmark = pytest.mark.looptime

NAME = "ctl"
NS = "default"
SHARDS = 32
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = TIMING.values()
LONG = 10 * LEASE_DURATION  # (virtual) seconds a test may wait for a rebalancing
KEYS = [f"team-{i % 7}/object-{i}" for i in range(500)]


class Cluster:
    """Replicas of one sharded controller, each with its own ApiClient and task."""

    def __init__(self, sim: KubeSim, stack: AsyncExitStack) -> None:
        self.sim, self.stack = sim, stack
        self.replicas: dict[str, ShardManager] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.changes: dict[str, list[frozenset[int]]] = {}
        self.gained: list[tuple[float, str, int]] = []
        """(loop time, replica, shard) each time a replica started owning a shard."""
        self.apis: dict[str, Any] = {}
        self._rvs: dict[int, set[str]] = {}

    async def start(self, identity: str, **options: Any) -> ShardManager:
        api = await self.stack.enter_async_context(self.sim.api_client())
        loop = asyncio.get_running_loop()
        changes: list[frozenset[int]] = []

        def changed(owned: frozenset[int]) -> None:
            before = changes[-1] if changes else frozenset()
            self.gained.extend((loop.time(), identity, s) for s in owned - before)
            changes.append(owned)

        manager = ShardManager(
            api,
            name=NAME,
            namespace=NS,
            identity=identity,
            shards=SHARDS,
            on_change=changed,
            **({"clock": loop.time} | TIMING | options),
        )
        self.replicas[identity], self.changes[identity] = manager, changes
        self.apis[identity] = api
        self.tasks[identity] = asyncio.create_task(manager.run())
        return manager

    async def stop(self, identity: str) -> None:
        task = self.tasks.pop(identity)
        task.cancel()
        await asyncio.wait([task])
        del self.replicas[identity]
        assert task.cancelled(), task.exception()

    async def until(self, pred: Callable[[], bool], what: str, timeout: float = LONG) -> None:
        """Until ``pred()``; a replica whose run() ended on its own fails the test at once."""

        def holds() -> bool:
            for task in self.tasks.values():
                if task.done():
                    raise AssertionError(f"a replica stopped: {task.exception()!r}")
            return pred()

        await eventually(holds, what, timeout=timeout)

    def counts(self) -> dict[str, int]:
        return {i: len(r.owned_shards()) for i, r in self.replicas.items()}

    def covered(self, per_replica: set[int]) -> bool:
        """All shards owned, each replica holding a count in ``per_replica``."""
        owned = [r.owned_shards() for r in self.replicas.values()]
        return frozenset().union(*owned) == set(range(SHARDS)) and all(
            len(o) in per_replica for o in owned
        )

    def owners_per_key(self) -> list[int]:
        return [sum(r.owns(k) for r in self.replicas.values()) for k in KEYS]

    def renewals(self) -> dict[int, int]:
        """Shard -> how many distinct resourceVersions of its Lease the calls so far saw
        (each renewal writes the Lease: a lower bound on its renewals)."""
        for s in range(SHARDS):
            rv = self.sim.get("leases", f"{NAME}-shard-{s}", NS)["metadata"]["resourceVersion"]
            seen = self._rvs.setdefault(s, set())
            seen.add(rv)
        return {s: len(rvs) for s, rvs in self._rvs.items()}

    def holders(self) -> dict[int, str]:
        """Shard -> holderIdentity, as stored by the API server."""
        return {
            s: self.sim.get("leases", f"{NAME}-shard-{s}", NS)["spec"]["holderIdentity"]
            for s in range(SHARDS)
        }


class Sampler:
    """Checks every 50 (virtual) milliseconds that no shard (and, less often, no key) is
    owned by two replicas at once."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.samples = 0
        self.violations: list[str] = []

    async def run(self) -> None:
        while True:
            seen: dict[int, str] = {}
            for identity, replica in self.cluster.replicas.items():
                for shard in replica.owned_shards():
                    if shard in seen:
                        self.violations.append(f"shard {shard}: {seen[shard]} and {identity}")
                    seen[shard] = identity
            if self.samples % 5 == 0 and max(self.cluster.owners_per_key()) > 1:
                self.violations.append("a key owned twice")
            self.samples += 1
            await asyncio.sleep(0.05)


@asynccontextmanager
async def cluster(sim: KubeSim) -> AsyncIterator[Cluster]:
    async with AsyncExitStack() as stack:
        c = Cluster(sim, stack)
        sampler = Sampler(c)
        sampling = asyncio.create_task(sampler.run())
        try:
            yield c
        finally:
            sampling.cancel()
            await asyncio.wait([sampling])
            for identity in list(c.tasks):
                await c.stop(identity)
        assert sampler.samples > 20
        assert sampler.violations == []


def test_key_to_shard_is_stable() -> None:
    # fixed values: a change here (e.g. to the builtin hash()) would move every key
    assert shard_of("default/web-0", 32) == 1
    assert shard_of("default/web-1", 32) == 26
    assert shard_of("", 7) == 0
    assert {shard_of(k, SHARDS) for k in KEYS} == set(range(SHARDS))


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError):
        ShardManager(None, name=NAME, namespace=NS, identity="a", shards=0, **TIMING)
    with pytest.raises(ConfigError):
        ShardManager(None, name=NAME, namespace=NS, identity="Not_A_Name", **TIMING)
    with pytest.raises(ConfigError):
        ShardManager(None, name=NAME, namespace=NS, identity="a", lease_duration=0.5)


async def test_three_replicas_balance_and_own_every_key_once(sim: KubeSim) -> None:
    async with cluster(sim) as c:
        for i in range(3):
            await c.start(f"replica-{i}")
        await c.until(lambda: c.covered({10, 11}), "balanced over three")
        # (a shard taken fresh is published renew_deadline after it was taken)
        published = lambda: all(  # noqa: E731
            c.changes[i] and c.changes[i][-1] == r.owned_shards() for i, r in c.replicas.items()
        )
        await c.until(published, "every replica's on_change told its shards")
        assert sorted(c.counts().values()) == [10, 11, 11]
        assert c.owners_per_key() == [1] * len(KEYS)
        for identity, replica in c.replicas.items():
            assert replica.members == {"replica-0", "replica-1", "replica-2"}
            assert c.changes[identity][-1] == replica.owned_shards()
        holders = c.holders()
        for identity, replica in c.replicas.items():
            assert {s for s, h in holders.items() if h == identity} == replica.owned_shards()
        # stable: no churn once balanced, over two renewals of every shard by its holder
        # (each renewal round is also a round of balancing decisions)
        before = {i: r.owned_shards() for i, r in c.replicas.items()}
        renewed = c.renewals()
        await c.until(
            lambda: all(n >= renewed[s] + 2 for s, n in c.renewals().items()), "two renewals"
        )
        assert {i: r.owned_shards() for i, r in c.replicas.items()} == before
        assert c.holders() == holders


async def test_crashed_replica_shards_move_to_survivors(sim: KubeSim) -> None:
    async with cluster(sim) as c:
        for i in range(3):
            await c.start(f"replica-{i}", release_on_cancel=False)
        await c.until(lambda: c.covered({10, 11}), "balanced over three")
        victim = c.replicas["replica-1"]
        lost = victim.owned_shards()
        await c.stop("replica-1")  # a crash: nothing released
        assert victim.owned_shards() == frozenset()
        holders = c.holders()
        assert {s for s, h in holders.items() if h == "replica-1"} == lost
        await c.until(lambda: c.covered({16}), "balanced over two")
        assert c.owners_per_key() == [1] * len(KEYS)
        assert "replica-1" not in set(c.holders().values())
        for replica in c.replicas.values():
            assert replica.members == {"replica-0", "replica-2"}


async def test_frozen_replica_stops_owning_before_others_take_over(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    async with cluster(sim) as c:
        for i in range(3):
            await c.start(f"replica-{i}")
        await c.until(lambda: c.covered({10, 11}), "balanced over three")
        frozen = c.replicas["replica-1"]
        lost = frozen.owned_shards()
        api = c.apis["replica-1"]
        thawed = asyncio.Event()
        call_api = api.call_api

        async def gated(*args: Any, **kwargs: Any) -> Any:
            await thawed.wait()  # requests hang: a paused or partitioned replica
            return await call_api(*args, **kwargs)

        monkeypatch.setattr(api, "call_api", gated)
        frozen_at = loop.time()
        await c.until(lambda: not frozen.owned_shards(), "the frozen one owning nothing")
        # each of its shards dropped renew_deadline after its last renewal (one retry
        # period before the freeze at most), by then at the latest
        assert loop.time() <= frozen_at + RENEW_DEADLINE + 0.1
        await c.until(lambda: c.covered({0, 16}), "its shards taken over")
        # the others took them when they saw them unchanged for lease_duration, since the
        # frozen one's last renewal: long after it let go
        took_over = [at for at, _, shard in c.gained if shard in lost and at > frozen_at]
        assert len(took_over) == len(lost)
        assert min(took_over) >= frozen_at + LEASE_DURATION - RETRY_PERIOD
        assert c.owners_per_key() == [1] * len(KEYS)
        thawed.set()  # it comes back, is counted again and gets its share back
        await c.until(lambda: c.covered({10, 11}), "balanced over three again")
        assert c.owners_per_key() == [1] * len(KEYS)


async def test_a_deadline_the_clock_falls_short_of_by_a_hair_counts_as_passed(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replica's clock runs a hair slower than the loop's timers: when the timer for a
    shard's renew deadline fires, the clock is a hair short of it. A replica cut off from
    the server still stops owning its shards then, instead of retrying its renewals with a
    timeout too short for any timer, at once and again (on virtual time, for ever)."""
    loop = asyncio.get_running_loop()
    async with cluster(sim) as c:
        replica = await c.start("solo", clock=lambda: loop.time() * (1 - 1e-12))
        await c.until(lambda: c.covered({32}), "every shard owned")
        # (a fresh deployment's owner publishes its shards renew_deadline after taking them)
        changes = c.changes["solo"]
        await c.until(lambda: bool(changes) and len(changes[-1]) == SHARDS, "on_change(all)")
        api = c.apis["solo"]
        thawed = asyncio.Event()
        call_api = api.call_api
        renewals: list[str] = []

        async def gated(resource_path: str, method: str, *args: Any, **kwargs: Any) -> Any:
            if method == "PUT" and "-shard-" in resource_path:
                renewals.append(resource_path)
            await thawed.wait()
            return await call_api(resource_path, method, *args, **kwargs)

        monkeypatch.setattr(api, "call_api", gated)
        # (owned_shards() reads the clock; on_change is the shard manager letting go)
        let_go = c.until(lambda: c.changes["solo"][-1] == frozenset(), "on_change(nothing)")
        await asyncio.wait_for(let_go, RENEW_DEADLINE + RETRY_PERIOD)
        assert not replica.owned_shards()
        assert len(renewals) == SHARDS  # one renewal that hung per shard, and no other
        thawed.set()


async def test_joining_replica_gets_its_fair_share(sim: KubeSim) -> None:
    async with cluster(sim) as c:
        for i in range(3):
            await c.start(f"replica-{i}")
        await c.until(lambda: c.covered({10, 11}), "balanced over three")
        shed_before = {i: r.owned_shards() for i, r in c.replicas.items()}
        newcomer = await c.start("replica-3")
        await c.until(lambda: c.covered({8}), "balanced over four")
        assert len(newcomer.owned_shards()) == 8
        assert c.changes["replica-3"][-1] == newcomer.owned_shards()
        assert c.owners_per_key() == [1] * len(KEYS)
        for identity, owned in shed_before.items():
            # the others only gave shards away: nothing was reshuffled among them
            assert c.replicas[identity].owned_shards() <= owned


async def test_cancel_releases_every_lease(sim: KubeSim) -> None:
    async with cluster(sim) as c:
        replica = await c.start("solo")
        await c.until(lambda: c.covered({32}), "every shard owned")
        await c.stop("solo")
        assert replica.owned_shards() == frozenset()
    assert set(c.holders().values()) == {""}
    assert member_leases(sim) == set()  # deleted: an identity is not used again


async def test_a_replica_that_leaves_is_no_member_once_its_lease_is_gone(sim: KubeSim) -> None:
    """The shards a replica released on leaving are taken at the survivors' next balancing
    rounds, not a lease duration later: its deleted member Lease counts it out at once."""
    async with cluster(sim) as c:
        for i in range(3):
            await c.start(f"replica-{i}")
        await c.until(lambda: c.covered({10, 11}), "balanced over three")
        await c.stop("replica-1")  # graceful: its shards released, its member Lease deleted
        await c.until(lambda: c.covered({16}), "balanced over two", timeout=LEASE_DURATION / 2)
        for replica in c.replicas.values():
            assert replica.members == {"replica-0", "replica-2"}


def member_leases(sim: KubeSim) -> set[str]:
    """The names of the member Leases stored."""
    names = {lease["metadata"]["name"] for lease in sim.list("leases", NS)}
    return {n for n in names if n.startswith(f"{NAME}-member-")}


async def test_the_member_lease_of_a_replica_gone_without_a_word_is_deleted(
    sim: KubeSim,
) -> None:
    """A replica that crashed leaves its member Lease behind (each restart a new identity):
    a live member deletes it once it was unchanged for STALE_MEMBER_DURATIONS lease
    durations by its clock, never sooner, and never a live replica's."""
    loop = asyncio.get_running_loop()
    async with cluster(sim) as c:
        await c.start("ghost", release_on_cancel=False)
        await c.start("live")
        await c.until(lambda: c.covered({16}), "balanced over two")
        await c.stop("ghost")  # a crash: nothing released, nothing deleted
        crashed = loop.time()
        assert member_leases(sim) == {f"{NAME}-member-ghost", f"{NAME}-member-live"}
        await c.until(lambda: member_leases(sim) == {f"{NAME}-member-live"}, "ghost's deleted")
        gone = loop.time()
        await c.start("late")
        await c.until(lambda: c.covered({16}), "balanced over live and late")
        assert member_leases(sim) == {f"{NAME}-member-live", f"{NAME}-member-late"}
    stale_after = STALE_MEMBER_DURATIONS * LEASE_DURATION
    # its last renewal was at most one retry_period before the crash; a balancing round
    # comes every retry_period (+20% jitter)
    assert crashed - RETRY_PERIOD + stale_after <= gone <= crashed + stale_after + 2 * RETRY_PERIOD


def test_which_shard_owns_a_key_is_public() -> None:
    """``aioinformer.shard_of`` is the stable hash every replica agrees on, and
    ``ShardManager.shard_for`` applies it with the manager's shard count."""
    import aioinformer

    assert aioinformer.shard_of is shard_of
    m = ShardManager(object(), name=NAME, namespace=NS, identity="a", shards=7)  # type: ignore[arg-type]
    assert [m.shard_for(k) for k in KEYS[:20]] == [shard_of(k, 7) for k in KEYS[:20]]
