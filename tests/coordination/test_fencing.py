"""Two replicas never act on the same key at once: every write of the ledger operator is
recorded in the server's order, and no replica writes a key while another holds its Lease:
across a graceful shutdown (the running reconciles finish, then the Lease is released), a
replica cut off from its renewals (its reconciles cancelled the instant its Lease lapses
by its own clock, before anyone may take over), a frozen-then-resumed replica (the writes
its resumed reconciles try are refused) and shard rebalancing (a shard's reconciles
cancelled before it is handed over), for the leader-elected and the sharded manager.

On virtual time (looptime): the replicas, their informers and KubeSim share the test's
loop and its clock, so the Leases have client-go's durations (15 s, renewed within 10 s,
every 2 s), no test waits for one, and the instants asserted are exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from aioinformer import ControllerOptions, LeaderElection, Manager, Reconciler, Sharding
from aioinformer.testing import KubeSim, eventually
from tests.coordination.freeze import Freezer
from tests.coordination.history import LeaseRequest, lease_requests, renewed, same_instant
from tests.coordination.ledger import (
    KEYS,
    LEASE_TIMING,
    NAMESPACE,
    WORK,
    Ledger,
    Reconciles,
    build,
    leader_lease,
    ledger_objects,
    shard_lease,
)
from tests.coordination.proxy import FaultProxy

pytestmark = pytest.mark.looptime

SHARDS = 6
KINDS = ["elected", "sharded"]
LEASE_OF = {"elected": leader_lease, "sharded": shard_lease(SHARDS)}
LEASE_DURATION = LEASE_TIMING["lease_duration"]
RENEW_DEADLINE = LEASE_TIMING["renew_deadline"]
RETRY_PERIOD = LEASE_TIMING["retry_period"]
SOON = 120.0  # (virtual) seconds a hand-over may take at most: several Lease durations


@dataclass
class Replica:
    manager: Manager
    reconciles: Reconciles
    requests: list[LeaseRequest]
    """Its Lease requests (when each was sent: its deadlines count from there)."""

    def released(self, lease: str) -> float | None:
        """When it sent its release of ``lease`` (None: it did not)."""
        return next((r.sent for r in self.requests if r.lease == lease and r.holder == ""), None)

    @property
    def in_flight(self) -> int:
        return self.manager.controllers[0].statistics().in_flight

    def keys(self) -> set[str]:
        """The keys this replica holds now."""
        m = self.manager
        if m.elector is not None:
            return set(KEYS) if m.elector.is_leader else set()
        assert m.shards is not None
        return {k for k in KEYS if m.shards.owns(f"{NAMESPACE}/{k}")}


def replica(kind: str, api: Any, identity: str, reconcile: Reconciler | None = None) -> Replica:
    """A replica running the ledger operator (or ``reconcile`` on the ledger's ConfigMaps),
    leader-elected or sharded, everything on the loop and its clock."""
    loop = asyncio.get_running_loop()
    requests = lease_requests(api)
    if kind == "elected":
        le = LeaderElection("ledger-leader", NAMESPACE, identity, **LEASE_TIMING)
        m = Manager(api, leader_election=le, pipeline="loop", clock=loop.time)
    else:
        sh = Sharding("ledger", NAMESPACE, identity, SHARDS, caches="full", **LEASE_TIMING)
        m = Manager(api, sharding=sh, pipeline="loop", clock=loop.time)
    if reconcile is None:
        return Replica(m, build(m), requests)
    cms = m.informer("v1", "configmaps", namespace=NAMESPACE, label_selector="role=ledger")
    m.controller("other", reconcile, primary=cms, options=ControllerOptions(concurrency=10))
    return Replica(m, Reconciles(), requests)


@contextlib.asynccontextmanager
async def recorded(sim: KubeSim, kind: str) -> AsyncIterator[Ledger]:
    """The ledger's namespace and ConfigMaps, and a ledger recording the block."""
    sim.create("namespaces", {"metadata": {"name": NAMESPACE}})
    for obj in ledger_objects():
        sim.create("configmaps", obj, NAMESPACE)
    ledger = Ledger(LEASE_OF[kind])
    async with sim.api_client() as api, ledger.recording(api):
        yield ledger


def shard_lease_of(key: str) -> str:
    return LEASE_OF["sharded"](key)


async def balanced(a: Replica, b: Replica) -> None:
    """Until the two sharded replicas hold half the shards each."""
    assert a.manager.shards is not None and b.manager.shards is not None
    sa, sb = a.manager.shards, b.manager.shards
    await eventually(
        lambda: len(sa.owned_shards()) == len(sb.owned_shards()) == SHARDS // 2,
        "the shards split between a and b",
        timeout=SOON,
    )


async def a_then_b(
    stack: contextlib.AsyncExitStack,
    ledger: Ledger,
    a: Replica,
    b: Replica,
    *,
    as_a: contextlib.AbstractContextManager[Any] | None = None,
) -> None:
    """a starts (its tasks created in ``as_a``) and writes every key, then b starts (both
    run until ``stack`` closes); sharded, until they split the shards."""
    with as_a or contextlib.nullcontext():
        await stack.enter_async_context(a.manager)
    await eventually(lambda: ledger.writes_every_key("a"), "a writes", timeout=SOON)
    await stack.enter_async_context(b.manager)
    if a.manager.shards is not None:
        await balanced(a, b)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_graceful_shutdown_finishes_the_reconciles_then_hands_over(
    sim: KubeSim, kind: str
) -> None:
    """a runs alone (leads, or holds every shard); b starts; a is stopped (a rolling
    update's SIGTERM) while its reconciles are in the middle of their writes: they finish
    (or, sharded, are cancelled as their shard is handed over to b meanwhile) while a still
    holds the Leases, which it releases only then; b takes over at once, without waiting
    the Leases out."""
    loop = asyncio.get_running_loop()
    async with recorded(sim, kind) as ledger, contextlib.AsyncExitStack() as stack:
        api_a = await stack.enter_async_context(sim.api_client())
        api_b = await stack.enter_async_context(sim.api_client())
        a, b = replica(kind, api_a, "a"), replica(kind, api_b, "b")
        async with a.manager:
            await eventually(lambda: ledger.writes_every_key("a"), "a writes", timeout=SOON)
            await stack.enter_async_context(b.manager)
            await eventually(
                lambda: a.in_flight == len(a.keys()) > 0, "a's reconciles in the middle"
            )
            running = a.keys()
            stopping = loop.time()
        stopped = loop.time()
        await eventually(lambda: ledger.writes_every_key("b"), "b writes", timeout=SOON)
    assert ledger.overlaps() == []
    done = a.reconciles
    drained = {k for k, at in done.finished if at > stopping}
    handed_over = {k for k, at in done.cancelled if at >= stopping}
    assert drained | handed_over == running  # and the stop waited for them
    assert stopped > stopping
    for key, at in done.cancelled:
        # only a hand-over cancels a reconcile: its shard released by a at that instant
        assert kind == "sharded", done.cancelled
        released = a.released(shard_lease_of(key))
        assert released is not None and same_instant(released, at), (key, at, released)
    for lease in {LEASE_OF[kind](k) for k in KEYS}:
        released = ledger.released(lease, "a")
        assert released is not None, lease
        last_write = max(w.rv for w in ledger.by_writer("a") if LEASE_OF[kind](w.key) == lease)
        assert released.rv > last_write  # the Lease went only after a's last write
    if kind == "elected":
        assert done.cancelled == [] and drained == set(KEYS)
        release = a.released("ledger-leader")
        assert release is not None and release >= max(at for _, at in done.finished)
    first_of_b = min(w.at for w in ledger.by_writer("b", after=stopping))
    # released, not waited out: b takes a Lease at its next try
    assert first_of_b - stopped < LEASE_DURATION - RETRY_PERIOD


@pytest.mark.parametrize("kind", KINDS)
async def test_a_replica_cut_off_from_its_renewals_stops_the_instant_its_lease_lapses(
    sim: KubeSim, kind: str
) -> None:
    """a's Lease requests hang (its other requests go through). The instant its last
    renewal of a Lease is ``renew_deadline`` old, a stops holding it: its running
    reconciles of the Lease's keys end then (the write they try is refused, or they are
    cancelled) and a writes none of them again; b takes the keys over only
    ``lease_duration`` after it last saw the Lease change."""
    loop = asyncio.get_running_loop()
    async with recorded(sim, kind) as ledger, contextlib.AsyncExitStack() as stack:
        proxy = await stack.enter_async_context(FaultProxy(sim))
        api_a = await stack.enter_async_context(proxy.api_client())
        api_b = await stack.enter_async_context(sim.api_client())
        a, b = replica(kind, api_a, "a"), replica(kind, api_b, "b")
        await a_then_b(stack, ledger, a, b)
        mine = a.keys()
        await eventually(lambda: a.in_flight > 0, "a's reconciles in flight")
        held = loop.time()
        proxy.hold()
        await eventually(
            lambda: {w.key for w in ledger.by_writer("b", after=held)} >= mine,
            "b writes a's keys",
            timeout=SOON,
        )
        assert a.keys() == set()
        if a.manager.elector is not None:
            assert not a.manager.elector.is_leader and a.manager.elector.leadership_lost.is_set()
        reconnected = loop.time()
        proxy.release()
    assert proxy.held > 0
    assert ledger.overlaps() == []
    done = a.reconciles
    # a reconcile running then is cancelled, or the write it tries then is refused
    ended = [(k, at) for k, at in done.cancelled + done.refused if held < at <= reconnected]
    assert ended, "no reconcile of a was running when it lost its keys"
    for key in mine:
        lease = LEASE_OF[kind](key)
        last = renewed(a.requests, lease, "a", by=held)
        lapsed = last + RENEW_DEADLINE
        assert all(same_instant(at, lapsed) for k, at in ended if k == key), (key, lapsed, ended)
        late = [
            w for w in ledger.by_writer("a") if w.key == key and lapsed + 2e-6 < w.at <= reconnected
        ]
        assert late == []
        first_of_b = min(w.at for w in ledger.by_writer("b", after=held) if w.key == key)
        assert first_of_b >= last + LEASE_DURATION


@pytest.mark.parametrize("kind", KINDS)
async def test_a_lost_lease_cancels_the_running_reconciles_at_once(sim: KubeSim, kind: str) -> None:
    """a's reconciles wait for something that never comes, and its Lease renewals hang:
    the instant a Lease lapses by a's clock (``renew_deadline`` after its last renewal)
    the reconciles of its keys are cancelled, not a moment later (the manager reacts to
    the elector's ``leadership_lost`` and the shard manager's ``on_change``; it does not
    poll), and for sharding the others only when their own shard lapses."""
    loop = asyncio.get_running_loop()
    started: dict[str, float] = {}
    cancelled: dict[str, float] = {}

    async def reconcile(key: str) -> None:
        started[key] = loop.time()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled[key] = loop.time()
            raise

    async with recorded(sim, kind), FaultProxy(sim) as proxy:
        async with proxy.api_client() as api:
            a = replica(kind, api, "a", reconcile=reconcile)
            async with a.manager:
                await eventually(  # (a fresh deployment: after a renew deadline)
                    lambda: len(started) == len(KEYS), "every key reconciling", timeout=SOON
                )
                held = loop.time()
                proxy.hold()
                await eventually(lambda: len(cancelled) == len(KEYS), "every reconcile ended")
                proxy.release()
    lapses = {}
    for key in started:
        lease = LEASE_OF[kind](key.rpartition("/")[2])
        lapses[key] = renewed(a.requests, lease, "a", by=held) + RENEW_DEADLINE
    assert cancelled.keys() == lapses.keys()
    assert all(same_instant(cancelled[k], lapses[k]) for k in lapses), (cancelled, lapses)
    assert all(started[k] <= held for k in started)


async def test_shard_rebalancing_hands_keys_over_without_overlap(sim: KubeSim) -> None:
    """a holds every shard; b joins: a stops owning its surplus, cancels the running
    reconciles of those shards' keys, and only then releases their Leases to b; then a
    leaves gracefully and b takes the rest."""
    async with recorded(sim, "sharded") as ledger, contextlib.AsyncExitStack() as stack:
        api_a = await stack.enter_async_context(sim.api_client())
        api_b = await stack.enter_async_context(sim.api_client())
        a, b = replica("sharded", api_a, "a"), replica("sharded", api_b, "b")
        async with a.manager:
            await eventually(lambda: ledger.writes_every_key("a"), "a writes", timeout=SOON)
            await stack.enter_async_context(b.manager)  # b joins: a hands half over
            await balanced(a, b)
            given = b.keys()
            await eventually(
                lambda: {w.key for w in ledger.by_writer("b")} >= given, "b writes its keys"
            )
        await eventually(lambda: ledger.writes_every_key("b"), "b writes", timeout=SOON)
    assert ledger.overlaps() == []
    for key, at in a.reconciles.cancelled:
        released = a.released(shard_lease_of(key))
        assert released is not None and same_instant(released, at), (key, at, released)
    for key in given:
        released = ledger.released(shard_lease_of(key), "a")
        assert released is not None
        assert all(w.rv < released.rv for w in ledger.by_writer("a") if w.key == key)
        assert min(w.rv for w in ledger.by_writer("b") if w.key == key) > released.rv


async def test_a_hand_over_lets_cancelled_reconciles_clean_up_and_logs_no_error(
    sim: KubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    """b joins while a's reconciles of every key run: the shards a hands over have their
    reconciles cancelled once (not aborted, then cancelled again mid-cleanup), their
    cleanup (0.5 s) runs to its end within the hand-over's grace (``min(1 s,
    renew_deadline / 4)``) before the Lease goes, and a hand-over that ended cleanly logs
    at INFO, never WARNING or ERROR."""
    loop = asyncio.get_running_loop()
    started: dict[str, float] = {}
    cleaned: dict[str, float] = {}

    async def reconcile(key: str) -> None:
        started[key] = loop.time()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # a cleanup: a second cancellation would cut it
            cleaned[key] = loop.time()
            raise

    caplog.set_level("INFO", logger="aioinformer")
    async with recorded(sim, "sharded"), contextlib.AsyncExitStack() as stack:
        api_a = await stack.enter_async_context(sim.api_client())
        api_b = await stack.enter_async_context(sim.api_client())
        a = replica("sharded", api_a, "a", reconcile=reconcile)
        b = replica("sharded", api_b, "b", reconcile=reconcile)
        await stack.enter_async_context(a.manager)
        # (a fresh deployment's first shard owner starts renew_deadline after it took them)
        first = RENEW_DEADLINE + LEASE_TIMING["retry_period"] + 5
        await eventually(lambda: len(started) == len(KEYS), "a reconciles every key", timeout=first)
        await stack.enter_async_context(b.manager)
        await balanced(a, b)
        handed = set(KEYS) - a.keys()
        assert handed
        loud = [
            r.getMessage()
            for r in caplog.records
            if r.levelno >= logging.WARNING and r.name in ("aioinformer.controller",
                                                           "aioinformer.manager")
        ]  # fmt: skip
        assert loud == []
        for key in handed:
            cleaned_at = cleaned[f"{NAMESPACE}/{key}"]
            released = a.released(shard_lease_of(key))
            assert released is not None and cleaned_at <= released, (key, cleaned_at, released)
    assert "abandoned" not in caplog.text


@pytest.mark.parametrize("kind", KINDS)
async def test_a_frozen_then_resumed_replica_does_not_write_again(sim: KubeSim, kind: str) -> None:
    """a (the leader, or the holder of half the shards) is frozen as SIGSTOP freezes a
    process, half-way between two writes of its reconciles and right after a renewal; b
    takes its keys over once the Leases expired in its eyes; a is resumed (SIGCONT): its
    clock moved on past ``renew_deadline``, so its resumed reconciles end without writing
    (the write they try next is refused, nothing sent, or they are cancelled once a
    notices), and it lets go."""
    loop = asyncio.get_running_loop()
    freezer = Freezer()
    with freezer.installed():
        async with recorded(sim, kind) as ledger, contextlib.AsyncExitStack() as stack:
            api_a = await stack.enter_async_context(sim.api_client())
            api_b = await stack.enter_async_context(sim.api_client())
            a, b = replica(kind, api_a, "a"), replica(kind, api_b, "b")
            await a_then_b(stack, ledger, a, b, as_a=freezer.replica("a"))
            mine = a.keys()
            lease = LEASE_OF[kind](sorted(mine)[0])
            while True:  # right after a renewal, half-way between two writes (WORK apart,
                # on the renewals' grid) of running reconciles: they sleep, and wake before
                # a's renewal loop does
                seen = len(ledger.renewals(lease, "a"))
                await eventually(lambda n=seen: len(ledger.renewals(lease, "a")) > n, "renewal")
                last = ledger.renewals(lease, "a")[-1].at
                await asyncio.sleep(last + WORK / 2 - loop.time())
                if a.in_flight > 0:
                    break
            frozen = loop.time()
            freezer.freeze("a")
            await eventually(
                lambda: {w.key for w in ledger.by_writer("b", after=frozen)} >= mine,
                "b writes a's keys",
                timeout=SOON,
            )
            thawed = loop.time()
            freezer.thaw("a")
            writes_of_b = len(ledger.by_writer("b"))
            await eventually(lambda: len(ledger.by_writer("b")) > writes_of_b + 20, "b goes on")
            if a.manager.elector is not None:
                assert not a.manager.elector.is_leader
    assert freezer.stopped_steps > 0
    assert ledger.overlaps() == []
    done = a.reconciles
    assert [k for k, at in done.finished if frozen < at <= thawed] == []
    ended = {k for k, at in done.refused + done.cancelled if same_instant(at, thawed)}
    assert ended, "no reconcile of a was resumed"
    if kind == "elected":
        assert ledger.by_writer("a", after=frozen) == []  # b leads on
        # the reconciles woke first: their writes were refused before a stepped down
        assert {k for k, at in done.refused if same_instant(at, thawed)}, done
