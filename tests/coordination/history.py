"""What the coordination tests read back about Leases.

:func:`lease_writes` / :func:`record_leases`: every write of the Leases in a namespace, in
the server's order, stamped with the loop's time when an informer on the loop saw it.

:func:`lease_requests`: every Lease request one replica sent, stamped with the loop's time
when it was sent: the instant its elector or shard manager took as the start of a renewal
(what its deadlines count from). The two differ by the request's own duration, which on
virtual time is not always nil: the HTTP client looks its proxy settings and netrc up in a
thread for each request (kubernetes_asyncio's session trusts the environment), and while
a thread works, looptime moves the loop's time on in steps, as the real time passes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from aioinformer import InformerFactory, KubeObject


@dataclass(frozen=True)
class LeaseWrite:
    lease: str
    holder: str
    """``holderIdentity`` ("" when released)."""
    transitions: int
    rv: int
    at: float
    """The loop's time when the write was seen."""


def record_leases(factory: InformerFactory, into: list[LeaseWrite]) -> None:
    """Append every write of the Leases of ``factory``'s namespace to ``into``."""
    loop = asyncio.get_running_loop()
    leases = factory.informer("coordination.k8s.io/v1", "leases")

    def written(obj: KubeObject, new: KubeObject | None = None) -> None:
        lease = new if new is not None else obj
        holder = lease.field("spec.holderIdentity") or ""
        transitions = int(lease.field("spec.leaseTransitions") or 0)
        into.append(LeaseWrite(lease.name, holder, transitions, lease.rv, loop.time()))

    leases.add_handler(on_add=written, on_update=written, max_queue=None)


@contextlib.asynccontextmanager
async def lease_writes(api: Any, namespace: str) -> AsyncIterator[list[LeaseWrite]]:
    """The writes of the Leases in ``namespace`` while the block runs (a list that grows)."""
    loop = asyncio.get_running_loop()
    writes: list[LeaseWrite] = []
    factory = InformerFactory(api, namespace, pipeline="loop", clock=loop.time)
    record_leases(factory, writes)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        yield writes


@dataclass(frozen=True)
class LeaseRequest:
    lease: str
    method: str
    holder: str | None
    """The ``holderIdentity`` the request wrote (None: it wrote none, e.g. a GET)."""
    sent: float
    """The loop's time when it was sent."""
    ok: bool
    """Answered with a 2xx status."""


def lease_requests(api: Any) -> list[LeaseRequest]:
    """Every Lease request sent through ``api`` (a kubernetes_asyncio ApiClient, through
    which the library's clients send everything but the controllers' writes) from now on,
    once answered (a list that grows)."""
    loop = asyncio.get_running_loop()
    sent: list[LeaseRequest] = []
    call_api = api.call_api

    async def recorded(resource_path: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if "/leases" not in resource_path:
            return await call_api(resource_path, method, *args, **kwargs)
        body = kwargs.get("body")
        body = body if isinstance(body, dict) else {}
        holder = (body.get("spec") or {}).get("holderIdentity")
        named = resource_path.rpartition("/leases")[2].strip("/").partition("?")[0]
        lease = named or (body.get("metadata") or {}).get("name", "")
        at, ok = loop.time(), False
        try:
            resp = await call_api(resource_path, method, *args, **kwargs)
            ok = 200 <= resp.status < 300
            return resp
        finally:
            sent.append(LeaseRequest(lease, method, holder, at, ok))

    api.call_api = recorded
    return sent


def renewed(requests: list[LeaseRequest], lease: str, holder: str, by: float) -> float:
    """When the last successful write of ``lease`` naming ``holder`` sent by ``by`` (the
    loop's time) was sent: its holder's deadlines count from there."""
    return max(
        r.sent
        for r in requests
        if r.lease == lease and r.holder == holder and r.ok and r.sent <= by
    )


def same_instant(t: float, u: float) -> bool:
    """Whether ``t`` and ``u`` are the same instant of the loop's clock (looptime counts
    whole microseconds; a deadline computed in floating point may land on the next one)."""
    return abs(t - u) <= 2e-6
