"""Controller: informer events -> WorkQueue -> ``reconcile(key)`` workers, with freshness
protection and expectations.

A reconciler is ``async def reconcile(key: str) -> Result | None``. It reads the informers'
snapshots, writes through the API client, and tells the controller about its writes:

* ``controller.record_write(key, informer, resource_version)`` after a write whose effect
  the next reconcile of ``key`` must see: that reconcile first waits (bounded by
  ``freshness_timeout``) until ``informer`` has seen at least that resourceVersion, and is
  requeued with backoff if it has not — the per-object form of KEP-5647's read-your-writes
  gate;
* ``controller.expectations.expect_creations(key, n)`` / ``expect_deletions(key, keys)``
  before creating or deleting owned objects; the owned informers' events satisfy them, and
  until then ``key`` is not reconciled (client-go's ControllerExpectations).

Both protections are on by default and counted in ``stale_reads_avoided_total``.

Contracts: a key is never reconciled by two workers at once (the WorkQueue's guarantee);
errors are logged with the key and retried with per-key exponential backoff; ``Result(
requeue_after=s)`` schedules the key again; owned objects map to their controller owner via
the controller ownerReference (same namespace, the primary's kind); with a namespaced
primary informer, keys of other namespaces are ignored (controllers of one kind can split
the namespaces and share the owned informers); predicates filter
primary updates (e.g. :func:`generation_changed`); ``stop()`` lets in-flight reconciles
finish.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from aioinformer._cache.informer import Informer
from aioinformer._core.errors import ClosedError, FreshnessTimeout
from aioinformer._core.objects import KubeObject
from aioinformer._runtime.expectations import Expectations
from aioinformer._runtime.metrics import Metrics, WorkQueueMetricsAdapter
from aioinformer._runtime.ratelimit import RateLimiter, default_controller_rate_limiter
from aioinformer._runtime.workqueue import WorkQueue, WorkQueueStatistics

__all__ = [
    "Controller",
    "ControllerStatistics",
    "Mapper",
    "Predicate",
    "Result",
    "generation_changed",
]

log = logging.getLogger("aioinformer.controller")

Predicate: TypeAlias = Callable[[KubeObject | None, KubeObject], bool]
"""``predicate(old, new)``: whether an update of a primary object triggers a reconcile
(``old`` is None for an object the controller has not seen before)."""
Mapper: TypeAlias = Callable[[KubeObject], Iterable[str]]
"""Maps an object of a watched informer to the keys of the primary objects to reconcile."""
Reconciler: TypeAlias = Callable[[str], Awaitable["Result | None"]]
"""``async def reconcile(key) -> Result | None``."""


@dataclass(frozen=True, slots=True)
class ControllerStatistics:
    """A point-in-time view of one controller."""

    name: str
    """The controller's name."""
    reconciles: int
    """Reconciles run (whatever their outcome)."""
    stale_reads_avoided: int
    """Reconciles held back because the cache had not seen the controller's own writes
    (freshness) or its expected creations and deletions (expectations)."""
    queue: WorkQueueStatistics
    """Its work queue's depth, in-flight keys, adds and retries."""


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing, a rate-limited requeue, or a requeue
    after ``requeue_after`` seconds."""

    requeue: bool = False
    requeue_after: float | None = None


def generation_changed(old: KubeObject | None, new: KubeObject) -> bool:
    """Predicate: only spec changes (metadata.generation moved) trigger a reconcile."""
    return old is None or old.generation != new.generation


def _controller_owner(kind: str) -> Mapper:
    def owner_keys(obj: KubeObject) -> Iterable[str]:
        ref = obj.controller_ref
        if ref is not None and ref.kind == kind:
            yield f"{obj.namespace}/{ref.name}" if obj.namespace else ref.name

    return owner_keys


class Controller:
    """Runs ``reconcile(key)`` for the keys of ``primary`` (and of the owners of ``owns``).

    Usually made with :meth:`aioinformer.Manager.controller`, which runs it.

    Args:
        name: the controller's name (in logs, metrics and its work queue).
        reconcile: ``async def reconcile(key) -> Result | None``; ``key`` is "ns/name" (or
            "name" for a cluster-scoped primary). Raising retries the key with backoff.
        primary: the informer of the objects this controller reconciles.
        primary_kind: their ``kind``; an owned object maps to its controller owner's key
            when that ownerReference has this kind.
        owns: informers of objects the primary creates; an event on one reconciles its
            controller owner (and satisfies that owner's expectations).
        watches: ``(informer, mapper)`` pairs: an event on the informer's object
            reconciles the keys ``mapper(obj)`` returns.
        predicates: filters on primary updates, ``predicate(old, new)``; all must hold
            (e.g. :func:`generation_changed`).
        concurrency: how many keys are reconciled at once (never the same key twice).
        rate_limiter: the work queue's per-key retry delays (default: client-go's, 5 ms
            doubling to 1000 s, and an overall 10 per second bucket).
        freshness: read-your-writes: a reconcile of a key waits until every informer has
            seen the writes recorded for it (:meth:`record_write`).
        freshness_timeout: seconds that wait may take; then the key is requeued with
            backoff instead of reconciled on a stale cache.
        expectations: a key is not reconciled while creations or deletions recorded for it
            are still unobserved (client-go's ControllerExpectations).
        expectations_ttl: seconds after which an expectation is given up as lost.
        metrics: where to record its series (default: a private registry).
        owns_key: ``owns_key(key)``, asked before each reconcile: False skips the key
            (sharding: another replica owns it).
        shutdown_timeout: seconds :meth:`stop` lets running reconciles finish before it
            cancels them.
    """

    def __init__(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        primary: Informer,
        primary_kind: str,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        concurrency: int = 1,
        rate_limiter: RateLimiter[str] | None = None,
        freshness: bool = True,
        freshness_timeout: float = 5.0,
        expectations: bool = True,
        expectations_ttl: float = 300.0,
        metrics: Metrics | None = None,
        owns_key: Callable[[str], bool] | None = None,
        shutdown_timeout: float = 30.0,
    ) -> None:
        self.name = name
        self.shutdown_timeout = shutdown_timeout
        self._reconcile = reconcile
        self.primary = primary
        self.primary_kind = primary_kind
        self.concurrency = concurrency
        self.freshness = freshness
        self.freshness_timeout = freshness_timeout
        self.use_expectations = expectations
        self.expectations = Expectations(ttl=expectations_ttl)
        self.metrics = metrics or Metrics()
        self._rate_limiter = rate_limiter
        self.queue: WorkQueue[str] = self._new_queue()
        self._owns_key = owns_key
        self._writes: dict[str, dict[Informer, int]] = {}
        self._predicates = list(predicates)
        self._workers: list[asyncio.Task[None]] = []
        self.reconciles = 0
        self.stale_reads_avoided = 0
        self._scope = f"{primary.namespace}/" if primary.namespace else None
        self._subscribe(primary, watches, owns)

    # -- wiring ---------------------------------------------------------------------------------

    def _subscribe(
        self,
        primary: Informer,
        watches: Sequence[tuple[Informer, Mapper]],
        owns: Sequence[Informer],
    ) -> None:
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
        mapper = _controller_owner(self.primary_kind)
        for inf in owns:
            # An owner and its namespaced dependents share a namespace: a namespaced
            # primary's controller needs no event of another namespace's objects
            inf.add_handler(
                on_add=functools.partial(self._owned_added, mapper=mapper),
                on_update=functools.partial(self._mapped_update, mapper=mapper),
                on_delete=functools.partial(self._owned_deleted, mapper=mapper),
                name=f"{self.name}/owns:{inf.name}",
                coalesce=False,
                namespace=primary.namespace,
            )
        for inf, fn in watches:
            inf.add_handler(
                on_add=functools.partial(self._mapped, mapper=fn),
                on_update=functools.partial(self._mapped_update, mapper=fn),
                on_delete=functools.partial(self._mapped, mapper=fn),
                name=f"{self.name}/watches:{inf.name}",
                coalesce=True,
            )

    def _mapped(self, obj: KubeObject, mapper: Mapper) -> None:
        self._enqueue(mapper(obj))

    def _mapped_update(self, _old: KubeObject, new: KubeObject, mapper: Mapper) -> None:
        self._enqueue(mapper(new))

    def _on_primary_delete(self, obj: KubeObject) -> None:
        self.expectations.forget(obj.key)
        self.queue.add(obj.key)

    def _in_scope(self, keys: Iterable[str]) -> Iterable[str]:
        """The keys the primary informer can hold: with a namespaced primary, only keys of
        its namespace (another controller of the same kind may own the rest)."""
        if self._scope is None:
            return keys
        return [k for k in keys if k.startswith(self._scope)]

    def _enqueue(self, keys: Iterable[str]) -> None:
        for key in self._in_scope(keys):
            self.queue.add(key)

    def _owned_added(self, obj: KubeObject, mapper: Mapper) -> None:
        for owner in self._in_scope(mapper(obj)):
            self.expectations.creation_observed(owner)
            self.queue.add(owner)

    def _owned_deleted(self, obj: KubeObject, mapper: Mapper) -> None:
        for owner in self._in_scope(mapper(obj)):
            self.expectations.deletion_observed(owner, obj.key)
            self.queue.add(owner)

    # -- the reconciler's side ------------------------------------------------------------------

    def record_write(self, key: str, informer: Informer, resource_version: int | str) -> None:
        """The next reconcile of ``key`` waits until ``informer`` has seen this RV."""
        if not self.freshness:
            return
        rv = int(resource_version)
        per = self._writes.setdefault(key, {})
        per[informer] = max(rv, per.get(informer, 0))

    # -- running --------------------------------------------------------------------------------

    def _new_queue(self) -> WorkQueue[str]:
        return WorkQueue(
            name=self.name,
            rate_limiter=self._rate_limiter or default_controller_rate_limiter(),
            metrics=WorkQueueMetricsAdapter(self.metrics, self.name),
        )

    def restart(self) -> None:
        """Start again after :meth:`stop` (leader election hands leadership back)."""
        if self.queue.shutting_down:
            self.queue = self._new_queue()
        self.start()

    def start(self) -> None:
        """Start the workers (the informers are run by the manager's factory)."""
        for i in range(self.concurrency):
            self._workers.append(
                asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
            )

    async def stop(self) -> None:
        """Stop taking keys; in-flight reconciles finish (those still running after
        ``shutdown_timeout`` seconds are cancelled), queued keys are dropped (the next start
        requeues every object). Idempotent."""
        try:
            async with asyncio.timeout(self.shutdown_timeout):
                await self.queue.shutdown(drain=False)
        except TimeoutError:
            log.warning(
                "%s: cancelling reconciles still running after %ss",
                self.name,
                self.shutdown_timeout,
            )
        workers, self._workers = self._workers, []
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                key = await queue.get()
            except ClosedError:
                return
            try:
                await self._process(key)
            except asyncio.CancelledError:
                raise
            except ClosedError as exc:  # an informer it reads has stopped: nothing to retry
                log.warning("%s: stopping a worker: %s", self.name, exc)
                return  # (finally: done)
            except Exception:  # a bug outside the reconcile must not kill the worker
                log.exception("%s: processing %s failed; retrying with backoff", self.name, key)
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

    async def _process(self, key: str) -> None:
        if self._owns_key is not None and not self._owns_key(key):
            self.queue.forget(key)
            return
        if self.freshness and not await self._fresh_enough(key):
            return
        if self.use_expectations and not self.expectations.satisfied(key):
            self._avoided("expectations")
            self.queue.add_after(key, 1.0)
            return
        t0 = time.perf_counter()
        try:
            result = await self._reconcile(key)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: reconcile of %s failed; retrying with backoff", self.name, key)
            self.metrics.reconciles.labels(self.name, "error").inc()
            self.queue.add_rate_limited(key)
            return
        finally:
            self.reconciles += 1
            self.metrics.reconcile_duration.labels(self.name).observe(time.perf_counter() - t0)
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

    async def _fresh_enough(self, key: str) -> bool:
        pending = self._writes.get(key)
        if not pending:
            return True
        for inf, rv in list(pending.items()):
            try:
                await inf.wait_fresh(rv, timeout=self.freshness_timeout)
            except FreshnessTimeout:
                self._avoided("freshness")
                self.queue.add_rate_limited(key)
                return False
            pending.pop(inf, None)
        if not pending:
            self._writes.pop(key, None)
        return True

    def _avoided(self, reason: str) -> None:
        self.stale_reads_avoided += 1
        self.metrics.stale_reads_avoided.labels(self.name, reason).inc()

    def statistics(self) -> ControllerStatistics:
        """Reconciles run, stale reads avoided, and the queue's statistics."""
        return ControllerStatistics(
            name=self.name,
            reconciles=self.reconciles,
            stale_reads_avoided=self.stale_reads_avoided,
            queue=self.queue.statistics(),
        )
