"""Lease-based leader election: client-go's ``tools/leaderelection`` with a LeaseLock.

Candidates race for one ``coordination.k8s.io/v1`` Lease. The API server's optimistic
concurrency (a write carries the resourceVersion it read; a stale one gets 409 Conflict, a
second create 409 AlreadyExists) is the only coordination: no candidate trusts another's
clock or its own guess about the others.

Contract (the semantics of client-go's ``tryAcquireOrRenew``, made safe where it is not):

* A candidate may take the lease when ``holderIdentity`` is empty (released), when it
  names this candidate, or when the lease has *expired by the local clock*: the record
  (holder, instance, times, duration, transitions) has not changed for
  ``leaseDurationSeconds`` since this candidate first observed it (``observedTime``).
  ``renewTime`` written by others is never compared with the local clock.
* A missing Lease is no news from its holder (``kubectl delete lease``; a holder paused
  meanwhile): the leader creates it again at its next renewal and leads on. Any other
  candidate that has seen the Lease before creates it only once it has seen it missing
  for ``ceil(lease_duration)`` seconds by its own clock, looking at least every
  ``(2 + 1.2) * retry_period`` seconds (a longer gap, such as a pause of the process,
  starts the count again); and a candidate that creates a missing Lease leads only
  ``renew_deadline`` after it sent the create (renewing it meanwhile): a holder it never
  saw (the Lease created and deleted again between two of its looks) counts itself leader
  no more by then, and finds the Lease taken at its next renewal. So the first leader of a
  fresh deployment (no Lease yet) starts ``renew_deadline`` seconds after the candidates
  (10 s by default, plus up to one jittered retry period; client-go's leads at once),
  while a rollout, which finds the Lease its predecessor released, does not wait. A holder
  that finds its Lease taken (another create or write came first) stops leading at once,
  without waiting for its renew deadline.
* "This candidate" is an identity *and* an instance: each elector writes a token of its
  own next to ``holderIdentity`` (the ``coordination.aioinformer.dev/instance``
  annotation). A record naming this identity with another instance is another
  candidate's: taken only once expired (a restarted process waits ``lease_duration`` for
  its predecessor's record, unless that one released it), and when such a record is
  renewed while this one watches, two live candidates share the identity: this one does
  not lead while the other holds the Lease, and says so once at ERROR, naming the
  identity.
* A renewal counts only when the server answered with that Lease as written: a 2xx whose
  body is another object, another name, another holder, no resourceVersion, the old
  resourceVersion or not JSON is a failed attempt (:class:`~aioinformer.TransportError`).
* Taking the lease from another holder increments ``leaseTransitions`` and sets
  ``acquireTime``; renewing keeps both. ``acquireTime``/``renewTime`` are MicroTime
  (RFC 3339, exactly 6 fractional digits, ``Z``).
* ``leaseDurationSeconds`` is an integer on the wire: it is written as
  ``ceil(lease_duration)`` (client-go truncates), so the promise to others is never shorter
  than configured and always longer than ``renew_deadline``.
* The leader renews every ``retry_period``. It counts as leader (:attr:`LeaderElector.is_leader`)
  only while its last successful write *started* less than ``renew_deadline`` ago; if no
  renewal succeeds by then, or the lease turns out to be held by another, it steps down
  (``on_stopped_leading``, :attr:`~LeaderElector.leadership_lost`) and tries to re-acquire.
  Because ``renew_deadline < lease_duration`` and others measure expiry from a point after
  that write, two candidates with the same clock rate never both count as leader.
* On cancellation with ``release_on_cancel`` the leader first stops leading, then writes
  ``holderIdentity: ""`` and ``leaseDurationSeconds: 1`` so a standby takes over at once.

Limits: as in client-go this is not fencing. Work a leader started keeps running until the
code reacts to :attr:`~LeaderElector.leadership_lost`; a process paused longer than
``lease_duration - renew_deadline`` between checking :attr:`~LeaderElector.is_leader` and
acting on it can still act late (the manager's write client checks again as each write
goes out). A third party that writes an empty holder into a live leader's Lease is taken at
its word (a release): both count as leader until that leader's next renewal finds the
Lease taken (at most ``retry_period`` and one request later).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aiohttp

from aioinformer._client.rest import ApiClientLike, RestClient
from aioinformer._coordination.lease import (
    Absence,
    LeaseClient,
    LeaseRecord,
    micro_time,
    new_instance,
)
from aioinformer._core import logs
from aioinformer._core.errors import AioinformerError, AlreadyExists, ConfigError, Conflict
from aioinformer._core.service import Service

__all__ = ["DEADLINE_SLACK", "LeaderElector", "LeadershipScope", "check_timings"]

log = logs.logger("aioinformer.leader")

JITTER = 1.2
"""client-go's JitterFactor: waits while acquiring last retry_period * (1 + 1.2 * rand)."""

DEADLINE_SLACK = 0.001
"""Seconds before a renew deadline from which it counts as passed. The deadline is read
on the injected clock while the waits for it are the event loop's timers, which may fire
a little early for that clock (asyncio's by up to its clock resolution, uvloop's to the
millisecond, a virtual clock to its tick): without the slack, a renewal loop would retry
with a timeout too short for any timer, at once and again, for as long as the clock stays
short of the deadline (for ever on a virtual clock, which moves only when the loop idles).
Stepping down that much early is always safe."""

FAILURES: tuple[type[BaseException], ...] = (
    AioinformerError,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    ValueError,
)
"""What one failed acquire/renew/release attempt may raise: logged, then retried."""


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """Raise :class:`ConfigError` unless lease_duration > renew_deadline > 1.2 * retry_period
    > 0 (client-go's rule: a leader must give up before anyone else may take over)."""
    if not retry_period > 0:
        raise ConfigError(f"retry_period must be > 0, got {retry_period}")
    if not renew_deadline > JITTER * retry_period:
        raise ConfigError(
            f"renew_deadline ({renew_deadline}) must be > {JITTER} * retry_period ({retry_period})"
        )
    if not lease_duration > renew_deadline:
        raise ConfigError(
            f"lease_duration ({lease_duration}) must be > renew_deadline ({renew_deadline})"
        )


class LeadershipScope:
    """What :meth:`LeaderElector.leadership` yields: a cancel scope tied to one term.

    When leadership is lost while the ``async with`` body runs, the body is cancelled and
    the block exits normally with :attr:`lost` True (the cancellation is absorbed, as an
    anyio CancelScope does). A cancellation from elsewhere propagates as usual.
    """

    def __init__(self) -> None:
        self.lost = False
        """True when the body was cancelled because leadership was lost."""


class _Leadership:
    def __init__(self, elector: LeaderElector, timeout: float | None) -> None:
        self._elector = elector
        self._timeout = timeout
        self._scope = LeadershipScope()
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0

    async def __aenter__(self) -> LeadershipScope:
        await self._elector.wait_leader(self._timeout)
        self._task = asyncio.current_task()
        assert self._task is not None
        self._cancelling = self._task.cancelling()
        self._elector._scopes.add(self._on_lost)
        return self._scope

    def _on_lost(self) -> None:
        self._elector._scopes.discard(self._on_lost)
        self._scope.lost = True
        assert self._task is not None
        self._task.cancel()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        self._elector._scopes.discard(self._on_lost)
        if self._scope.lost and self._task is not None:
            ours = self._task.uncancel() <= self._cancelling
            return ours and exc_type is asyncio.CancelledError
        return False


class LeaderElector(Service):
    """One candidate in a Lease-based leader election (see the module docstring).

    Run :meth:`run` in a task (or use ``async with elector:``, which does), then follow
    the state through :attr:`is_leader`, :meth:`wait_leader`, the :attr:`leading` and
    :attr:`leadership_lost` events, the callbacks, or :meth:`leadership`::

        elector = LeaderElector(api, name="my-ctl", namespace="ops", identity=pod_name)
        async with elector:
            while True:
                async with elector.leadership() as term:
                    await run_controllers()      # cancelled when leadership is lost
                log.warning("lost leadership: %s", term.lost)

    Callbacks are plain functions called on the event loop; they must not block (start a
    task for async work). ``on_new_leader(identity)`` is called whenever the observed
    holder changes to a non-empty identity (this one included). An exception in a
    callback is logged and does not disturb the election.

    Args:
        api_client: a kubernetes_asyncio ``ApiClient``.
        name: the Lease's name, the same for every candidate.
        namespace: the Lease's namespace.
        identity: this candidate's ``holderIdentity``; unique among live candidates (the
            pod's name): a second live candidate with it is detected (ERROR) and does not
            lead while this one holds the Lease.
        lease_duration: seconds others wait, from when they last saw the Lease change,
            before they may take it (written as ``ceil(lease_duration)``).
        renew_deadline: seconds after the start of its last successful renewal that a
            holder still counts as holding (must be below ``lease_duration``).
        retry_period: seconds between two renewals (and two tries to acquire).
        release_on_cancel: on cancellation, release the Lease (empty holder) so another
            candidate takes over at once instead of after ``lease_duration``.
        clock: the local clock every duration is measured by (``time.monotonic``).
        on_started_leading: called when this candidate becomes the leader.
        on_stopped_leading: called when it stops leading (lost, or released on
            cancellation).
        on_new_leader: called with the holder's identity whenever the observed holder
            changes to a non-empty one (this candidate included).

    Raises:
        ConfigError: an empty name or identity, or timings that cannot hold
            (``lease_duration > renew_deadline > 1.2 * retry_period > 0``).
    """

    def __init__(
        self,
        api_client: ApiClientLike | RestClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Callable[[], float] = time.monotonic,
        on_started_leading: Callable[[], object] | None = None,
        on_stopped_leading: Callable[[], object] | None = None,
        on_new_leader: Callable[[str], object] | None = None,
    ) -> None:
        check_timings(lease_duration, renew_deadline, retry_period)
        if not name or not identity:
            raise ConfigError("name and identity must not be empty")
        self.name = name
        """The Lease's name."""
        self.namespace = namespace
        """The Lease's namespace."""
        self.identity = identity
        """This candidate's ``holderIdentity``; unique among live candidates."""
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.leading = asyncio.Event()
        """Set while this candidate leads."""
        self.leadership_lost = asyncio.Event()
        """Set while this candidate does not lead (initially set): await it to learn that
        the current term ended."""
        self.leadership_lost.set()
        self._clock = clock
        self._client = LeaseClient(api_client, namespace)
        self._duration_s = max(1, math.ceil(lease_duration))
        self._lease: dict[str, Any] | None = None  # last Lease read or written (its RV)
        self._observed: LeaseRecord | None = None
        self._observed_time = -math.inf
        self._renewed = -math.inf  # clock() when the last successful write started
        self._absence = Absence(self._duration_s, (2 + JITTER) * retry_period)
        self._created: float | None = None  # clock() when it sent the create of a missing Lease
        self._reported = ""
        self._instance = new_instance()
        self._duplicates: set[str] = set()  # other instances of this identity, logged
        self._scopes: set[Callable[[], None]] = set()

    # -- state ---------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True while leading and the last successful renewal started < renew_deadline ago."""
        return self.leading.is_set() and self._clock() - self._renewed < self.renew_deadline

    @property
    def leader(self) -> str | None:
        """The holder this candidate last observed (None when unknown or released)."""
        return (self._observed.holder or None) if self._observed else None

    @property
    def lease_version(self) -> int | None:
        """The resourceVersion of the Lease as this candidate last read or wrote it (while
        leading: its last renewal, first the write that took the Lease); None before."""
        rv = ((self._lease or {}).get("metadata") or {}).get("resourceVersion")
        return int(rv) if isinstance(rv, str) and rv.isdigit() else None

    @property
    def observed_record(self) -> LeaseRecord | None:
        """The election record last read or written by this candidate."""
        return self._observed

    async def wait_leader(self, timeout: float | None = None) -> None:
        """Return once this candidate leads; ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            await self.leading.wait()

    async def wait_not_leader(self) -> None:
        """Return once this candidate does not lead (at once if it does not now)."""
        await self.leadership_lost.wait()

    def leadership(self, timeout: float | None = None) -> _Leadership:
        """``async with elector.leadership() as scope:`` waits to lead (``TimeoutError``
        after ``timeout``), then runs the body until it ends or leadership is lost, in
        which case the body is cancelled and ``scope.lost`` is True."""
        return _Leadership(self, timeout)

    # -- running -------------------------------------------------------------------------------

    def _service_name(self) -> str:
        return f"leader-elector:{self.name}"

    async def run(self) -> None:
        """Acquire, lead until the lease is lost, re-acquire; forever, until cancelled.

        On cancellation it stops leading first, then (with ``release_on_cancel``) releases
        the lease, bounded by ``renew_deadline``.
        """
        self._begin()
        try:
            self._ready()
            while True:
                await self._acquire()
                self._start_leading()
                await self._renew()
                self._stop_leading()
        finally:
            self._stop_leading()
            try:
                if self.release_on_cancel:
                    await self._release()
            finally:
                self._end()

    async def _acquire(self) -> None:
        while True:
            if await self._attempt(self.renew_deadline):
                if self._created is None or self._clock() >= self._created + self.renew_deadline:
                    self._created = None
                    return
            elif not self._holds():
                self._created = None
            await asyncio.sleep(self.retry_period * (1 + JITTER * random.random()))

    async def _renew(self) -> None:
        """Return when leadership is lost."""
        while True:
            await asyncio.sleep(self.retry_period)
            while True:
                left = self._renewed + self.renew_deadline - self._clock()
                if left <= DEADLINE_SLACK:
                    log.warning("lease %s/%s: renew deadline passed", self.namespace, self.name)
                    return
                if await self._attempt(left):
                    break
                if not self._holds():
                    log.warning("lease %s/%s: taken by %s", self.namespace, self.name, self.leader)
                    return
                left = self._renewed + self.renew_deadline - self._clock()
                await asyncio.sleep(max(0.0, min(self.retry_period, left)))

    async def _attempt(self, timeout: float) -> bool:
        start = self._clock()
        try:
            async with asyncio.timeout(timeout):
                ok = await self._try_acquire_or_renew()
        except FAILURES as exc:
            contention = isinstance(exc, Conflict | AlreadyExists)
            level = logging.INFO if contention else logging.WARNING
            log.log(level, "lease %s/%s: attempt failed: %r", self.namespace, self.name, exc)
            ok = False
        if ok:
            self._renewed = start
        holder = self._observed.holder if self._observed else ""
        if holder != self._reported:
            self._reported = holder
            if holder:
                self._call(self.on_new_leader, holder)
        return ok

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time()
        record = LeaseRecord(self.identity, self._duration_s, now, now, 0, self._instance)
        old = self._observed
        # 1. fast path: the leader updates optimistically with the record it last wrote
        if old is not None and self._lease is not None and self._holds() and self._valid():
            mine = replace(record, acquire_time=old.acquire_time, transitions=old.transitions)
            try:
                self._lease = await self._client.update(self._lease, mine)
                self._observe(mine)
                return True
            except FAILURES as exc:
                log.info("lease %s/%s: optimistic renew failed: %r", self.namespace, self.name, exc)
        # 2. read it, or create it
        sent = self._clock()
        lease = await self._client.get(self.name)
        if lease is None:
            # a missing Lease is no news from its holder, who may lead on until its next
            # renewal: the leader creates it again at once; anyone else only once it has
            # seen it missing for a whole lease duration (a first deployment included)
            self._absence.missing(sent, self._clock())
            if self.leading.is_set() and self._holds():
                await self._write(self._client.create(self.name, record))
                return True
            if self._observed is not None and not self._absence.long_enough():
                return False
            await self._write(self._client.create(self.name, record))
            self._created = sent  # (it leads renew_deadline later: see _acquire)
            return True
        current = self._see(lease)
        # 3. held by another and not expired by our clock
        if current.holder and self._valid() and not self._holds():
            return False
        # 4. take it (or renew it)
        if self._holds():
            record = replace(
                record, acquire_time=current.acquire_time, transitions=current.transitions
            )
        else:
            record = replace(record, transitions=current.transitions + 1)
        await self._write(self._client.update(lease, record))
        return True

    async def _write(self, writing: Awaitable[dict[str, Any]]) -> None:
        """Store the Lease ``writing`` writes, or, when another write came first (a
        conflict), learn at once who holds it now before raising."""
        try:
            self._lease = await writing
        except (Conflict, AlreadyExists):
            lease = await self._client.get(self.name)
            if lease is not None:
                self._see(lease)
            raise
        self._absence.present()
        self._observe(LeaseRecord.from_lease(self._lease))

    def _see(self, lease: dict[str, Any]) -> LeaseRecord:
        """Keep ``lease`` (its resourceVersion) and observe its record if it changed."""
        self._lease = lease
        self._absence.present()
        current = LeaseRecord.from_lease(lease)
        if current != self._observed:
            self._check_duplicate(current)
            self._observe(current)
        return current

    def _check_duplicate(self, current: LeaseRecord) -> None:
        """ERROR once per instance when a record naming this identity but another instance
        was written while this candidate watched: another live candidate uses it."""
        if current.holder != self.identity or current.instance == self._instance:
            return
        if self._observed is None or current.instance in self._duplicates:
            return  # first sight: maybe the record of this identity's previous process
        self._duplicates.add(current.instance)
        log.error(
            "lease %s/%s: another live candidate uses the identity %r (instance %s; this one "
            "is %s): this one will not lead while that one holds the lease. Identities must "
            "be unique among candidates (use the pod's name)",
            self.namespace, self.name, self.identity, current.instance or "without one",
            self._instance,
        )  # fmt: skip

    async def _release(self) -> None:
        if self._lease is None or not self._holds():
            return
        try:
            async with asyncio.timeout(self.renew_deadline):
                record = await self._client.release(
                    self.name, self._lease, self.identity, self._instance
                )
            self._observe(record)
        except FAILURES as exc:
            log.warning("lease %s/%s: release failed: %r", self.namespace, self.name, exc)

    def _observe(self, record: LeaseRecord) -> None:
        self._observed = record
        self._observed_time = self._clock()

    def _holds(self) -> bool:
        """Whether the record last observed names this candidate (identity and instance)."""
        return self._observed is not None and self._observed.held_by(self.identity, self._instance)

    def _valid(self) -> bool:
        duration = self._observed.duration_s if self._observed else 0
        return self._observed_time + duration > self._clock()

    def _start_leading(self) -> None:
        log.info("lease %s/%s: %s started leading", self.namespace, self.name, self.identity)
        self.leading.set()
        self.leadership_lost.clear()
        self._call(self.on_started_leading)

    def _stop_leading(self) -> None:
        if not self.leading.is_set():
            return
        log.info("lease %s/%s: %s stopped leading", self.namespace, self.name, self.identity)
        self.leading.clear()
        self.leadership_lost.set()
        for cancel in list(self._scopes):
            cancel()
        self._call(self.on_stopped_leading)

    @staticmethod
    def _call(callback: Callable[..., object] | None, *args: Any) -> None:
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            log.exception("leader election callback %r failed", callback)
