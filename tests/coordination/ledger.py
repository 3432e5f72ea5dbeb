"""A fenced operator for the fencing tests, and the ledger that checks it.

``build(manager)`` reconciles the ConfigMaps labelled ``role=ledger`` in namespace
``ledger``: each reconcile is a long one, writing the replica's identity into the
ConfigMap (an annotation, through ``manager.client``, so every write is fenced) four times
0.1 s apart, and asks to be reconciled again at once, so each key is written continuously
by whoever holds it, and a reconcile is always in flight when a replica loses a key. :class:`Ledger` watches the
ConfigMaps and records every write in the server's order, with the time it arrived:
:meth:`Ledger.overlaps` lists, per key, the writes of a replica that came after another
replica had already written the key since (two replicas acting on one key at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from aioinformer import InformerFactory, Manager, Result, WatchOptions
from aioinformer._coordination.sharding import shard_of

NAMESPACE = "ledger"
KEYS = [f"k{i}" for i in range(6)]
FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0, idle_timeout=3.0)


def identity_of(manager: Manager) -> str:
    if manager.elector is not None:
        return manager.elector.identity
    if manager.shards is not None:
        return manager.shards.identity
    return "solo"


def build(manager: Manager) -> None:
    """The ledger operator (see the module docstring)."""
    cms = manager.informer("v1", "configmaps", namespace=NAMESPACE, label_selector="role=ledger")
    me = identity_of(manager)
    serial = itertools.count()

    async def reconcile(key: str) -> Result | None:
        obj = cms.snapshot().get(key)
        if obj is None:
            return None
        for step in range(4):
            if step:
                await asyncio.sleep(0.1)  # (the work of a long reconcile)
            # a new value each time: a write that changes nothing makes no event to record
            note = {"writer": me, "write": f"{me}-{next(serial)}"}
            await manager.client.patch(obj, {"metadata": {"annotations": note}})
        return Result(requeue_after=0.01)

    manager.controller("ledger", reconcile, primary=cms, concurrency=len(KEYS))


def leader_lease(_key: str) -> str:
    """The Lease guarding every key under leader election."""
    return "ledger-leader"


def shard_lease(shards: int) -> Callable[[str], str]:
    """The Lease guarding a key under sharding (the controller's key is ``ledger/NAME``)."""
    return lambda key: f"ledger-shard-{shard_of(f'{NAMESPACE}/{key}', shards)}"


def ledger_objects() -> list[dict[str, Any]]:
    return [{"metadata": {"name": k, "labels": {"role": "ledger"}}, "data": {}} for k in KEYS]


@dataclass(frozen=True)
class Write:
    key: str
    writer: str
    rv: int
    at: float


@dataclass(frozen=True)
class Holder:
    lease: str
    holder: str
    rv: int


class Ledger:
    """Every write the operator made and every change of its Leases, in the server's order
    (resourceVersions are one global clock). A write is fenced correctly when, at its
    resourceVersion, the Lease that guards its key (the leader Lease, or the key's shard
    Lease) was held by the replica that wrote it: :meth:`overlaps` lists every write that
    was not."""

    def __init__(self, lease_of: Callable[[str], str]) -> None:
        self.writes: list[Write] = []
        self.holders: list[Holder] = []
        self._lease_of = lease_of

    def by_writer(self, writer: str) -> list[Write]:
        return [w for w in self.writes if w.writer == writer]

    def holder_at(self, lease: str, rv: int) -> str:
        """Who held ``lease`` just before resourceVersion ``rv`` ("" if nobody)."""
        held = ""
        for h in self.holders:
            if h.lease == lease and h.rv < rv:
                held = h.holder
        return held

    def overlaps(self) -> list[str]:
        """Writes made while another replica held the key's Lease (none when fenced)."""
        out = []
        for w in self.writes:
            lease = self._lease_of(w.key)
            holder = self.holder_at(lease, w.rv)
            if holder != w.writer:
                out.append(f"{w.key}: {w.writer} wrote at rv {w.rv} while {lease} was {holder!r}'s")
        return out

    def overlap_seconds(self) -> float:
        """How long, at most, a replica went on writing a key after the replica that held
        its Lease had started writing it (0.0 when fenced)."""
        worst = 0.0
        for w in self.writes:
            holder = self.holder_at(self._lease_of(w.key), w.rv)
            if holder == w.writer:
                continue
            theirs = [x.at for x in self.writes if x.key == w.key and x.writer == holder]
            if theirs and min(theirs) < w.at:
                worst = max(worst, w.at - min(theirs))
        return worst

    @contextlib.asynccontextmanager
    async def recording(self, api: Any) -> AsyncIterator[None]:
        """Record every write and every Lease change while the block runs."""
        async with InformerFactory(api, NAMESPACE, watch_options=FAST) as factory:
            cms = factory.informer("v1", "configmaps", label_selector="role=ledger")
            leases = factory.informer("coordination.k8s.io/v1", "leases")

            def note(_old: Any, new: Any) -> None:
                writer = new.annotations.get("writer")
                if writer:
                    self.writes.append(Write(new.name, writer, new.rv, time.monotonic()))

            def held(obj: Any, new: Any = None) -> None:
                lease = new if new is not None else obj
                holder = lease.field("spec.holderIdentity") or ""
                self.holders.append(Holder(lease.name, holder, lease.rv))

            cms.add_handler(on_update=note, max_queue=None)
            leases.add_handler(on_add=held, on_update=held, max_queue=None)
            await factory.wait_for_sync(timeout=30)
            yield
            await asyncio.sleep(0)
