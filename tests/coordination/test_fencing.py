"""Two replicas never act on the same key at once: every write of the ledger operator is
recorded in the server's order, and no replica writes a key after another took it over —
across a graceful shutdown, lost leadership (renewals cut off), a frozen-then-resumed
replica (a real process stopped with SIGSTOP), and shard rebalancing, for the
leader-elected and the sharded manager."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aioinformer import LeaderElection, Manager, Sharding
from aioinformer.testing import KubeSim, eventually
from tests.coordination.ledger import (
    FAST,
    KEYS,
    NAMESPACE,
    Ledger,
    build,
    leader_lease,
    ledger_objects,
    shard_lease,
)
from tests.coordination.proxy import LeaseStaller
from tests.support import REPO

TIMING = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


def elected(api: Any, identity: str) -> Manager:
    le = LeaderElection("ledger-leader", NAMESPACE, identity, **TIMING)
    m = Manager(api, watch_options=FAST, leader_election=le)
    build(m)
    for ctl in m.controllers:
        ctl.shutdown_timeout = 2.0
    return m


def sharded(api: Any, identity: str, shards: int = 6) -> Manager:
    sh = Sharding("ledger", NAMESPACE, identity, shards, **TIMING)
    m = Manager(api, watch_options=FAST, sharding=sh)
    build(m)
    return m


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(manager.run())
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait([task])


async def setup(sim: KubeSim) -> None:
    sim.create("namespaces", {"metadata": {"name": NAMESPACE}})
    for obj in ledger_objects():
        sim.create("configmaps", obj, NAMESPACE)


MAKE = {"elected": elected, "sharded": sharded}
LEASE_OF = {"elected": leader_lease, "sharded": shard_lease(6)}


@pytest.mark.parametrize("kind", ["elected", "sharded"])
async def test_a_graceful_shutdown_hands_over_without_overlap(sim: KubeSim, kind: str) -> None:
    """a runs alone (leads, or holds every shard); b starts; a gets SIGTERM's cancellation
    (a rolling update): its long reconciles finish or are cancelled before its Leases are
    released, and b takes every key over."""
    await setup(sim)
    ledger = Ledger(LEASE_OF[kind])
    async with sim.api_client() as watch_api, ledger.recording(watch_api):
        async with sim.api_client() as api_a, sim.api_client() as api_b:
            a, b = MAKE[kind](api_a, "a"), MAKE[kind](api_b, "b")
            async with running(a) as task_a:
                await eventually(lambda: writes_every_key(ledger, "a"), "a", timeout=20)
                async with running(b):
                    task_a.cancel()
                    await asyncio.wait([task_a])
                    await eventually(lambda: writes_every_key(ledger, "b"), "b", timeout=20)
    assert ledger.overlaps() == []
    assert ledger.overlap_seconds() == 0.0


@pytest.mark.parametrize("kind", ["elected", "sharded"])
async def test_a_replica_cut_off_from_its_renewals_stops_before_anyone_takes_over(
    sim: KubeSim, kind: str
) -> None:
    """a's Lease renewals hang (its other requests go through): a stops acting on its keys
    when its renewals are past renew_deadline, before b may take them (lease_duration)."""
    await setup(sim)
    ledger = Ledger(LEASE_OF[kind])
    async with sim.api_client() as watch_api, ledger.recording(watch_api):
        async with LeaseStaller(sim) as proxy, proxy.api_client() as api_a:
            async with sim.api_client() as api_b:
                a, b = MAKE[kind](api_a, "a"), MAKE[kind](api_b, "b")
                async with running(a):
                    await eventually(lambda: writes_every_key(ledger, "a"), "a", timeout=20)
                    async with running(b):
                        proxy.hold()
                        await eventually(lambda: writes_every_key(ledger, "b"), "b", timeout=30)
                        if a.elector is not None:
                            assert not a.elector.is_leader
                        proxy.release()
    assert proxy.held > 0
    assert ledger.overlaps() == []
    assert ledger.overlap_seconds() == 0.0


def writes_every_key(ledger: Ledger, writer: str) -> bool:
    return {w.key for w in ledger.by_writer(writer)} >= set(KEYS)


async def test_shard_rebalancing_hands_keys_over_without_overlap(sim: KubeSim) -> None:
    await setup(sim)
    ledger = Ledger(LEASE_OF["sharded"])
    async with sim.api_client() as watch_api, ledger.recording(watch_api):
        async with sim.api_client() as api_a, sim.api_client() as api_b:
            a = sharded(api_a, "a")
            async with running(a) as task_a:
                await eventually(lambda: writes_every_key(ledger, "a"), "a", timeout=20)
                b = sharded(api_b, "b")
                async with running(b):  # b joins: a hands some shards over
                    await eventually(
                        lambda: bool(ledger.by_writer("b")), "b's first write", timeout=20
                    )
                    task_a.cancel()  # then a leaves gracefully: b takes the rest
                    await asyncio.wait([task_a])
                    await eventually(lambda: writes_every_key(ledger, "b"), "b", timeout=20)
    assert ledger.overlaps() == []


@pytest.mark.parametrize("kind", ["elected", "sharded"])
async def test_a_frozen_then_resumed_replica_does_not_write_again(
    sim: KubeSim, tmp_path: Path, kind: str
) -> None:
    """Two real ``run`` processes; a (the leader, or holder of every shard before b
    starts) is frozen (SIGSTOP) past its Leases, b takes its keys over, then a is resumed
    (SIGCONT): its clock moved on, so its in-flight reconciles are refused their writes and
    it lets go."""
    await setup(sim)
    kubeconfig = tmp_path / "kc"
    sim.write_kubeconfig(kubeconfig)
    ledger = Ledger(LEASE_OF[kind])
    coordination = (
        ["--leader-election", "ledger-leader"] if kind == "elected" else ["--shards", "6"]
    )
    args = [
        "run", str(REPO / "tests" / "coordination" / "ledger.py") + ":build",
        "--kubeconfig", str(kubeconfig), "--metrics-port", "0", "--metrics-host", "127.0.0.1",
        *coordination, "--lease-namespace", NAMESPACE,
        "--lease-duration", "1.5", "--renew-deadline", "1.0", "--retry-period", "0.2",
    ]  # fmt: skip
    procs: list[asyncio.subprocess.Process] = []
    try:
        async with sim.api_client() as watch_api, ledger.recording(watch_api):
            for who in ("a", "b"):
                procs.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "aioinformer",
                        *args,
                        "--identity",
                        who,
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                        cwd=REPO,
                    )
                )
                if who == "a":
                    await eventually(
                        lambda: len(ledger.by_writer("a")) > 20, "a leading", timeout=30
                    )
            a, _ = procs
            a.send_signal(signal.SIGSTOP)
            await eventually(lambda: writes_every_key(ledger, "b"), "b", timeout=30)
            a.send_signal(signal.SIGCONT)
            writes_of_b = len(ledger.by_writer("b"))
            await eventually(lambda: len(ledger.by_writer("b")) > writes_of_b + 50, "b goes on")
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGCONT)
                p.kill()
            await p.wait()
    assert ledger.overlaps() == []
    assert ledger.overlap_seconds() == 0.0
