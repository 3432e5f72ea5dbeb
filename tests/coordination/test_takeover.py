"""A replica that takes over (the leader Lease, or a shard) reconciles only once its caches
caught up with the Lease write that made it the holder: every write its predecessor made
came before that write, so none is missing from what it reads (the simulation's seed 164:
a new leader whose pods watch lagged created its predecessor's children again).

On virtual time (looptime), with client-go's durations; the server delivers every watch
event late (a slow watch cache), so the standby's caches lag its predecessor's writes."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

from aioinformer import ControllerOptions, LeaderElection, Manager, Sharding
from aioinformer.testing import KubeSim, eventually
from tests.support import child_pod, released_lease

pytestmark = pytest.mark.looptime

NS = "default"
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
LAG = 8.0
"""Seconds every watch event reaches the informers after its commit: longer than a
standby takes to take a released Lease (at most 2.2 retry periods)."""
KINDS = ("elected", "sharded")


def operator(api: Any, identity: str, kind: str, made: asyncio.Event) -> Manager:
    """One child pod per ConfigMap, made when the pods cache holds none (no read-your-writes:
    the predecessor's own cache plays no part)."""
    coordination: dict[str, Any] = (
        {"leader_election": LeaderElection("op", NS, identity, **TIMING)}
        if kind == "elected"
        else {"sharding": Sharding("op", NS, identity, 1, caches="full", **TIMING)}
    )
    loop = asyncio.get_running_loop()
    manager = Manager(api, pipeline="loop", clock=loop.time, **coordination)
    configs = manager.informer("v1", "configmaps", namespace=NS)
    pods = manager.informer("v1", "pods", namespace=NS)

    async def reconcile(key: str) -> None:
        config = configs.snapshot().get(key)
        if config is None or pods.snapshot().by_index("controller", config.uid):
            return
        await manager.client.create(child_pod(config.name, NS), owner=config)
        made.set()

    manager.controller(
        "children", reconcile, primary=configs, owns=[pods],
        options=ControllerOptions(freshness=False),
    )  # fmt: skip
    return manager


@pytest.mark.parametrize("kind", KINDS)
async def test_a_new_holder_waits_for_its_caches_to_see_its_predecessors_writes(
    sim: KubeSim, kind: str
) -> None:
    """a holds the Lease and makes the ConfigMap's child; it stops (releasing the Lease)
    at once; b takes the Lease before its pods watch delivered that child, and must not
    make a second one."""
    random.seed(26)  # the jitter of the Lease loops
    sim.mvcc.clock = sim.faults.clock = asyncio.get_running_loop().time  # (the lag's clock)
    lease = "op" if kind == "elected" else "op-shard-0"
    sim.create("leases", released_lease(lease, NS), NS)  # (taken at once)
    made_a, made_b = asyncio.Event(), asyncio.Event()
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = operator(api_a, "a", kind, made_a)
        b = operator(api_b, "b", kind, made_b)
        async with contextlib.AsyncExitStack() as running_a:
            await running_a.enter_async_context(a)
            await eventually(lambda: holder(sim, lease) == "a", "a holds the Lease", timeout=60)
            async with b:
                await eventually(
                    lambda: a.controllers[0].running and b.factory.informers
                    and all(i.has_synced for i in b.factory.informers),
                    "a reconciles and b's caches hold their initial lists (before the lag)",
                    timeout=60,
                )  # fmt: skip
                sim.faults.delay_watch_events(LAG)
                sim.create("configmaps", {"metadata": {"name": "x"}}, NS)
                await made_a.wait()
                await running_a.aclose()  # a stops at once: its Lease released
                await eventually(lambda: holder(sim, lease) == "b", "b holds it", timeout=60)
                b_pods = b.informer("v1", "pods", namespace=NS)
                await eventually(
                    lambda: b.controllers[0].statistics().reconciles >= 1 and b_pods.snapshot(),
                    "b reconciled the ConfigMap, and its cache holds a's child",
                    timeout=6 * LAG,
                )  # (a duplicate, if any, was made at that reconcile)
                children = [p["metadata"]["name"] for p in sim.list("pods", NS)]
    assert not made_b.is_set() and len(children) == 1, children


def holder(sim: KubeSim, name: str) -> str | None:
    with contextlib.suppress(Exception):
        return str(sim.get("leases", name, NS)["spec"].get("holderIdentity") or "")
    return None
