"""What a sharded operator shows of its shards: each replica's ``/metrics`` (the shards it
holds, which are ready, their buckets) and the shard Leases (the ready and buckets
annotations the holder writes with its renewals, read back as the ring ``top
--lease-name`` shows), through a graceful leave. Two Managers with sharded caches (the
default) in one process, on KubeSim, on virtual time."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aioinformer import ControllerOptions, Manager, Sharding
from aioinformer._coordination.lease import LeaseClient
from aioinformer._coordination.ring import Ring, read_ring
from aioinformer._coordination.sharding import BUCKETS_ANNOTATION, READY_ANNOTATION
from aioinformer.testing import KubeSim, eventually

pytestmark = pytest.mark.looptime

NS = "default"
SHARDS = 4
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
BUCKETS = ["00-3f", "40-7f", "80-bf", "c0-ff"]


def replica(api: Any, identity: str, caches: str = "sharded") -> Manager:
    loop = asyncio.get_running_loop()
    sharding = Sharding("op", NS, identity, SHARDS, caches=caches, **TIMING)  # type: ignore[arg-type]
    manager = Manager(api, pipeline="loop", clock=loop.time, sharding=sharding)
    configs = manager.informer("v1", "configmaps", namespace=NS)
    pods = manager.informer("v1", "pods", namespace=NS)

    async def reconcile(key: str) -> None:
        return None

    manager.controller("c", reconcile, primary=configs, owns=[pods],
                       options=ControllerOptions(freshness=False))  # fmt: skip
    return manager


def scraped(manager: Manager) -> dict[str, dict[str, float]]:
    """``shard_owned``, ``shard_ready`` by shard, and ``shard_info`` by (shard, buckets)."""
    found: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(manager.metrics.render().decode()):
        for sample in family.samples:
            if sample.name in ("aioinformer_shard_owned", "aioinformer_shard_ready"):
                found.setdefault(sample.name, {})[sample.labels["shard"]] = sample.value
            elif sample.name == "aioinformer_shard_info":
                key = f"{sample.labels['shard']}:{sample.labels['buckets']}"
                found.setdefault(sample.name, {})[key] = sample.value
    return found


async def ring(api: Any) -> Ring:
    return read_ring(await LeaseClient(api, NS).list(), "op", datetime.now(UTC))


@contextlib.asynccontextmanager
async def _cancelled_at_exit(task: asyncio.Task[None]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        task.cancel()
        await asyncio.wait([task])


def ready_shards(manager: Manager) -> set[int]:
    return {int(s) for s, v in scraped(manager).get("aioinformer_shard_ready", {}).items() if v}


async def test_metrics_and_leases_show_each_replicas_shards_and_readiness(sim: KubeSim) -> None:
    random.seed(33)
    for i in range(8):
        sim.create("configmaps", {"metadata": {"name": f"p-{i}"}}, NS)
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = replica(api_a, "a"), replica(api_b, "b")
        running_b = asyncio.create_task(b.run())
        async with a, _cancelled_at_exit(running_b):

            async def split() -> bool:
                shown = await ring(api_a)
                return (
                    shown.ready == SHARDS
                    and {s.holder for s in shown.shards} == {"a", "b"}
                    and ready_shards(a) | ready_shards(b) == set(range(SHARDS))
                )

            await eventually(split, "both replicas hold ready shards, on their Leases too",
                             timeout=120, interval=0.5)  # fmt: skip
            shown = await ring(api_a)
            assert shown.members == ["a", "b"]
            assert [s.buckets for s in shown.shards] == BUCKETS
            assert not any(s.expired for s in shown.shards)
            for name, m in (("a", a), ("b", b)):
                metrics = scraped(m)
                held = {s.shard for s in shown.shards if s.holder == name}
                owned = metrics["aioinformer_shard_owned"]
                assert owned == {str(s): float(s in held) for s in range(SHARDS)}
                assert ready_shards(m) == held  # (no more shards moving)
                assert metrics["aioinformer_shard_info"] == {f"{s}:{BUCKETS[s]}": 1.0 for s in held}
            assert ready_shards(a).isdisjoint(ready_shards(b))

            # b leaves gracefully: its Leases are released without the ready annotation
            released: list[dict[str, Any]] = []
            b_shards = {s.shard for s in shown.shards if s.holder == "b"}
            running_b.cancel()
            await asyncio.wait([running_b])
            for s in b_shards:
                lease = sim.get("leases", f"op-shard-{s}", NS)
                if not lease["spec"].get("holderIdentity"):
                    released.append(lease)
                    assert READY_ANNOTATION not in lease["metadata"].get("annotations", {})
            assert released, "b released none of its Leases"

            async def a_alone() -> bool:
                shown = await ring(api_a)
                return shown.ready == SHARDS and {s.holder for s in shown.shards} == {"a"}

            await eventually(a_alone, "a takes b's shards and gets them ready",
                             timeout=120, interval=0.5)  # fmt: skip
            assert ready_shards(a) == set(range(SHARDS))
            assert (await ring(api_a)).members == ["a"]
            for s in range(SHARDS):
                lease = sim.get("leases", f"op-shard-{s}", NS)
                annotations = lease["metadata"]["annotations"]
                assert annotations[READY_ANNOTATION] == "true"
                assert annotations[BUCKETS_ANNOTATION] == BUCKETS[s]


async def test_full_caches_show_readiness_without_buckets(sim: KubeSim) -> None:
    random.seed(34)
    async with sim.api_client() as api, replica(api, "solo", caches="full") as solo:

        async def all_ready() -> bool:
            return (await ring(api)).ready == SHARDS and ready_shards(solo) == set(range(SHARDS))

        await eventually(all_ready, "every shard ready on the one replica", timeout=120,
                         interval=0.5)  # fmt: skip
        shown = await ring(api)
        assert [s.buckets for s in shown.shards] == [""] * SHARDS
        assert scraped(solo)["aioinformer_shard_info"] == {f"{s}:": 1.0 for s in range(SHARDS)}


async def test_a_taken_lease_drops_its_previous_holders_ready_annotation(sim: KubeSim) -> None:
    """A replica that takes an expired shard Lease (its holder crashed while ready) says
    nothing of readiness until it is ready itself: the stale annotation goes with the
    write that takes the Lease."""
    from aioinformer import ShardManager

    old = "2020-01-01T00:00:00.000000Z"
    sim.create("leases", {
        "metadata": {"name": "op-shard-0", "annotations": {READY_ANNOTATION: "true"}},
        "spec": {"holderIdentity": "crashed", "leaseDurationSeconds": 15, "renewTime": old,
                 "acquireTime": old, "leaseTransitions": 0},
    }, NS)  # fmt: skip
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api:
        shards = ShardManager(api, name="op", namespace=NS, identity="a", shards=1,
                              clock=loop.time, **TIMING)  # fmt: skip
        shards.is_ready = lambda shard: False  # (never ready: only the takeover writes)
        async with shards:

            def taken() -> bool:
                return sim.get("leases", "op-shard-0", NS)["spec"]["holderIdentity"] == "a"

            await eventually(taken, "a takes the expired Lease", timeout=60, interval=0.5)
            lease = sim.get("leases", "op-shard-0", NS)
            assert READY_ANNOTATION not in lease["metadata"].get("annotations", {})
            assert not (await ring(api)).ready
