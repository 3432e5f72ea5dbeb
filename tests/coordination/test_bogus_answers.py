"""A 2xx answer that is not the Lease asked for is a failed read or write, never a
renewal or a free Lease: a proxy or a misrouted request answering 200 with another kind,
another name, another holder, no resourceVersion, the Lease as it was, or not JSON.
For leader election and for sharding's shard Leases, renewals and reads alike, sampled
every 50 (virtual) milliseconds: no instant has two holders.

KubeSim answers the matching requests with the bytes given (``respond_next``), without
applying them. On virtual time (looptime), with client-go's durations."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest

from aioinformer._coordination.leader import LeaderElector
from aioinformer._coordination.sharding import ShardManager
from aioinformer.testing import KubeSim, eventually
from tests.coordination.overlap import sampled

pytestmark = pytest.mark.looptime

NS = "default"
NAME = "ctl-leader"
TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
FIRST = TIMING["lease_duration"] + 5  # (virtual) seconds: a fresh deployment's first leader
# waits a renew deadline
BOGUS_FOR = 60.0
"""Seconds the answers stay bogus: longer than a Lease's duration."""


def lease(name: str, holder: str, rv: str | None = "999999") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if rv is not None:
        meta["resourceVersion"] = rv
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": 0}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}


def bodies(name: str, holder: str) -> dict[str, bytes]:
    """The bogus 200 bodies, for a request about the Lease ``name`` held by ``holder``."""
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
    }
    return {
        "another kind": orjson.dumps(configmap),
        "another name": orjson.dumps(lease("other", holder)),
        "another holder": orjson.dumps(lease(name, "someone-else")),
        "released, no resourceVersion": orjson.dumps(lease(name, "", rv=None)),
        "its holder, no resourceVersion": orjson.dumps(lease(name, holder, rv=None)),
        "not JSON": b"<html><body>OK</body></html>",
    }


CASES = list(bodies(NAME, "a"))


def answer_with(sim: KubeSim, body: bytes, verbs: list[str], path: str) -> None:
    ctype = "text/html" if body.startswith(b"<") else "application/json"
    sim.faults.respond_next(
        10_000, body, status=200, content_type=ctype, path_contains=path, verbs=verbs
    )


def elector(api: Any, identity: str) -> LeaderElector:
    return LeaderElector(
        api, name=NAME, namespace=NS, identity=identity,
        clock=asyncio.get_running_loop().time, **TIMING,
    )  # fmt: skip


def leading(*electors: LeaderElector) -> Mapping[str, Iterable[object]]:
    return {e.identity: {"leader"} if e.is_leader else () for e in electors}


@pytest.mark.parametrize("verb", ["update", "get"])
@pytest.mark.parametrize("case", CASES)
async def test_a_bogus_200_is_never_a_renewal_or_a_free_leader_lease(
    sim: KubeSim, case: str, verb: str
) -> None:
    """a leads, b watches; then for a minute every ``verb`` of the Lease is answered 200
    with a body that is not that Lease: a's renewals (update) fail and it steps down at
    its renew deadline, b's reads (get) learn nothing; no instant has two leaders, and
    once the server answers again one of them leads."""
    random.seed(26)
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = elector(api_a, "a"), elector(api_b, "b")
        async with a, sampled(lambda: leading(a, b)) as overlaps:
            await a.wait_leader(timeout=FIRST)
            async with b:
                await eventually(lambda: b.leader == "a", "b sees a")
                answer_with(sim, bodies(NAME, "a")[case], [verb], f"/leases/{NAME}")
                await asyncio.sleep(BOGUS_FOR)
                counted = {e.identity for e in (a, b) if e.is_leader}
                sim.faults.request_faults.clear()
                await eventually(lambda: a.is_leader or b.is_leader, "a leader", timeout=60)
    print(f"bogus {verb} answers ({case}): {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()
    if verb == "update":
        assert counted == set(), f"{counted} counted bogus answers as renewals"


@pytest.mark.parametrize("verb", ["update", "list"])
@pytest.mark.parametrize("case", CASES)
async def test_a_bogus_200_is_never_a_renewal_or_a_free_shard(
    sim: KubeSim, case: str, verb: str
) -> None:
    """Two replicas split 4 shards; then for a minute every ``verb`` of the shard Leases
    (renewals, or the balancing rounds' lists, whose items become the bogus body) is
    answered 200 with something that is not that Lease: no shard ever has two owners,
    and once the server answers again every shard is owned."""
    random.seed(26)
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        managers = []
        for identity in ("a", "b"):
            api = await stack.enter_async_context(sim.api_client())
            managers.append(ShardManager(
                api, name="ctl", namespace=NS, identity=identity, shards=4, clock=loop.time,
                **TIMING,
            ))  # fmt: skip

        def owning() -> Mapping[str, Iterable[object]]:
            return {m.identity: m.owned_shards() for m in managers}

        def covered() -> bool:
            return frozenset().union(*(m.owned_shards() for m in managers)) == set(range(4))

        async with sampled(owning) as overlaps:
            for manager in managers:
                await stack.enter_async_context(manager)
            await eventually(covered, "every shard owned", timeout=120)
            held_by_a = min(managers[0].owned_shards())
            body = bodies(f"ctl-shard-{held_by_a}", "a")[case]
            if verb == "list":
                item = orjson.loads(body) if body.startswith(b"{") else body.decode()
                body = orjson.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
                                     "metadata": {"resourceVersion": "999999"}, "items": [item]})  # fmt: skip
                answer_with(sim, body, ["list"], "/leases")
            else:
                answer_with(sim, body, ["update"], "-shard-")
            await asyncio.sleep(BOGUS_FOR)
            sim.faults.request_faults.clear()
            await eventually(covered, "every shard owned again", timeout=120)
            await stack.aclose()
    print(f"bogus shard {verb} answers ({case}): {overlaps.summary()}")
    assert overlaps.overlapping == 0, overlaps.summary()
