"""Controller: informer changes -> WorkQueue -> ``reconcile(key)`` workers, with freshness
protection, expectations and fencing.

A reconciler is ``async def reconcile(key: str) -> Result | None``. It reads the informers'
caches and writes through :attr:`aioinformer.Manager.client`, which keeps the controller's
books by itself (:mod:`~aioinformer._runtime.bookkeeping`): each write records the
resourceVersion the next reconcile of ``key`` must see (the per-object form of KEP-5647's
read-your-writes gate) and the creations and deletions of owned objects it must observe
first (client-go's ControllerExpectations), and each is fenced. Writes made another way can
be booked by hand: :meth:`Controller.record_write` and :attr:`Controller.expectations`.

Contracts:

* A key is never reconciled by two workers at once (the WorkQueue's guarantee), nor by two
  replicas: right before each reconcile starts (after its freshness and expectations
  waits) the controller asks ``may_act(key)`` (the manager's leader or shard Lease, valid by
  the local clock), and the manager cancels in-flight reconciles the moment it loses a key.
* Before a key is reconciled it waits (bounded by ``freshness_timeout``) until every
  informer has seen the writes recorded for it, and is requeued with backoff if one has not;
  while its expectations are pending it is not reconciled (checked again each second).
  Both are counted in ``stale_reads_avoided``.
* Errors are logged with the key, once per distinct error: the first of each kind with
  its traceback, then a summary at most every 10 s (:mod:`~aioinformer._core.failurelog`),
  a kind being an exception type raised through one code path (the same frames; for an
  API error, the same status code too), whatever its message, key or retry. They are
  counted in ``errors`` and in ``aioinformer_reconcile_errors_total`` (by controller and
  error type), told on the object as a Warning Event ``ReconcileError`` (see
  :attr:`ControllerOptions.error_events`) and retried with per-key exponential backoff;
  a reconcile taking longer than ``reconcile_timeout`` is cancelled and counts as an
  error, and one still running ``min(1 s, reconcile_timeout / 4)`` after its cancellation
  is abandoned (logged; its writes through the manager's client are refused; its key
  waits for it to end), so a worker is never held longer than that by a cleanup;
  ``Result(requeue=True)`` retries with backoff, ``Result(requeue_after=s)`` after ``s``.
* Owned objects map to their controller owner: the controller ownerReference whose kind and
  API group are the primary's (the kind discovered from the server unless given), in the
  dependent's namespace. With a namespaced primary informer, keys of other namespaces are
  ignored (controllers of one kind can split the namespaces and share owned informers).
* A write of a reconcile whose outcome is unknown (its answer lost: "maybe done") is
  settled before its key is reconciled again: what it did is learned and the caches have
  seen it (:meth:`Controller.settle_first`; requeued with backoff until then, at most
  ``expectations_ttl``; counted in ``stale_reads_avoided`` as ``unsettled``).
* Owned and watched informers can change while it runs (:meth:`Controller.add_owns`,
  :meth:`Controller.add_watches`, :meth:`Controller.remove_source`): one added is
  followed from its current state on (ADDED for each object it holds, then its changes);
  one removed, or one that stops (its last :class:`~aioinformer.InformerHandle` released),
  is followed no more: its subscription ends, it leaves :attr:`Controller.owns` (so no
  creation of its objects is expected any longer) and a reconcile waiting for it to see a
  write waits no more. Its primary informer must run as long as the controller: one that
  stops leaves the controller reconciling what it last held, told of no change.
* Stopping (cancelling :meth:`Controller.run`) ends within ``shutdown_timeout`` whatever
  the reconciles do: they may finish until shortly before it, then they are cancelled, and
  one that ignores its cancellation is abandoned (its writes through the manager's client
  are fenced).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TypeAlias

from aioinformer._cache.handle import InformerHandle
from aioinformer._cache.handlers import Subscription
from aioinformer._cache.informer import Informer
from aioinformer._client.discovery import ApiResource
from aioinformer._core import logs
from aioinformer._core.callables import check_callable, check_callables
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._core.failurelog import FailureLog
from aioinformer._core.objects import KubeObject
from aioinformer._core.service import Service, wait_ended
from aioinformer._runtime import context
from aioinformer._runtime.events import EventRecorder
from aioinformer._runtime.expectations import Expectations
from aioinformer._runtime.metrics import Metrics, WorkQueueMetricsAdapter
from aioinformer._runtime.ratelimit import RateLimiter, default_controller_rate_limiter
from aioinformer._runtime.workqueue import WorkQueue, WorkQueueStatistics

__all__ = [
    "ERROR_EVENT_INTERVAL",
    "ERROR_EVENT_REASON",
    "Controller",
    "ControllerStatistics",
    "Mapper",
    "Predicate",
    "Reconciler",
    "Result",
    "generation_changed",
]

log = logs.logger("aioinformer.controller")

Predicate: TypeAlias = Callable[[KubeObject | None, KubeObject], bool]
"""``predicate(old, new)``: whether an update of a primary object triggers a reconcile
(``old`` is None for an object the controller has not seen before)."""
Mapper: TypeAlias = Callable[[KubeObject], Iterable[str]]
"""Maps an object of a watched informer to the keys of the primary objects to reconcile."""
Reconciler: TypeAlias = Callable[[str], Awaitable["Result | None"]]
"""``async def reconcile(key) -> Result | None``."""
Source: TypeAlias = Informer | InformerHandle
"""What a controller follows: an informer, or a hold on one (its subscriptions then end
when the hold is released)."""

_EXPECTATIONS_RECHECK = 1.0
ERROR_EVENT_INTERVAL = 60.0
"""Seconds within which a key failing again the same way records no new Warning Event."""
ERROR_EVENT_REASON = "ReconcileError"
"""The reason of the Warning Event a failing reconcile records on its object."""


def _of(inf: Informer, resource: ApiResource) -> bool:
    """Whether ``inf`` caches objects of ``resource``."""
    return (inf.group, inf.version, inf.plural) == (
        resource.group,
        resource.version,
        resource.plural,
    )


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing (None or ``Result()``), a rate-limited
    requeue (``requeue=True``), or a requeue after ``requeue_after`` seconds."""

    requeue: bool = False
    """Reconcile the key again after the rate limiter's per-key backoff."""
    requeue_after: float | None = None
    """Reconcile the key again after this many seconds (and reset its backoff)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerOptions:
    """How a controller reconciles (its tuning; what it reconciles is its constructor's):
    one frozen object, accepted unchanged by :class:`Controller` and
    :meth:`aioinformer.Manager.controller`."""

    concurrency: int = 1
    """How many keys are reconciled at once (never the same key twice)."""
    rate_limiter: RateLimiter[str] | None = None
    """The work queue's per-key retry delays (None: client-go's, 5 ms doubling to 1000 s,
    and an overall 10 per second bucket)."""
    freshness: bool = True
    """Read-your-writes: a reconcile of a key waits until every informer has seen the
    writes recorded for it."""
    freshness_timeout: float = 5.0
    """Seconds that wait may take; then the key is requeued with backoff instead of
    reconciled on a stale cache."""
    expectations: bool = True
    """A key is not reconciled while creations or deletions recorded for it are still
    unobserved (client-go's ControllerExpectations)."""
    expectations_ttl: float = 300.0
    """Seconds after which an expectation is given up as lost."""
    reconcile_timeout: float | None = None
    """Seconds one reconcile may run before it is cancelled (an error, retried with
    backoff); one still running ``min(1 s, reconcile_timeout / 4)`` later is abandoned
    (fenced, logged): the worker is free by then. None: no limit."""
    resync_period: float | None = None
    """Every so many seconds, every cached primary object is reconciled again (client-go's
    resync, controller-runtime's SyncPeriod), so drift the changes do not show is corrected;
    None: never. Per object, a reconcile returns ``Result(requeue_after=...)``."""
    shutdown_timeout: float = 30.0
    """Seconds a stop may take: running reconciles may finish until shortly before, then
    they are cancelled."""
    error_events: bool = True
    """A failing reconcile records a Warning Event ``ReconcileError`` on its primary
    object, with the error's type and message (cleaned of credentials, cut to 1024
    bytes), as ``kubectl describe`` shows it: once per distinct error per key, and again
    at most every 60 s while the key fails that way (the recorder counts the repeats
    into one Event, and rate-limits per object). With the manager's event recorder
    (:meth:`aioinformer.Manager.controller` gives it one, needing RBAC ``create`` and
    ``patch`` on ``events``); False: no events."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.shutdown_timeout < 0:
            raise ConfigError(f"shutdown_timeout must be >= 0, not {self.shutdown_timeout}")
        if self.reconcile_timeout is not None and self.reconcile_timeout <= 0:
            raise ConfigError(f"reconcile_timeout must be > 0, not {self.reconcile_timeout}")
        if self.resync_period is not None and self.resync_period <= 0:
            raise ConfigError(f"resync_period must be positive, not {self.resync_period}")
        if self.freshness_timeout <= 0 or self.expectations_ttl <= 0:
            raise ConfigError("freshness_timeout and expectations_ttl must be positive")


@dataclass(frozen=True, slots=True)
class ControllerStatistics:
    """A point-in-time view of one controller."""

    name: str
    """The controller's name."""
    reconciles: int
    """Reconciles run (whatever their outcome)."""
    errors: int
    """Reconciles that raised or timed out."""
    stale_reads_avoided: int
    """Reconciles held back because the cache had not seen the controller's own writes
    (freshness) or its expected creations and deletions (expectations), or because what
    a write whose answer was lost did is not known yet (unsettled)."""
    in_flight: int
    """Reconciles running now (abandoned ones included, until they end)."""
    queue: WorkQueueStatistics
    """Its work queue's depth, in-flight keys, adds and retries."""


def generation_changed(old: KubeObject | None, new: KubeObject) -> bool:
    """Predicate: only spec changes (metadata.generation moved) trigger a reconcile.

    Args:
        old: the object as the controller last saw it (None: never seen).
        new: the object now.

    Returns:
        Whether to reconcile: ``old`` is None or its generation differs from ``new``'s.
    """
    return old is None or old.generation != new.generation


class Controller(Service):
    """Runs ``reconcile(key)`` for the keys of ``primary`` (and of the owners of ``owns``).

    Usually made with :meth:`aioinformer.Manager.controller`, which runs it; alone, run it
    with ``await controller.run()`` (until cancelled) or ``async with controller:``.

    Args:
        name: the controller's name (in logs, metrics and its work queue).
        reconcile: ``async def reconcile(key) -> Result | None``; ``key`` is "ns/name" (or
            "name" for a cluster-scoped primary). Raising retries the key with backoff.
        primary: the informer of the objects this controller reconciles.
        primary_kind: their ``kind``; by default learned from the server when the manager
            starts (a value that contradicts the server is refused then).
        owns: informers (or :class:`~aioinformer.InformerHandle` s) of objects the primary
            controls; an event on one reconciles its controller owner (and satisfies that
            owner's expectations). More may be added and removed while it runs.
        watches: ``(informer, mapper)`` pairs (or ``(handle, mapper)``): an event on the
            informer's object reconciles the keys ``mapper(obj)`` returns.
        predicates: filters on primary updates, ``predicate(old, new)``; all must hold
            (e.g. :func:`generation_changed`).
        options: how it reconciles (:class:`~aioinformer.ControllerOptions`: concurrency,
            rate limiter, freshness, expectations, timeouts, resync).
        metrics: where to record its series (default: a private registry).
        may_act: ``may_act(key)``, asked right before each reconcile and each write of the
            manager's client: False means another replica holds the key (leadership or
            sharding); the key is skipped and the write refused.
        clock: what its work queue, expectations, default rate limiter and reconcile
            durations are measured by (``time.monotonic``; the manager passes its own).
        events: where a failing reconcile's Warning Event is recorded (see
            :attr:`ControllerOptions.error_events`); None: nowhere. The manager passes a
            recorder named after the controller.
    """

    def __init__(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        primary: Informer,
        primary_kind: str | None = None,
        owns: Sequence[Source] = (),
        watches: Sequence[tuple[Source, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        options: ControllerOptions | None = None,
        metrics: Metrics | None = None,
        may_act: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        events: EventRecorder | None = None,
    ) -> None:
        check_callable(reconcile, "reconcile")
        check_callables(predicates, "predicates")
        for i, (_, mapper) in enumerate(watches):
            check_callable(mapper, f"the mapper of watches[{i}]")
        self._options = options or ControllerOptions()
        self.name = name
        self._reconcile = reconcile
        self.primary = primary
        self.primary_kind = primary_kind
        """The primary's kind (given, or discovered when the manager starts)."""
        self._clock = clock
        self.expectations = Expectations(ttl=self.options.expectations_ttl, clock=clock)
        self.metrics = metrics or Metrics()
        self.queue: WorkQueue[str] = self._new_queue()
        self._may_act = may_act
        self._writes: dict[str, dict[Informer, int]] = {}
        self._unsettled: dict[str, list[tuple[float, Callable[[], Awaitable[bool]]]]] = {}
        self._predicates = list(predicates)
        # what it follows besides its primary: (informer, its subscription, owned?)
        self._sources: list[tuple[Informer, Subscription, bool]] = []
        self._inflight: dict[str, asyncio.Task[None]] = {}
        # abandoned reconciles still running, with the queue that holds their key:
        self._lingering: dict[str, tuple[asyncio.Task[Result | None], WorkQueue[str]]] = {}
        self._abandoned: set[str] = set()  # their reconcile ids: fenced
        self.reconciles = 0
        self.errors = 0
        self._failures = FailureLog(log, clock=self._clock)
        self.events = events
        """The recorder of its Warning Events (None: it records none)."""
        self._told: dict[str, tuple[object, float]] = {}  # key -> its last event's kind, when
        self._settle_failures = FailureLog(log, logging.WARNING, clock=self._clock)
        self.stale_reads_avoided = 0
        self._scope = f"{primary.namespace}/" if primary.namespace else None
        self._subscribe(primary)
        for source in owns:
            self.add_owns(source)
        for source, mapper in watches:
            self.add_watches(source, mapper)

    @property
    def options(self) -> ControllerOptions:
        """How it reconciles. Replacing them (a new :class:`ControllerOptions`) takes
        effect at once for what is read per key (freshness, expectations and their ttl,
        timeouts) and at the next :meth:`run` for the workers (concurrency, resync)."""
        return self._options

    @options.setter
    def options(self, options: ControllerOptions) -> None:
        self._options = options
        self.expectations.ttl = options.expectations_ttl

    def __repr__(self) -> str:
        return (
            f"<Controller {self.name} primary={self.primary.name} in_flight={len(self._inflight)}>"
        )

    # -- wiring ---------------------------------------------------------------------------------

    def _subscribe(self, primary: Informer) -> None:
        def on_primary_update(old: KubeObject, new: KubeObject) -> None:
            if all(p(old, new) for p in self._predicates):
                self.queue.add(new.key)

        primary.add_handler(
            on_add=lambda o: self.queue.add(o.key),
            on_update=on_primary_update,
            on_delete=self._on_primary_delete,
            name=f"{self.name}/primary",
            coalesce=True,
        )

    def add_owns(self, source: Source) -> None:
        """Follow the objects of ``source`` (an informer, or a hold on one) as owned: each
        event reconciles the object's controller owner, from the informer's current state
        on; possible while the controller runs."""
        inf = self._follow(source)
        # An owner and its namespaced dependents share a namespace: a namespaced
        # primary's controller needs no event of another namespace's objects
        sub = source.add_handler(
            on_add=self._owned_added,
            on_update=self._owned_updated,
            on_delete=self._owned_deleted,
            name=f"{self.name}/owns:{inf.name}",
            coalesce=False,
            namespace=self.primary.namespace,
        )
        self._sources.append((inf, sub, True))

    def add_watches(self, source: Source, mapper: Mapper) -> None:
        """Follow the objects of ``source`` (an informer, or a hold on one): each event
        reconciles the keys ``mapper(obj)`` returns, from the informer's current state
        on; possible while the controller runs."""
        check_callable(mapper, "mapper")
        inf = self._follow(source)
        sub = source.add_handler(
            on_add=functools.partial(self._mapped, mapper=mapper),
            on_update=functools.partial(self._mapped_update, mapper=mapper),
            on_delete=functools.partial(self._mapped, mapper=mapper),
            name=f"{self.name}/watches:{inf.name}",
            coalesce=True,
        )
        self._sources.append((inf, sub, False))

    def _follow(self, source: Source) -> Informer:
        """The informer of ``source``; the sources whose subscription ended are dropped."""
        self._sources = [entry for entry in self._sources if not entry[1].closed]
        return source.informer if isinstance(source, InformerHandle) else source

    def remove_source(self, source: Source) -> bool:
        """Follow ``source`` (added with :meth:`add_owns`, :meth:`add_watches`, ``owns``
        or ``watches``) no more: its subscriptions are cancelled, creations and deletions
        of its objects are no longer expected, and reconciles stop waiting for it to see
        their writes. Whether it was followed. Stopping the informer is its holder's
        business (release the handle)."""
        inf = source.informer if isinstance(source, InformerHandle) else source
        found = [entry for entry in self._sources if entry[0] is inf]
        for entry in found:
            entry[1].cancel()
            self._sources.remove(entry)
        for pending in self._writes.values():
            pending.pop(inf, None)
        return bool(found)

    def resolved(self, primary: ApiResource) -> None:
        """The manager tells what the server says the primary resource is (its kind):
        a ``primary_kind`` given that contradicts it is a :class:`ConfigError`."""
        if self.primary_kind is not None and self.primary_kind != primary.kind:
            raise ConfigError(
                f"controller {self.name}: primary_kind={self.primary_kind!r}, but the server "
                f"says {primary.qualified} objects are {primary.kind!r}"
            )
        self.primary_kind = primary.kind

    def owner_of(self, obj: KubeObject) -> str | None:
        """The key of ``obj``'s controller owner if it is one of the primary's objects:
        its controller ownerReference has the primary's kind and API group."""
        ref = obj.controller_ref
        if ref is None or ref.kind != (self.primary_kind or self.primary.kind):
            return None
        group = ref.api_version.rpartition("/")[0]
        if group != self.primary.group:
            return None
        key = f"{obj.namespace}/{ref.name}" if obj.namespace else ref.name
        if self._scope is not None and not key.startswith(self._scope):
            return None
        return key

    def _mapped(self, obj: KubeObject, mapper: Mapper) -> None:
        self._enqueue(mapper(obj))

    def _mapped_update(self, _old: KubeObject, new: KubeObject, mapper: Mapper) -> None:
        self._enqueue(mapper(new))

    def _on_primary_delete(self, obj: KubeObject) -> None:
        self.expectations.forget(obj.key)
        self._told.pop(obj.key, None)
        self._unsettled.pop(obj.key, None)
        self.queue.add(obj.key)

    def _enqueue(self, keys: Iterable[str]) -> None:
        for key in keys:
            if self._scope is None or key.startswith(self._scope):
                self.queue.add(key)

    def _owned_added(self, obj: KubeObject) -> None:
        owner = self.owner_of(obj)
        if owner is not None:
            self.expectations.creation_observed(owner, obj.uid)
            self.queue.add(owner)

    def _owned_updated(self, _old: KubeObject, new: KubeObject) -> None:
        owner = self.owner_of(new)
        if owner is not None:
            self.queue.add(owner)

    def _owned_deleted(self, obj: KubeObject) -> None:
        owner = self.owner_of(obj)
        if owner is not None:
            self.expectations.deletion_observed(owner, obj.key)
            self.queue.add(owner)

    @property
    def owns(self) -> list[Informer]:
        """The informers of the objects this controller controls, as it follows them now
        (not those removed or stopped)."""
        return [inf for inf, sub, owned in self._sources if owned and not sub.closed]

    @property
    def watches(self) -> list[Informer]:
        """The informers it watches through a mapper, as it follows them now."""
        return [inf for inf, sub, owned in self._sources if not owned and not sub.closed]

    # -- what the manager's client asks ---------------------------------------------------------

    def may_act(self, key: str) -> bool:
        """Whether this replica may reconcile (and write for) ``key`` now: never from
        inside a reconcile this controller abandoned after its ``reconcile_timeout``."""
        running = context.current.get()
        if running is not None and running.reconcile_id in self._abandoned:
            return False
        return self._may_act is None or self._may_act(key)

    def owns_resource(
        self, resource: ApiResource, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> bool:
        """Whether one of the owned informers follows objects of ``resource`` in
        ``namespace`` with ``labels`` (so their creations can be expected): see
        :meth:`~aioinformer.Informer.follows`."""
        return any(_of(inf, resource) and inf.follows(namespace or "", labels) for inf in self.owns)

    def controls(self, controller_refs: Sequence[tuple[str, str, str]], key: str) -> bool:
        """Whether the controller references of an object body, ``(apiVersion, kind,
        name)``, name the primary object ``key``."""
        name = key.rpartition("/")[2]
        primary_kind = self.primary_kind or self.primary.kind
        for api_version, kind, ref_name in controller_refs:
            if kind == primary_kind and ref_name == name:
                if api_version.rpartition("/")[0] == self.primary.group:
                    return True
        return False

    def is_dependent(self, dependent: str, key: str, resource: ApiResource | None = None) -> bool:
        """Whether the cached object ``dependent`` (a key) of an owned informer (of
        ``resource``, when given) is controlled by the primary ``key``."""
        for inf in self.owns:
            if resource is not None and not _of(inf, resource):
                continue
            obj = inf.snapshot().get(dependent)
            if obj is not None:
                return self.owner_of(obj) == key
        return False

    def record_write(self, key: str, informer: Informer, resource_version: int | str) -> None:
        """The next reconcile of ``key`` waits until ``informer`` has seen this RV."""
        if not self.options.freshness:
            return
        rv = int(resource_version)
        per = self._writes.setdefault(key, {})
        per[informer] = max(rv, per.get(informer, 0))

    def settle_first(self, key: str, settle: Callable[[], Awaitable[bool]]) -> None:
        """A write of ``key``'s reconcile has an unknown outcome: before ``key`` is
        reconciled again, ``await settle()`` must return True (it learns what the write
        did; False, or an exception: the key is requeued with backoff and asks again), for
        at most ``expectations_ttl`` seconds (then it is given up, with a WARNING, as a
        lost expectation is: a server that never tells stalls the key, not the controller).
        ``key`` is queued, so this happens even when its reconcile then succeeds."""
        self._unsettled.setdefault(key, []).append((self._clock(), settle))
        self.queue.add(key)

    async def _writes_settled(self, key: str) -> bool:
        pending = self._unsettled.get(key, [])
        while pending:
            since, settle = pending[0]
            try:
                done = await settle()
            except Exception as exc:
                self._settle_failures.failed(
                    exc, "%s: %s: reading what a write did failed: %r", self.name, key, exc
                )
                done = False
            if not done and self._clock() - since >= self.options.expectations_ttl:
                log.warning("%s: %s: what a write did is still not known after %gs "
                            "(expectations_ttl): reconciling anyway", self.name, key,
                            self.options.expectations_ttl)  # fmt: skip
                done = True
            if not done:
                self._avoided("unsettled")
                self.queue.add_rate_limited(key)
                return False
            pending.pop(0)
        self._unsettled.pop(key, None)
        return True

    # -- running --------------------------------------------------------------------------------

    def _new_queue(self) -> WorkQueue[str]:
        return WorkQueue(
            name=self.name,
            rate_limiter=self.options.rate_limiter
            or default_controller_rate_limiter(clock=self._clock),
            metrics=WorkQueueMetricsAdapter(self.metrics, self.name),
            clock=self._clock,
        )

    def _service_name(self) -> str:
        return f"controller:{self.name}"

    async def run(self) -> None:
        """Reconcile until cancelled: every cached primary object first (what the
        informer already holds), then every key its informers' changes name.

        Cancelling it stops taking keys; running reconciles may finish until
        ``min(1 s, shutdown_timeout / 4)`` before ``shutdown_timeout``, then they are
        cancelled, and one still running at the end is abandoned (logged; its writes
        through the manager's client are fenced). Queued keys are dropped: the next run
        starts again from every cached object. It may run again after it ended (a
        replica that leads again)."""
        self._begin()
        if self.queue.shutting_down:
            self.queue = self._new_queue()
        try:
            async with asyncio.TaskGroup() as tg:
                for i in range(self.options.concurrency):
                    tg.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                if self.options.resync_period is not None:
                    tg.create_task(self._resync(self.options.resync_period))
                self._enqueue_all()
                self._ready()
                await asyncio.get_running_loop().create_future()  # until cancelled
        finally:
            try:
                await self._shutdown(self.options.shutdown_timeout)
            finally:
                self._end()

    def _enqueue_all(self) -> None:
        for obj in self.primary.snapshot().list():
            self.queue.add(obj.key)

    async def _resync(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            self._enqueue_all()

    @property
    def running(self) -> bool:
        """Whether it runs (:meth:`run`)."""
        return self._active

    async def _shutdown(self, timeout: float) -> None:
        """After the workers ended: drop the queued keys and stop the reconciles in flight
        within ``timeout`` (see :meth:`run`)."""
        self.queue.shutdown_nowait()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        inflight = list(self._inflight.values())
        grace = min(1.0, timeout / 4)
        if inflight and timeout - grace > 0:
            await asyncio.wait(inflight, timeout=timeout - grace)
        why = f"stopping, shutdown_timeout {timeout:g}s"
        await self._cancel(inflight, deadline, why, logging.WARNING)

    def abort_reconciles(self, keys: Callable[[str], bool] | None = None) -> int:
        """Cancel, without waiting, the running reconciles of the keys ``keys(key)``
        selects (all when None): this replica just lost them. Returns how many."""
        chosen = [t for k, t in self._inflight.items() if (keys is None or keys(k))]
        running = [t for t in chosen if not t.done()]
        if running:
            log.warning("%s: cancelling %d running reconciles (this replica no longer "
                        "holds their keys)", self.name, len(running))  # fmt: skip
        for task in running:
            task.cancel()
        return len(running)

    async def cancel_reconciles(
        self, keys: Callable[[str], bool] | None = None, timeout: float = 1.0
    ) -> None:
        """Cancel the running reconciles of the keys ``keys(key)`` selects (all when None):
        this replica hands them over. Returns within ``timeout``; the keys stay queued, and
        :meth:`may_act` decides whether they are reconciled again. A hand-over whose
        reconciles all ended in time is logged at INFO; one still running then is
        abandoned (ERROR: its writes through the manager's client are refused)."""
        chosen = [t for k, t in self._inflight.items() if keys is None or keys(k)]
        deadline = asyncio.get_running_loop().time() + timeout
        await self._cancel(chosen, deadline, "handing their keys over", logging.INFO)

    async def _cancel(
        self, tasks: list[asyncio.Task[None]], deadline: float, why: str, level: int
    ) -> None:
        """Cancel ``tasks`` (logged at ``level``), wait for them until ``deadline``, and
        say at INFO that they ended, or at ERROR which are abandoned still running."""
        running = [t for t in tasks if not t.done()]
        if not running:
            return
        log.log(level, "%s: cancelling %d running reconciles (%s)", self.name, len(running), why)
        for task in running:
            task.cancel()
        left = deadline - asyncio.get_running_loop().time()
        if left > 0:
            await asyncio.wait(running, timeout=left)
        stuck = [t.get_name() for t in running if not t.done()]
        if not stuck:
            log.info("%s: the %d cancelled reconciles ended", self.name, len(running))
        else:
            log.error(
                "%s: abandoned %d reconciles still running after their cancellation (%s): "
                "their writes through the manager's client are refused",
                self.name,
                len(stuck),
                ", ".join(stuck),
            )

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                key = await queue.get()
            except ClosedError:
                return
            task = asyncio.create_task(self._process(key), name=f"reconcile {self.name} {key}")
            self._inflight[key] = task
            task.add_done_callback(functools.partial(self._settled, queue, key))
            await asyncio.wait([task])

    def _settled(self, queue: WorkQueue[str], key: str, task: asyncio.Task[None]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
        held = self._lingering.get(key)
        if held is None or held[1] is not queue:  # (an abandoned reconcile holds its key)
            queue.done(key)
        if not task.cancelled() and task.exception() is not None:  # a bug outside the reconcile
            exc = task.exception()
            self._failures.failed(exc, "%s: processing %s failed: %r", self.name, key, exc)
            queue.add_rate_limited(key)

    async def _process(self, key: str) -> None:
        if key in self._lingering:  # run again while one abandoned before still runs:
            return  # the key is queued again when that one ends
        if self.options.freshness and not await self._fresh_enough(key):
            return
        if key in self._unsettled and not await self._writes_settled(key):
            return
        if self.options.expectations and not self.expectations.satisfied(key):
            self._avoided("expectations")
            self.queue.add_after(key, _EXPECTATIONS_RECHECK)
            return
        if not self.may_act(key):  # right before it starts: after the waits above
            self.queue.forget(key)
            return
        running = context.Reconciling(self, key, context.next_reconcile_id(self.name))
        token = context.current.set(running)
        t0 = self._clock()
        try:
            result = await self._bounded(key, running)
        except TimeoutError:
            self._failed(key, f"timed out after {self.options.reconcile_timeout}s", None)
            return
        except ClosedError as exc:  # an informer it reads has stopped: nothing to retry
            log.warning("%s: %s: %s", self.name, key, exc)
            return
        except Exception as exc:
            self._failed(key, "failed", exc)
            return
        finally:
            context.current.reset(token)
            self.reconciles += 1
            self.metrics.reconcile_duration.labels(self.name).observe(self._clock() - t0)
        self._told.pop(key, None)  # (it succeeded: a new failure is told at once)
        if result is not None and result.requeue_after is not None:
            self.metrics.reconciles.labels(self.name, "requeue_after").inc()
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
        elif result is not None and result.requeue:
            self.metrics.reconciles.labels(self.name, "requeue").inc()
            self.queue.add_rate_limited(key)
        else:
            self.metrics.reconciles.labels(self.name, "success").inc()
            self.queue.forget(key)

    async def _bounded(self, key: str, running: context.Reconciling) -> Result | None:
        """``reconcile(key)``, for at most ``reconcile_timeout`` seconds (TimeoutError
        then): it is cancelled, and if it has not ended ``min(1 s, reconcile_timeout / 4)``
        later (a cleanup that ignores or outlasts its cancellation) it is abandoned: the
        worker goes on, the abandoned reconcile's writes are refused (:meth:`may_act` is
        False inside it) and its key is not reconciled again before it has ended."""
        timeout = self.options.reconcile_timeout
        if timeout is None:
            return await self._reconcile(key)

        async def reconcile() -> Result | None:  # (the reconciler returns an awaitable)
            return await self._reconcile(key)

        attempt = asyncio.create_task(reconcile(), name=f"reconcile {self.name} {key}")
        try:
            await asyncio.wait([attempt], timeout=timeout)
            if attempt.done():
                return attempt.result()
            attempt.cancel()
            await asyncio.wait([attempt], timeout=min(1.0, timeout / 4))
        except asyncio.CancelledError:  # stopping, or the key lost: the reconcile goes too
            attempt.cancel()
            await wait_ended(attempt)
            raise
        if attempt.done():
            if not attempt.cancelled():
                attempt.exception()  # (read: what it raised while cancelled is its timeout)
        else:
            self._abandon(key, attempt, running, timeout)
        raise TimeoutError

    def _abandon(
        self,
        key: str,
        attempt: asyncio.Task[Result | None],
        running: context.Reconciling,
        timeout: float,
    ) -> None:
        """Let a timed-out reconcile that does not end go on alone: fenced, its key held
        (the queue does not hand it out) until it ends, then retried."""
        queue = self.queue
        self._abandoned.add(running.reconcile_id)
        self._lingering[key] = (attempt, queue)
        log.error(
            "%s: abandoned the reconcile of %s (%s), still running after its cancellation "
            "(reconcile_timeout %gs): its writes through the manager's client are refused "
            "and %s waits for it to end",
            self.name,
            key,
            running.reconcile_id,
            timeout,
            key,
        )

        def ended(task: asyncio.Task[Result | None]) -> None:
            self._abandoned.discard(running.reconcile_id)
            del self._lingering[key]
            if not task.cancelled():
                task.exception()  # (read)
            log.info("%s: the abandoned reconcile of %s ended", self.name, key)
            queue.done(key)  # queued again (its timeout was a rate-limited retry)
            if self.queue is not queue:  # the controller ran again meanwhile
                self.queue.add(key)

        attempt.add_done_callback(ended)

    def _failed(self, key: str, what: str, exc: Exception | None) -> None:
        """A reconcile of ``key`` failed (``exc`` raised, or timed out when None): count,
        log, tell and retry it, as the module docstring says."""
        self.errors += 1
        kind = _kind(exc)
        error = "timeout" if exc is None else type(exc).__name__
        if exc is not None:
            what = f"{what}: {exc!r}"
        self._failures.failed(exc, "%s: reconcile of %s %s; retrying with backoff", self.name,
                              key, what, kind=kind)  # fmt: skip
        self.metrics.reconciles.labels(self.name, "error").inc()
        self.metrics.reconcile_errors.labels(self.name, error).inc()
        if exc is None:
            message = f"reconcile {what} (reconcile_timeout)"
        else:
            message = f"{error}: {exc}" if str(exc) else error
        self._tell(key, kind, message)
        self.queue.add_rate_limited(key)

    def _tell(self, key: str, kind: object, message: str) -> None:
        """Record the failure of ``key`` as a Warning Event on its object: unless the last
        one recorded for ``key`` was of the same kind less than ERROR_EVENT_INTERVAL ago."""
        if self.events is None or not self.options.error_events:
            return
        obj = self.primary.snapshot().get(key)
        if obj is None:  # (gone: nothing to tell it on)
            return
        now = self._clock()
        told = self._told.get(key)
        if told is not None and told[0] == kind and now - told[1] < ERROR_EVENT_INTERVAL:
            return
        self._told[key] = (kind, now)
        try:
            self.events.record(obj, "Warning", ERROR_EVENT_REASON, message)
        except (ClosedError, ConfigError) as exc:  # (stopping; an object without a kind)
            log.debug("%s: %s: the failure was not recorded as an event: %s", self.name, key, exc)

    async def _fresh_enough(self, key: str) -> bool:
        pending = self._writes.get(key)
        if not pending:
            return True
        for inf, rv in list(pending.items()):
            try:
                await inf.wait_fresh(rv, timeout=self.options.freshness_timeout)
            except FreshnessTimeout:
                self._avoided("freshness")
                self.queue.add_rate_limited(key)
                return False
            except ClosedError:  # it stopped (released): nothing more to wait for
                pass
            pending.pop(inf, None)
        if not pending:
            self._writes.pop(key, None)
        return True

    def _avoided(self, reason: str) -> None:
        self.stale_reads_avoided += 1
        self.metrics.stale_reads_avoided.labels(self.name, reason).inc()

    def statistics(self) -> ControllerStatistics:
        """Reconciles run, errors, stale reads avoided, reconciles in flight, the queue."""
        return ControllerStatistics(
            name=self.name,
            reconciles=self.reconciles,
            errors=self.errors,
            stale_reads_avoided=self.stale_reads_avoided,
            in_flight=len(self._inflight) + len(self._lingering),
            queue=self.queue.statistics(),
        )


def _kind(exc: BaseException | None) -> object:
    """What tells one reconcile error from another (the kind its log lines are counted
    under): its type, the code locations its traceback passes through and, for an API
    error, the status code; not its message (it names keys, resourceVersions, times).
    None (a timeout) is a kind of its own."""
    if exc is None:
        return None
    return (type(exc), _frames(exc.__traceback__), getattr(exc, "code", None))


def _frames(tb: TracebackType | None) -> tuple[tuple[str, int], ...]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return tuple(frames)
