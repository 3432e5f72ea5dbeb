"""A fenced operator for the fencing tests, and the ledger that checks it.

Everything runs on the test's event loop on virtual time (looptime): the replicas (their
informers on the loop, their clock the loop's) and KubeSim talk real HTTP on that loop, so
leases of client-go's durations pass in a blink, and a write reaches the ledger about when
it was made (see :mod:`tests.coordination.history` for how much later).

``build(manager)`` reconciles the ConfigMaps labelled ``role=ledger`` in namespace
``ledger``. Each reconcile is a long one: it writes the replica's identity into the
ConfigMap (an annotation, through ``manager.client``, so every write is fenced)
:data:`WRITES` times, :data:`WORK` seconds apart, and asks to be reconciled again after
:data:`WORK`, so whoever holds a key writes it all the time and a reconcile is in flight
when a replica loses a key. It returns the replica's :class:`Reconciles`: when each
reconcile finished, was cancelled, or had a write refused (NotOwner).

:class:`Ledger` watches the ConfigMaps and the Leases and records every write and every
change of holder in the server's order (resourceVersions are one global clock), stamped
with the loop's time: :meth:`Ledger.overlaps` lists the writes made while another replica
held the key's Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aioinformer import (
    ControllerOptions,
    InformerFactory,
    KubeObject,
    Manager,
    NotOwner,
    Result,
)
from aioinformer._coordination.sharding import shard_of
from tests.coordination.history import LeaseWrite, record_leases

NAMESPACE = "ledger"
KEYS = [f"k{i}" for i in range(6)]
WRITES = 4
"""Writes per reconcile."""
WORK = 1.0
"""Seconds between two writes of a reconcile, and before the key is reconciled again."""
LEASE_TIMING = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
"""client-go's defaults."""


def identity_of(manager: Manager) -> str:
    if manager.elector is not None:
        return manager.elector.identity
    if manager.shards is not None:
        return manager.shards.identity
    return "solo"


@dataclass
class Reconciles:
    """What one replica's reconciles did: (ConfigMap name, the loop's time) per outcome."""

    finished: list[tuple[str, float]] = field(default_factory=list)
    """Every write made, the reconcile ended."""
    cancelled: list[tuple[str, float]] = field(default_factory=list)
    """Cancelled (the replica lost the key, or stopped)."""
    refused: list[tuple[str, float]] = field(default_factory=list)
    """A write was refused: the replica no longer held the key (NotOwner)."""


def build(manager: Manager, options: ControllerOptions | None = None) -> Reconciles:
    """The ledger operator (see the module docstring), on ``manager``."""
    cms = manager.informer("v1", "configmaps", namespace=NAMESPACE, label_selector="role=ledger")
    me = identity_of(manager)
    serial = itertools.count()
    done = Reconciles()
    loop = asyncio.get_running_loop()

    async def reconcile(key: str) -> Result | None:
        obj = cms.snapshot().get(key)
        if obj is None:
            return None
        name = obj.name
        try:
            for step in range(WRITES):
                if step:
                    await asyncio.sleep(WORK)  # (the work of a long reconcile)
                # a new value each time: a write that changes nothing makes no event
                note = {"writer": me, "write": f"{me}-{next(serial)}"}
                await manager.client.patch(obj, {"metadata": {"annotations": note}})
        except asyncio.CancelledError:
            done.cancelled.append((name, loop.time()))
            raise
        except NotOwner:
            done.refused.append((name, loop.time()))
            raise
        done.finished.append((name, loop.time()))
        return Result(requeue_after=WORK)

    options = options or ControllerOptions(concurrency=len(KEYS))
    manager.controller("ledger", reconcile, primary=cms, options=options)
    return done


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


class Ledger:
    """Every write the operator made and every change of its Leases, in the server's order.
    A write is fenced correctly when, at its resourceVersion, the Lease that guards its key
    (the leader Lease, or the key's shard Lease) was held by the replica that wrote it:
    :meth:`overlaps` lists every write that was not."""

    def __init__(self, lease_of: Callable[[str], str]) -> None:
        self.writes: list[Write] = []
        self.holders: list[LeaseWrite] = []
        self._lease_of = lease_of

    def by_writer(self, writer: str, after: float = -1.0) -> list[Write]:
        """The writes of ``writer`` (made after ``after``, loop time)."""
        return [w for w in self.writes if w.writer == writer and w.at > after]

    def writes_every_key(self, writer: str, after: float = -1.0) -> bool:
        return {w.key for w in self.by_writer(writer, after)} >= set(KEYS)

    def holder_at(self, lease: str, rv: int) -> str:
        """Who held ``lease`` just before resourceVersion ``rv`` ("" if nobody)."""
        held = ""
        for h in self.holders:
            if h.lease == lease and h.rv < rv:
                held = h.holder
        return held

    def renewals(self, lease: str, holder: str) -> list[LeaseWrite]:
        """Every write of ``lease`` that named ``holder`` (acquiring or renewing it)."""
        return [h for h in self.holders if h.lease == lease and h.holder == holder]

    def released(self, lease: str, by: str) -> LeaseWrite | None:
        """The first write that emptied ``lease`` after ``by`` held it (None: never)."""
        held = False
        for h in self.holders:
            if h.lease != lease:
                continue
            if h.holder == by:
                held = True
            elif held and h.holder == "":
                return h
        return None

    def overlaps(self) -> list[str]:
        """Writes made while another replica held the key's Lease (none when fenced)."""
        out = []
        for w in self.writes:
            lease = self._lease_of(w.key)
            holder = self.holder_at(lease, w.rv)
            if holder != w.writer:
                out.append(f"{w.key}: {w.writer} wrote at rv {w.rv} while {lease} was {holder!r}'s")
        return out

    @contextlib.asynccontextmanager
    async def recording(self, api: Any) -> AsyncIterator[None]:
        """Record every write and every Lease change while the block runs."""
        loop = asyncio.get_running_loop()
        factory = InformerFactory(api, NAMESPACE, pipeline="loop", clock=loop.time)
        cms = factory.informer("v1", "configmaps", label_selector="role=ledger")

        def note(_old: KubeObject, new: KubeObject) -> None:
            writer = new.annotations.get("writer")
            if writer:
                self.writes.append(Write(new.name, writer, new.rv, loop.time()))

        cms.add_handler(on_update=note, max_queue=None)
        record_leases(factory, self.holders)
        async with factory:
            await factory.wait_for_sync(timeout=30)
            yield
