"""Sharding keys across replicas, one Lease per shard (leader election per shard).

Keys map to ``shards`` shards by a stable hash (:func:`shard_of`: SHA-1 of the UTF-8 key,
the same in every process, whatever ``PYTHONHASHSEED``). Shard ``i`` is guarded by the
Lease ``<name>-shard-<i>``; every replica also keeps ``<name>-member-<identity>``, renewed
every ``retry_period``, so each can count the live replicas: member leases that have not
expired *by its own clock* (the election rule of :mod:`aioinformer._coordination.leader`). The API
server's optimistic concurrency on these Leases is the only coordination.

Contract:

* :meth:`ShardManager.owns` is True only while this replica holds the shard's lease and its
  last successful write of that lease *started* less than ``renew_deadline`` ago. Another
  replica may take a shard only when its lease is released (written with an empty holder,
  which the owner does only after it stopped owning the shard) or unchanged for
  ``ceil(lease_duration) > renew_deadline`` seconds since that replica observed it, and
  only with a write conditional on the resourceVersion it observed. So two live replicas
  (same clock rate, even under one identity) never both own a key.
* Fair share: with ``m`` live members each replica aims at ``ceil(shards / m)`` shards. Below
  it, a replica takes free or expired shards, preferring those it wins by rendezvous
  hashing of (shard, identity) among the live members, so assignments stay stable and a
  newcomer gets mostly "its" shards. Above it, it stops owning the surplus (least preferred
  first) and releases it so another replica can take it at once.
* Rebalancing: a replica that dies stops renewing; its member and shard leases expire about
  ``ceil(lease_duration)`` after the others last saw them change, and the survivors take
  the shards within a couple of ``retry_period`` after that. A replica that leaves
  (cancelled, ``release_on_cancel``) releases its shards and deletes its member Lease: the
  others count it out and take the shards at their next balancing rounds. A joining
  replica is counted within about one ``retry_period``; the others shed their surplus at
  their next balancing round and it acquires the released shards at its own (each round
  is one ``retry_period`` apart, plus up to 20% jitter).
* The Leases are trusted as :mod:`aioinformer._coordination.leader` trusts its one: a
  missing shard Lease (deleted, or never made) is created by its holder at its next
  renewal; by another replica that has listed it before only once its balancing rounds
  have seen it missing for ``ceil(lease_duration)`` seconds, looking at least every
  ``(2 + 1.2) * retry_period`` seconds; and a replica that creates a missing shard Lease
  owns the shard only ``renew_deadline`` after it sent the create (renewing it meanwhile),
  when a holder it never saw counts itself owner no more (so a fresh deployment's shards
  are owned ``renew_deadline``, 10 s by default, after they are taken); a member
  Lease, which guards no key, is created again by its holder at once, by another instance
  of its identity once the record it last saw would have expired; every answer is
  checked to be the Lease asked for (a bogus 2xx is a failed renewal or a failed
  balancing round); a record naming this identity with another instance
  (``coordination.aioinformer.dev/instance``) is another replica's: a replica whose
  member Lease another live instance of its identity renews is no member, takes no shard,
  and says so once at ERROR.
* Every replica must use the same ``name``, ``namespace`` and ``shards``; a change of
  ``shards`` moves most keys.
* ``on_change`` callbacks get the new owned set (a ``frozenset`` of shard numbers) whenever
  it changes, so a controller can requeue the keys of newly acquired shards.
* Handing over: a shard given up to another replica stops being owned first, then every
  ``on_release`` callback is awaited with the shards about to be released (a controller
  cancels its running reconciles of their keys there), bounded by ``renew_deadline``, and
  only then is its Lease released. Meanwhile :attr:`ShardManager.handing_over` names them,
  so an ``on_change`` callback tells a shard handed over from one lost.
* Cancelling :meth:`ShardManager.run` drops every shard locally first, then (with
  ``release_on_cancel``) releases the shard leases and deletes the member lease (its name
  carries the identity, new at every pod restart: left behind, they would pile up).
* A member lease unchanged for :data:`STALE_MEMBER_DURATIONS` lease durations (by the
  observer's clock, since it last saw it change) is a replica that died without saying so:
  any live member deletes it at its balancing round, conditional on the resourceVersion
  it saw (a renewal since wins). Three durations: it stopped counting as a member one
  duration after its last renewal, so a live replica (which renews every
  ``retry_period`` and stops owning after ``renew_deadline``) is never a candidate, and a
  replica merely cut off that long re-creates its lease at its next renewal; a rolling
  restart's leftovers are gone within a minute with the defaults (45 s).

* What a shard Lease says besides its record (for ``python -m aioinformer top
  --lease-name``, and people with kubectl): its holder writes, with each renewal, the
  annotation :data:`READY_ANNOTATION` ``"true"`` while the shard is ready
  (:attr:`ShardManager.is_ready`: by default, while owned; a manager with sharded caches:
  once its caches synced and caught up, when it reconciles the shard's keys) and removes
  it otherwise, and on release; and :data:`BUCKETS_ANNOTATION`, the label buckets the
  shard covers (:attr:`ShardManager.buckets_text`, when set). They ride on the writes the
  Lease gets anyway (no extra request), under the same resourceVersion precondition; a
  reader trusts the ready annotation only on a Lease with a holder that has not expired.

Every renewal is one write per held shard per ``retry_period`` (client-go's cadence), and
every balancing round lists the Leases of the namespace: give sharded controllers a
namespace without many unrelated Leases.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from aioinformer._client.rest import ApiClientLike, RestClient
from aioinformer._coordination.leader import DEADLINE_SLACK, FAILURES, JITTER, check_timings
from aioinformer._coordination.lease import (
    Absence,
    LeaseClient,
    LeaseRecord,
    micro_time,
    new_instance,
)
from aioinformer._core import logs
from aioinformer._core.errors import AlreadyExists, ConfigError, Conflict, NotFound
from aioinformer._core.service import Service

__all__ = [
    "BUCKETS_ANNOTATION",
    "READY_ANNOTATION",
    "STALE_MEMBER_DURATIONS",
    "ShardManager",
    "shard_of",
]

log = logs.logger("aioinformer.sharding")

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")

STALE_MEMBER_DURATIONS = 3
"""A member lease unchanged for this many lease durations is deleted (module docstring)."""

READY_ANNOTATION = "shard.aioinformer.dev/ready"
"""The annotation a shard Lease's holder sets to ``"true"`` while the shard is ready."""

BUCKETS_ANNOTATION = "shard.aioinformer.dev/buckets"
"""The annotation a shard Lease's holder writes the shard's label buckets in (``"00-3f"``)."""

ChangeCallback = Callable[[frozenset[int]], object]
ReleaseCallback = Callable[[frozenset[int]], Awaitable[None]]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode(), usedforsecurity=False).digest()[:8], "big")


def shard_of(key: str, shards: int) -> int:
    """The shard of ``key`` among ``shards``: the first 8 bytes of the SHA-1 of its UTF-8
    form modulo ``shards``, the same in every process and Python run (whatever
    ``PYTHONHASHSEED``), so every replica agrees. Which replica holds it is
    :meth:`ShardManager.owns`'s to say.

    Args:
        key: an object's key, ``"namespace/name"`` (``"name"`` if cluster-scoped).
        shards: how many shards keys are hashed into (``Sharding.shards``).

    Returns:
        The shard number, from 0 to ``shards - 1``.
    """
    return _digest(key) % shards


@dataclass(slots=True)
class _Held:
    lease: dict[str, Any]  # as last written by us (carries the resourceVersion)
    record: LeaseRecord
    renewed: float  # clock() when the last successful write started
    keeper: asyncio.Task[None] | None = None  # the task renewing it
    owned_from: float = -math.inf  # clock() from which it is owned (a created Lease: later)


@dataclass(frozen=True, slots=True)
class _Seen:
    record: LeaseRecord
    at: float  # clock() when this record was first observed


class ShardManager(Service):
    """One replica's share of ``shards`` Lease-guarded shards (see the module docstring).

    ``async with ShardManager(api, name="ctl", namespace="ops", identity=pod) as shards:``
    runs it in a task; reconcile a key only ``if shards.owns(key)``.

    Args:
        api_client: a kubernetes_asyncio ``ApiClient``.
        name: the prefix of the Lease names (``NAME-shard-I``, ``NAME-member-IDENTITY``),
            the same for every replica.
        namespace: the Leases' namespace, the same for every replica.
        identity: this replica's ``holderIdentity``; unique among live replicas (a DNS-1123
            name, e.g. the pod's): a second live replica with it is detected (ERROR) and
            takes no shard while this one renews its Leases.
        shards: the number of shards keys are hashed into, the same for every replica.
        lease_duration: seconds others wait, from when they last saw the Lease change,
            before they may take it (written as ``ceil(lease_duration)``).
        renew_deadline: seconds after the start of its last successful renewal that a
            holder still counts as holding (must be below ``lease_duration``).
        retry_period: seconds between two renewals (and two tries to acquire).
        release_on_cancel: on cancellation, release the shard Leases (empty holder) so
            other replicas take over at once instead of after ``lease_duration``, and
            delete the member Lease.
        clock: the local clock every duration is measured by (``time.monotonic``).
        on_change: callbacks called with the new owned set (a ``frozenset`` of shard
            numbers) whenever it changes.

    Raises:
        ConfigError: timings that cannot hold, fewer than one shard, a name or identity
            that is not a DNS-1123 name, or Lease names longer than 253 characters.
    """

    def __init__(
        self,
        api_client: ApiClientLike | RestClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        shards: int = 32,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Callable[[], float] = time.monotonic,
        on_change: ChangeCallback | Iterable[ChangeCallback] | None = None,
    ) -> None:
        check_timings(lease_duration, renew_deadline, retry_period)
        if shards < 1:
            raise ConfigError(f"shards must be >= 1, got {shards}")
        if not _NAME.match(name) or not _NAME.match(identity):
            raise ConfigError(f"name {name!r} and identity {identity!r} must be DNS-1123 names")
        if len(f"{name}-member-{identity}") > 253 or len(f"{name}-shard-{shards - 1}") > 253:
            raise ConfigError("name and identity too long for Lease names (253 characters)")
        self.name = name
        """Prefix of the Lease names."""
        self.namespace = namespace
        """Namespace of the Leases."""
        self.identity = identity
        """This replica's ``holderIdentity``; unique among live replicas."""
        self.shards = shards
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_change: list[ChangeCallback] = (
            [] if on_change is None else [on_change] if callable(on_change) else list(on_change)
        )
        """Callbacks called with the new owned set whenever it changes (append to add)."""
        self.on_release: list[ReleaseCallback] = []
        """Awaited with the shards about to be released, after they stopped being owned and
        before their Leases are released (append to add)."""
        self.is_ready: Callable[[int], bool] = self.owns_shard
        """Whether a held shard is ready, written on its Lease at each renewal
        (:data:`READY_ANNOTATION`); by default, while it is owned."""
        self.key_shard: Callable[[str], int | None] = self._hashed
        """The shard of a key (:meth:`shard_for`): by default its SHA-1 (:func:`shard_of`);
        a manager with sharded caches sets its own (the bucket of the key's primary
        object's uid, looked up in its controllers' caches), so :meth:`owns` agrees with
        what the manager reconciles."""
        self.buckets_text: Callable[[int], str] | None = None
        """The label buckets of a shard as text, written on its Lease
        (:data:`BUCKETS_ANNOTATION`); None: not written."""
        self.member_lease = f"{name}-member-{identity}"
        """The name of this replica's membership Lease."""
        self._clock = clock
        self._client = LeaseClient(api_client, namespace)
        self._duration_s = max(1, math.ceil(lease_duration))
        self._held: dict[int, _Held] = {}
        self._seen: dict[str, _Seen] = {}
        self._absent = {
            self.shard_name(s): Absence(self._duration_s, (2 + JITTER) * retry_period)
            for s in range(shards)
        }  # each shard Lease's absence, as the balancing rounds' lists saw it
        self._ever_listed: set[str] = set()  # the shard Leases a list ever showed
        self._member: dict[str, Any] | None = None
        self._member_acquired: str | None = None
        self._members: frozenset[str] = frozenset({identity})
        self._published: frozenset[int] = frozenset()
        self._handing_over: frozenset[int] = frozenset()
        self._instance = new_instance()
        self._duplicates: set[str] = set()  # other instances of this identity, logged
        self._tg: asyncio.TaskGroup | None = None

    # -- queries -------------------------------------------------------------------------------

    def shard_name(self, shard: int) -> str:
        """The name of shard ``shard``'s Lease."""
        return f"{self.name}-shard-{shard}"

    def _hashed(self, key: str) -> int:
        return shard_of(key, self.shards)

    def shard_for(self, key: str) -> int | None:
        """The shard ``key`` (``"namespace/name"``) belongs to, the same on every replica:
        :func:`shard_of` with this manager's ``shards``; with a manager's sharded caches,
        the shard of the bucket of its primary object's uid, None when no controller's
        primary cache of this replica holds (or remembers) it (see :attr:`key_shard`)."""
        return self.key_shard(key)

    def owns(self, key: str) -> bool:
        """Whether this replica may act on ``key`` (``"namespace/name"``) now: True while
        it holds the Lease of ``key``'s shard (:meth:`shard_for`; a key without one is no
        replica's here) and renewed it less than ``renew_deadline`` ago by its clock. The
        manager checks it before each reconcile and each write; code of its own (a
        webhook, a periodic job) may ask too. (With sharded caches, a controller's
        :meth:`~aioinformer.Controller.may_act` also waits for the shard's caches to be
        ready.)"""
        shard = self.key_shard(key)
        return shard is not None and self.owns_shard(shard)

    def owns_shard(self, shard: int) -> bool:
        """Whether this replica holds shard ``shard`` now (the rule of :meth:`owns`, for a
        shard number rather than a key)."""
        held = self._held.get(shard)
        now = self._clock()
        return held is not None and held.owned_from <= now < held.renewed + self.renew_deadline

    def owned_shards(self) -> frozenset[int]:
        """The shards :meth:`owns` is True for, right now."""
        now = self._clock()
        return frozenset(
            s
            for s, h in self._held.items()
            if h.owned_from <= now < h.renewed + self.renew_deadline
        )

    def lease_version(self, shard: int) -> int | None:
        """The resourceVersion of shard ``shard``'s Lease as this replica last wrote it
        (None when it does not hold it): first the write that took it."""
        held = self._held.get(shard)
        rv = held.lease.get("metadata", {}).get("resourceVersion") if held else None
        return int(rv) if isinstance(rv, str) and rv.isdigit() else None

    @property
    def handing_over(self) -> frozenset[int]:
        """The shards this replica stopped owning to hand them over and has not released
        yet (their ``on_release`` callbacks run): their reconciles are the callbacks' to
        cancel, with a grace, not lost ones to abort at once."""
        return self._handing_over

    @property
    def members(self) -> frozenset[str]:
        """The live replicas (identities) as of the last balancing round, this one included."""
        return self._members

    @property
    def target(self) -> int:
        """This replica's fair share: ceil(shards / live members)."""
        return math.ceil(self.shards / len(self._members))

    # -- running -------------------------------------------------------------------------------

    def _service_name(self) -> str:
        return f"shards:{self.name}:{self.identity}"

    async def run(self) -> None:
        """Renew, balance and report ownership until cancelled (see the module docstring)."""
        self._begin()
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg = tg
                tg.create_task(self._member_loop())
                tg.create_task(self._balance_loop())
                self._ready()
        finally:
            self._tg = None
            try:
                await self._let_go()
            finally:
                self._end()

    async def _let_go(self) -> None:
        """Stop owning every shard, tell ``on_release``, then release the Leases (with
        ``release_on_cancel``)."""
        held: list[tuple[str, dict[str, Any] | None]] = [
            (self.shard_name(s), h.lease) for s, h in self._held.items()
        ]
        self._handing_over = frozenset(self._held)
        self._held.clear()
        self._publish()
        if held:
            await self._before_release(self._handing_over)
        self._handing_over = frozenset()
        if self.release_on_cancel:
            async with asyncio.TaskGroup() as tg:
                for name, lease in held:
                    tg.create_task(self._release(name, lease))
                tg.create_task(self._leave())

    async def _leave(self) -> None:
        """Delete this replica's member lease (if it still holds it): it leaves for good,
        as its identity is not used again."""
        try:
            async with asyncio.timeout(self.renew_deadline):
                for lease in (self._member, None):  # (a stale copy: read it again, once)
                    lease = lease or await self._client.get(self.member_lease)
                    if lease is None:
                        return
                    if not LeaseRecord.from_lease(lease).held_by(self.identity, self._instance):
                        return
                    if await self._client.delete(lease):
                        return
        except FAILURES as exc:
            log.warning("member lease %s: delete failed: %r", self.member_lease, exc)

    # -- holding: one keeper task per held shard, its only writer ------------------------------

    async def _keep(self, shard: int, held: _Held) -> None:
        """Renew one held shard every retry_period until a renewal misses the deadline or
        finds the lease changed hands (then stop owning it), or until cancelled."""
        while True:
            wait = self.retry_period
            pending = held.owned_from + DEADLINE_SLACK - self._clock()
            if 0 < pending < wait:  # a created shard Lease becomes owned now: say so
                await asyncio.sleep(pending)
                self._publish()
                wait -= pending
            await asyncio.sleep(wait)
            if not await self._renew(shard, held):
                break
        if self._held.get(shard) is held:
            del self._held[shard]
            self._publish()

    async def _renew(self, shard: int, held: _Held) -> bool:
        while (left := held.renewed + self.renew_deadline - self._clock()) > DEADLINE_SLACK:
            start = self._clock()
            record = replace(held.record, renew_time=micro_time())
            try:
                async with asyncio.timeout(left):
                    lease = self._annotated(shard, held.lease)
                    held.lease = await self._rewrite(self.shard_name(shard), lease, record)
                held.record, held.renewed = record, start
                return True
            except FAILURES as exc:
                log.warning("shard %s: renew failed: %r", self.shard_name(shard), exc)
                if isinstance(exc, Conflict | AlreadyExists):
                    return False  # written by another: not ours any more
            left = held.renewed + self.renew_deadline - self._clock()
            await asyncio.sleep(max(0.0, min(self.retry_period, left)))
        return False

    async def _rewrite(
        self, name: str, lease: dict[str, Any], record: LeaseRecord
    ) -> dict[str, Any]:
        """Renew a held Lease; one that was deleted is created again by its holder (if
        another replica created it first: AlreadyExists, the shard is lost)."""
        try:
            return await self._client.update(lease, record)
        except NotFound:
            return await self._client.create(name, record)

    async def _member_loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.renew_deadline):
                    await self._renew_member()
            except FAILURES as exc:
                log.warning("member lease %s: renew failed: %r", self.member_lease, exc)
                self._member = None
            await asyncio.sleep(self.retry_period)

    async def _renew_member(self) -> None:
        """Renew the member Lease (read first after a failure). A member Lease that another
        live instance of this identity holds is left alone: this replica is then no member
        and takes no shard (see :meth:`_takeable`)."""
        lease = self._member
        if lease is None:
            lease = await self._client.get(self.member_lease)
            if lease is not None:
                self._note(self.member_lease, LeaseRecord.from_lease(lease), self._clock())
            if not self._takeable(self.member_lease):
                return
        now = micro_time()
        self._member_acquired = self._member_acquired or now
        record = LeaseRecord(
            self.identity, self._duration_s, self._member_acquired, now, 0, self._instance
        )
        if lease is None:
            self._member = await self._client.create(self.member_lease, record)
        else:  # (its holder creates it again at once if it was deleted)
            self._member = await self._rewrite(self.member_lease, lease, record)

    async def _before_release(self, shards: frozenset[int]) -> None:
        """Await every ``on_release`` callback (bounded by ``renew_deadline`` in all)."""
        try:
            async with asyncio.timeout(self.renew_deadline):
                for callback in list(self.on_release):
                    try:
                        await callback(shards)
                    except Exception:
                        log.exception("shard on_release callback %r failed", callback)
        except TimeoutError:
            log.warning("shards %s: on_release callbacks took longer than %ss", self.name,
                        self.renew_deadline)  # fmt: skip

    def _annotated(self, shard: int, lease: dict[str, Any]) -> dict[str, Any]:
        """``lease`` with the annotations its holder writes (see the module docstring):
        ready while :attr:`is_ready` says so (never for a shard not held yet), and its
        buckets."""
        held = self._held.get(shard)
        ready = held is not None and self.is_ready(shard)
        wanted = {READY_ANNOTATION: "true" if ready else None}
        if self.buckets_text is not None:
            wanted[BUCKETS_ANNOTATION] = self.buckets_text(shard)
        return _with_annotations(lease, wanted)

    async def _release(self, name: str, lease: dict[str, Any] | None) -> None:
        if lease is not None:  # (released: ready no more)
            lease = _with_annotations(lease, {READY_ANNOTATION: None})
        try:
            async with asyncio.timeout(self.renew_deadline):
                await self._client.release(name, lease, self.identity, self._instance)
        except FAILURES as exc:
            log.warning("lease %s: release failed: %r", name, exc)

    # -- balancing: the only writer of shards not held -----------------------------------------

    async def _balance_loop(self) -> None:
        while True:
            # first wait: the member leases of replicas starting together become visible
            await asyncio.sleep(self.retry_period * (1 + 0.2 * random.random()))
            await self._balance()

    async def _balance(self) -> None:
        sent = self._clock()
        try:
            async with asyncio.timeout(self.renew_deadline):
                leases = await self._client.list()
        except FAILURES as exc:
            log.warning("shards %s: list failed: %r", self.name, exc)
            return
        listed = self._observe_all(leases, sent)
        stale = self._stale_members(listed)
        live = {  # (a member Lease gone from the list is a replica that left: counted out)
            s.record.holder
            for n, s in self._seen.items()
            if n == f"{self.name}-member-{s.record.holder}" and n in listed and self._valid(n)
        }
        self._members = frozenset(live | {self.identity})
        target = self.target
        surplus = sorted(self._held, key=self._preference)[: max(0, len(self._held) - target)]
        releases: list[tuple[str, dict[str, Any]]] = []
        for s in surplus:
            held = self._held.pop(s)
            if held.keeper is not None:
                held.keeper.cancel()
            releases.append((self.shard_name(s), held.lease))
        self._handing_over = frozenset(surplus)
        self._publish()  # stop owning the surplus before anyone can take it
        if surplus:
            await self._before_release(self._handing_over)
        self._handing_over = frozenset()
        free = [
            s
            for s in range(self.shards)
            if s not in self._held and self._takeable(self.shard_name(s))
        ]
        free.sort(key=self._preference, reverse=True)
        room = max(0, target - len(self._held)) if self._member is not None else 0
        take = [s for s in free if s not in surplus][:room]  # only a member takes shards
        for s in free:  # ours on the server but not held here (a lost reply): release it
            name = self.shard_name(s)
            mine = name in listed and self._seen[name].record.held_by(self.identity, self._instance)
            if mine and s not in take and s not in surplus:
                releases.append((name, listed[name]))
        async with asyncio.TaskGroup() as tg:
            for lease in stale:
                tg.create_task(self._delete_stale(lease))
            for name, lease in releases:
                tg.create_task(self._release(name, lease))
            for s in take:
                tg.create_task(self._acquire(s, listed.get(self.shard_name(s))))

    def _observe_all(self, leases: list[dict[str, Any]], sent: float) -> dict[str, dict[str, Any]]:
        """Observe the Leases of this manager a list sent at ``sent`` found; a Lease that
        vanished is remembered as last seen until that record would have expired, and a
        missing shard Lease counts its absence (a deleted Lease is no news from its
        holder, who may still count on it)."""
        now = self._clock()
        listed: dict[str, dict[str, Any]] = {}
        for lease in leases:
            name = lease["metadata"]["name"]
            if name.startswith(f"{self.name}-"):
                listed[name] = lease
                self._note(name, LeaseRecord.from_lease(lease), now)
        for name, absence in self._absent.items():
            if name in listed:
                absence.present()
                self._ever_listed.add(name)
            else:
                absence.missing(sent, now)
        for name in set(self._seen) - set(listed):
            if not self._valid(name):
                del self._seen[name]
        return listed

    def _stale_members(self, listed: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The listed member leases of other replicas unchanged, by this clock, for
        :data:`STALE_MEMBER_DURATIONS` lease durations (only a member deletes them)."""
        if self._member is None:
            return []
        now = self._clock()
        stale = []
        for name, lease in listed.items():
            seen = self._seen[name]
            if not name.startswith(f"{self.name}-member-") or name == self.member_lease:
                continue
            duration = max(seen.record.duration_s, self._duration_s)
            if now >= seen.at + STALE_MEMBER_DURATIONS * duration:
                stale.append(lease)
        return stale

    async def _delete_stale(self, lease: dict[str, Any]) -> None:
        name = lease["metadata"]["name"]
        try:
            async with asyncio.timeout(self.renew_deadline):
                deleted = await self._client.delete(lease)
        except FAILURES as exc:
            log.warning("member lease %s: delete failed: %r", name, exc)
            return
        if deleted:
            log.info(
                "shards %s: deleted the member lease %s, unchanged for %d lease durations "
                "(a replica gone)",
                self.name,
                name,
                STALE_MEMBER_DURATIONS,
            )

    def _note(self, name: str, record: LeaseRecord, now: float) -> None:
        """Observe ``record`` in the Lease ``name`` (its time, if it changed); a change to a
        record naming this identity with another instance means another live replica
        uses this identity: ERROR, once per instance."""
        seen = self._seen.get(name)
        if seen is not None and seen.record == record:
            return
        self._seen[name] = _Seen(record, now)
        foreign = record.holder == self.identity and record.instance != self._instance
        if foreign and seen is not None and record.instance not in self._duplicates:
            self._duplicates.add(record.instance)
            log.error(
                "shards %s: another live replica uses the identity %r (instance %s; this one "
                "is %s, seen writing %s): this one takes no shard its Leases hold. "
                "Identities must be unique among replicas (use the pod's name)",
                self.name, self.identity, record.instance or "without one", self._instance, name,
            )  # fmt: skip

    def _valid(self, name: str) -> bool:
        seen = self._seen.get(name)
        return (
            seen is not None
            and bool(seen.record.holder)
            and self._clock() < seen.at + seen.record.duration_s
        )

    def _takeable(self, name: str) -> bool:
        """Whether this replica may write the Lease ``name``: a shard Lease missing at the
        last look only once seen missing for a whole Lease duration (its holder, who
        creates it again at once, is not asking); else never seen held, released, held by
        this very instance, or expired by this clock since it last changed (a record
        naming this identity with another instance is another replica's)."""
        absence = self._absent.get(name)
        if absence is not None and absence.since is not None:
            return absence.long_enough() or name not in self._ever_listed
        seen = self._seen.get(name)
        if seen is None or not seen.record.holder:
            return True
        return seen.record.held_by(self.identity, self._instance) or not self._valid(name)

    def _preference(self, shard: int) -> tuple[bool, int]:
        mine = _digest(f"{shard}/{self.identity}")
        wins = all(mine >= _digest(f"{shard}/{m}") for m in self._members)
        return wins, mine

    async def _acquire(self, shard: int, lease: dict[str, Any] | None) -> None:
        name = self.shard_name(shard)
        start = self._clock()
        now = micro_time()
        record = LeaseRecord(self.identity, self._duration_s, now, now, 0, self._instance)
        try:
            async with asyncio.timeout(self.renew_deadline):
                if lease is None:
                    written = await self._client.create(name, record)
                else:
                    old = LeaseRecord.from_lease(lease)
                    if old.held_by(self.identity, self._instance):
                        record = replace(
                            record, acquire_time=old.acquire_time, transitions=old.transitions
                        )
                    else:
                        record = replace(record, transitions=old.transitions + 1)
                    written = await self._client.update(self._annotated(shard, lease), record)
        except FAILURES as exc:
            log.info("shard %s: not acquired: %r", name, exc)
            return
        held = self._held[shard] = _Held(written, record, start)
        if lease is None:  # a missing Lease created: owned once any unseen holder stopped
            held.owned_from = start + self.renew_deadline
        assert self._tg is not None
        held.keeper = self._tg.create_task(self._keep(shard, held))
        self._publish()

    def _publish(self) -> None:
        owned = self.owned_shards()
        if owned == self._published:
            return
        self._published = owned
        log.info("shards %s: %s owns %d shards", self.name, self.identity, len(owned))
        for callback in list(self.on_change):
            try:
                callback(owned)
            except Exception:
                log.exception("shard on_change callback %r failed", callback)


def _with_annotations(lease: dict[str, Any], wanted: dict[str, str | None]) -> dict[str, Any]:
    """A copy of ``lease`` whose annotations are set as ``wanted`` says (None: removed);
    its resourceVersion (the write's precondition) unchanged."""
    meta = dict(lease.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    for key, value in wanted.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    meta["annotations"] = annotations
    return {**lease, "metadata": meta}
