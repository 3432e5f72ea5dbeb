"""The informer: watch -> DeltaFIFO -> store writer -> handlers, and freshness-aware reads.

An :class:`Informer` keeps a local cache of one resource (one group/version/plural, one
namespace or all, optional selectors) in sync with the API server. Its data flow is one
direction with one writer:

    Watcher task --Delta/Replace/Bookmark--> DeltaFIFO --pop_batch--> store writer
        --publish Snapshot--> readers (no lock)      --changes--> Dispatcher (handlers)

Contracts:

* Readers never block the writer. ``informer.snapshot()`` is O(1), takes no lock and never
  awaits; a Snapshot never changes, so it can be iterated across awaits. With
  ``store="locked"`` (the baseline) reads go through ``async with informer.read()``, which
  holds a read lock for its body, as client-go's ThreadSafeStore does.
* resourceVersions compare as integers. ``wait_for_rv(rv)`` returns a snapshot whose RV is
  at least ``rv``; ``query(index, value, min_rv=...)`` combines freshness and an index;
  ``wait_until(predicate)`` re-evaluates after every publish.
* ``staleness`` is how long the oldest delta still waiting in the FIFO has been waiting
  (0 when the store is caught up): how far the cache lags what the watcher has already
  received. With ``staleness_bound`` set, reads that ask for freshness (``wait_for_rv``,
  ``query(min_rv=...)``, ``wait_fresh``) also wait while the staleness exceeds the bound.
* Handlers run in their own tasks (see :mod:`._handlers`): a slow handler delays only itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from aioinformer._cache.fifo import DeltaFIFO, Replace
from aioinformer._cache.handlers import (
    DEFAULT_MAX_QUEUE,
    Dispatcher,
    EventStream,
    Subscription,
    SubscriptionStatistics,
)
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.store import LockedStore, Snapshot, SnapshotStore
from aioinformer._cache.watcher import Watcher
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._core.objects import KubeObject, Transform

__all__ = ["Informer", "InformerStats"]

log = logging.getLogger("aioinformer.informer")

StoreKind = Literal["snapshot", "locked"]


@dataclass(frozen=True, slots=True)
class InformerStats:
    """A point-in-time view of one informer's health."""

    name: str
    """The informer's name (``plural[.group]``, plus the namespace when it has one)."""
    objects: int
    """Objects in the store."""
    resource_version: int
    """RV of the last published state."""
    seq: int
    """Number of the last published state (one per applied batch)."""
    synced: bool
    """Whether the initial list has been applied."""
    fifo_depth: int
    """Items waiting in the DeltaFIFO."""
    fifo_peak: int
    """Largest FIFO depth seen."""
    staleness: float
    """Seconds the oldest unapplied delta has waited (0 when caught up)."""
    events_per_second: float
    """Deltas applied per second, averaged over the last few seconds."""
    applied_total: int
    """Deltas applied since start."""
    relists: int
    """Relists after a 410 (or a restart of the server)."""
    watch_restarts: int
    """Watches re-established after a close, a drop or a stall."""
    decode_errors: int
    """Lines skipped because they were not valid events or objects."""
    transform_errors: int = 0
    """Objects the transform raised on (skipped)."""
    index_errors: int = 0
    """Index function calls that raised (the object left out of that index)."""
    stream_errors: int = 0
    """Failed requests without an HTTP status (connection, cut or stalled stream, non-JSON)."""
    errors_by_code: Mapping[int, int] = field(default_factory=dict)
    """HTTP status (or watch ERROR event code) -> times seen, 410s included."""
    last_error: str = ""
    """The most recent failed list or watch (see ``WatcherStats.last_error``); "" if none."""
    handlers: tuple[SubscriptionStatistics, ...] = ()
    """Each handler subscription's queue depth, peak, overflows and counters."""


class _Rate:
    """Events per second over a sliding window of one-second buckets."""

    def __init__(self, window: int = 5) -> None:
        self._window = window
        self._buckets: dict[int, int] = {}

    def add(self, n: int, now: float) -> None:
        sec = int(now)
        self._buckets[sec] = self._buckets.get(sec, 0) + n
        for old in [s for s in self._buckets if s <= sec - self._window]:
            del self._buckets[old]

    def rate(self, now: float) -> float:
        sec = int(now)
        total = sum(v for s, v in self._buckets.items() if sec - self._window < s <= sec)
        return total / self._window


class Informer:
    """A shared, indexed, freshness-aware cache of one resource. Create it through
    :meth:`aioinformer.InformerFactory.informer`; the factory runs it."""

    def __init__(
        self,
        list_watch: ListWatch,
        *,
        name: str,
        store: StoreKind = "snapshot",
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        staleness_bound: float | None = None,
        batch_size: int = 1000,
        streaming_list: bool = False,
        watcher_options: Mapping[str, Any] | None = None,
    ) -> None:
        if store not in ("snapshot", "locked"):
            raise ConfigError(f"store must be 'snapshot' or 'locked', not {store!r}")
        self.name = name
        self._namespace: str | None = getattr(list_watch, "namespace", None) or None
        self.store_kind: StoreKind = store
        self._fifo = DeltaFIFO()
        self._store: SnapshotStore | LockedStore = (
            SnapshotStore(indexers) if store == "snapshot" else LockedStore(indexers)
        )
        self._dispatcher = Dispatcher(name)
        self._watcher = Watcher(
            list_watch,
            self._fifo,
            transform=transform,
            streaming_list=streaming_list,
            name=name,
            **dict(watcher_options or {}),
        )
        self._batch_size = batch_size
        self._staleness_bound = staleness_bound
        self._synced = asyncio.Event()
        self._waiters: list[asyncio.Future[None]] = []  # one per waiting reader, woken by a publish
        self._rv = 0
        self._seq = 0
        self._objects = 0
        self._applied_total = 0
        self._rate = _Rate()
        self._closed = False
        self._pending_indexers: dict[str, IndexFunc] = {}
        self._inflight_since: float | None = None
        self._publish_listeners: list[Callable[[int, int], None]] = []
        self._listener_errors = 0

    @property
    def namespace(self) -> str | None:
        """The namespace this informer watches; None when it watches all namespaces (or
        a cluster-scoped resource)."""
        return self._namespace

    @property
    def indexers(self) -> list[str]:
        """Names of this informer's indexes."""
        return [*self._store.indexers, *self._pending_indexers]

    def merge_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index before the informer runs (the factory merges requests with it)."""
        self._pending_indexers[name] = fn

    # -- the data flow ------------------------------------------------------------------------

    async def run(self) -> None:
        """Run the watcher and the store writer until cancelled or :meth:`stop` ped."""
        for name, fn in self._pending_indexers.items():
            await self._store.add_indexer(name, fn)
        self._pending_indexers.clear()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._watcher.run(), name=f"{self.name}-watcher")
                tg.create_task(self._write_loop(), name=f"{self.name}-writer")
        finally:
            self._closed = True
            self._fifo.close()
            self._wake_waiters()
            await self._dispatcher.aclose()

    async def _write_loop(self) -> None:
        """The single writer: pop a batch, apply it, publish, notify."""
        dispatcher, store = self._dispatcher, self._store
        snapshots = isinstance(store, SnapshotStore)

        def has_subscribers() -> bool:
            return bool(dispatcher.subscriptions)

        while True:
            try:
                batch = await self._fifo.pop_batch(self._batch_size)
            except ClosedError:
                return
            # Change objects only if someone subscribed when the batch is applied (a later
            # subscriber starts from the snapshot); no await between publishing and
            # dispatching: a handler added in between would get this batch twice
            # popped but not yet applied still counts as lag (a locked writer may wait here);
            # items come in the order received, so the first is the oldest
            self._inflight_since = batch[0].received
            try:
                changes = await store.apply(batch, changes=has_subscribers)
            finally:
                self._inflight_since = None
            dispatcher.dispatch(changes)
            if not self._synced.is_set() and any(isinstance(i, Replace) for i in batch):
                self._synced.set()
                self._dispatcher.mark_synced()
            self._applied_total += len(batch)
            self._rate.add(len(batch), time.monotonic())
            if snapshots:  # O(1) and no await: a snapshot needs no reader context
                view = store.snapshot()
                self._rv, self._seq, self._objects = view.resource_version, view.seq, len(view)
                # held over to the next batch, it would cost that batch its in-place writes
                del view
            else:
                async with store.read() as locked:
                    self._rv, self._seq = locked.resource_version, locked.seq
                    self._objects = len(locked)
            for listener in self._publish_listeners:
                try:
                    listener(self._seq, self._rv)
                except Exception:  # against its contract: logged, and the writer goes on
                    self._listener_errors += 1
                    if self._listener_errors <= 10 or self._listener_errors % 1000 == 0:
                        log.exception("%s: publish listener %r raised", self.name, listener)
            self._wake_waiters()

    def stop(self) -> None:
        """Stop: close the FIFO (the writer ends) and the watcher. Idempotent."""
        self._closed = True
        self._fifo.close()
        self._watcher.stop()
        self._wake_waiters()

    def on_publish(self, listener: Callable[[int, int], None]) -> Callable[[], None]:
        """Call ``listener(seq, resource_version)`` from the writer right after each batch
        is published (before any waiter wakes); returns a function that removes it.

        For instrumentation (the benchmarks time publishes with it): the listener runs on
        the writer's path, so it must be quick. An exception it raises is logged (the first
        10, then every 1000th) and the writer goes on."""
        self._publish_listeners.append(listener)

        def remove() -> None:
            if listener in self._publish_listeners:
                self._publish_listeners.remove(listener)

        return remove

    # -- reads --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The latest published state: O(1), no lock, no await (snapshot store only)."""
        if isinstance(self._store, LockedStore):
            raise ConfigError(
                f"informer {self.name} uses store='locked', which has no snapshots: "
                "read it with `async with informer.read() as view`"
            )
        return self._store.snapshot()

    def read(self) -> AbstractAsyncContextManager[Any]:
        """``async with informer.read() as view``: a reader with the Snapshot API, for both
        store kinds (the locked store holds its read lock for the body)."""
        return self._store.read()

    @property
    def has_synced(self) -> bool:
        """Whether the initial list has been applied to the store."""
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait until the initial list has been applied (``FreshnessTimeout`` after
        ``timeout`` seconds)."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            raise FreshnessTimeout(f"informer {self.name} not synced after {timeout}s") from None

    async def wait_fresh(
        self, min_rv: int | str | None = None, timeout: float | None = None
    ) -> None:
        """Wait until the store has seen ``min_rv`` (RVs compare as integers) and, with a
        staleness bound, until the store lags the FIFO by no more than the bound."""
        target = int(min_rv) if min_rv is not None else 0
        await self._wait(
            lambda: self._rv >= target and self._within_bound(),
            timeout,
            f"resourceVersion {target} (have {self._rv})",
        )

    async def wait_for_rv(self, rv: int | str, timeout: float | None = None) -> Snapshot:
        """A snapshot whose resource_version is at least ``rv``."""
        await self.wait_fresh(rv, timeout)
        return self.snapshot()

    async def wait_until(
        self, predicate: Callable[[Snapshot], bool], timeout: float | None = None
    ) -> Snapshot:
        """The first published snapshot for which ``predicate`` holds (re-evaluated after
        every publish)."""
        holder: list[Snapshot] = []

        def check() -> bool:
            snap = self.snapshot()
            if predicate(snap):
                holder.append(snap)
                return True
            return False

        await self._wait(check, timeout, "predicate")
        return holder[-1]

    async def query(
        self,
        index: str,
        value: str,
        *,
        min_rv: int | str | None = None,
        timeout: float | None = None,
    ) -> list[KubeObject]:
        """``by_index(index, value)`` on a state at least as fresh as ``min_rv``."""
        if min_rv is not None or self._staleness_bound is not None:
            await self.wait_fresh(min_rv, timeout)
        async with self._store.read() as view:
            result: list[KubeObject] = view.by_index(index, value)
            return result

    def _within_bound(self) -> bool:
        if self._staleness_bound is None:
            return True
        return self.staleness() <= self._staleness_bound

    def staleness(self) -> float:
        """Seconds the oldest unapplied delta has been waiting (0 when caught up)."""
        return self._lag(self._fifo.statistics().oldest_age)

    def _lag(self, fifo_oldest_age: float) -> float:
        if self._inflight_since is None:
            return fifo_oldest_age
        return max(fifo_oldest_age, time.monotonic() - self._inflight_since)

    async def _wait(self, ready: Callable[[], bool], timeout: float | None, what: str) -> None:
        """Return once ``ready()`` holds, checked after every publish; FreshnessTimeout after
        ``timeout`` seconds, ClosedError once stopped. One timer for the whole wait and one
        future per wake-up: waiting costs next to nothing per publish."""
        if ready():
            return
        loop = asyncio.get_running_loop()
        # a staleness bound is time-based: re-check at least every 50 ms
        poll = self._staleness_bound is not None
        try:
            async with asyncio.timeout(timeout):
                while not ready():
                    if self._closed:
                        raise ClosedError(f"informer {self.name} stopped while waiting for {what}")
                    waiter = loop.create_future()
                    self._waiters.append(waiter)
                    try:
                        if poll:
                            await asyncio.wait((waiter,), timeout=0.05)
                        else:
                            await waiter
                    finally:
                        # not woken (timed out, cancelled): drop it unless a publish just did
                        if (waiter.cancelled() or not waiter.done()) and waiter in self._waiters:
                            self._waiters.remove(waiter)
        except TimeoutError:
            raise FreshnessTimeout(f"informer {self.name}: timed out waiting for {what}") from None

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- handlers ------------------------------------------------------------------------------

    def _initial(self, namespace: str | None = None) -> Iterable[KubeObject]:
        if not self.has_synced or isinstance(self._store, LockedStore):
            return ()
        return self._store.snapshot().list(namespace)

    def add_handler(
        self,
        on_add: Callable[..., Any] | None = None,
        on_update: Callable[..., Any] | None = None,
        on_delete: Callable[..., Any] | None = None,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
    ) -> Subscription:
        """Subscribe handlers (sync or async): ``on_add(obj)``, ``on_update(old, new)``,
        ``on_delete(obj)``. Each subscription has its own queue and task; a late one first
        receives ADDED for every cached object. ``max_queue`` caps an exact subscriber's
        backlog (None: unbounded); ``namespace`` restricts it to the objects of one
        namespace, the others never queued (see :mod:`aioinformer._cache.handlers`)."""
        return self._dispatcher.add_handler(
            on_add,
            on_update,
            on_delete,
            coalesce=coalesce,
            name=name,
            max_queue=max_queue,
            initial=self._initial(namespace),
            namespace=namespace,
        )

    def events(
        self,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
    ) -> EventStream:
        """``async for change in informer.events()``: the changes, in order (only those of
        ``namespace``'s objects, if given)."""
        return self._dispatcher.events(
            coalesce=coalesce,
            name=name,
            max_queue=max_queue,
            initial=self._initial(namespace),
            namespace=namespace,
        )

    async def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index after start; readers and the writer keep going while it builds."""
        await self._store.add_indexer(name, fn)

    # -- stats ---------------------------------------------------------------------------------

    def stats(self) -> InformerStats:
        """Objects, RV, FIFO depth and peak, staleness, events/s, relists, restarts, errors."""
        fifo = self._fifo.statistics()
        ws = self._watcher.stats
        now = time.monotonic()
        return InformerStats(
            name=self.name,
            objects=self._objects,
            resource_version=self._rv,
            seq=self._seq,
            synced=self.has_synced,
            fifo_depth=fifo.depth,
            fifo_peak=fifo.peak_depth,
            staleness=self._lag(fifo.oldest_age),
            events_per_second=self._rate.rate(now),
            applied_total=self._applied_total,
            relists=ws.relists,
            watch_restarts=ws.watch_restarts,
            decode_errors=ws.decode_errors,
            transform_errors=ws.transform_errors,
            index_errors=self._store.index_errors,
            stream_errors=ws.stream_errors,
            errors_by_code=dict(ws.errors_by_code),
            last_error=ws.last_error,
            handlers=tuple(self._dispatcher.statistics()),
        )
