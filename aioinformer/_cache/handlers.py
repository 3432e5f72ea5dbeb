"""Handler fan-out: deliver the store's changes to any number of isolated subscribers.

The store writer applies a batch and calls :meth:`Dispatcher.dispatch` with its ``Change``
list; ``dispatch`` never awaits or blocks, it appends to one queue per subscription. Each
subscription drains its queue in its own task (:meth:`Dispatcher.add_handler`, sync or async
``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)``) or through an async iterator
(:meth:`Dispatcher.changes`), so a handler that awaits for minutes delays only itself, never
the writer nor another subscriber (client-go's processorListener). Per subscription:

* **Order.** Exact subscribers get every change in dispatch order. Coalescing ones get each
  key's changes in order, with the key's newest object, keys in the order of their
  oldest pending change. A key's resourceVersion never goes backwards; ``old`` of an
  UPDATED is what the subscriber last saw (for a key re-created meanwhile: the deleted one).
* **Coalescing** (``coalesce=True``) keeps at most one pending change per key, so a
  queue never holds more entries than there are objects. Pending + new gives::

      ADDED + UPDATED -> ADDED(newest)      UPDATED + UPDATED -> UPDATED(first old, newest)
      ADDED + DELETED -> nothing            UPDATED + DELETED -> DELETED(last state)
      DELETED + ADDED -> UPDATED(old=the deleted object, new)

* **Overflow policy** (``max_queue``, exact subscribers): when the backlog exceeds
  ``max_queue`` the subscription switches to coalescing (the backlog is merged per key, so
  only intermediate states are lost), counts one ``overflows`` and logs a WARNING (at most
  once per ``slow_warning_interval``; not for the initial backlog, which is expected); once
  its queue is empty it is exact again. Coalescing subscribers, bounded already, ignore
  ``max_queue``.
* **Memory bound.** ``max_queue`` defaults to :data:`DEFAULT_MAX_QUEUE` (10,000), so by
  default no subscriber, however stuck, holds more than ``max(DEFAULT_MAX_QUEUE, number of
  objects)`` changes: a stuck handler costs at most that many references, not one
  per event for as long as it is stuck. ``max_queue=None`` opts out (exact forever,
  unbounded: an audit log that must see every intermediate state, at the price of memory).
  The backlog is visible as ``depth``/``peak_depth``/``overflows`` in
  :meth:`Subscription.statistics`, in ``InformerStatistics.handlers`` and as the Prometheus
  series ``aioinformer_handler_queue_depth`` and ``aioinformer_handler_overflows_total``.
* **Errors.** A handler's exception is counted in ``errors_total`` and kept as
  ``last_error`` (a :class:`HandlerFailure`), and logged at ERROR with the subscriber and
  the object key: the first of each exception type with its traceback, later ones
  summarized at most every 10 s (:mod:`~aioinformer._core.failurelog`: a handler raising on
  every change writes one traceback, not one per change); the subscription goes on.
  ``CancelledError`` is never swallowed.
* **Slow warning.** While a synced subscription holds ``slow_warning_depth`` changes
  or more, a WARNING names the dispatcher, the subscriber and the depth, at most once per
  ``slow_warning_interval`` (client-go's "DeltaFIFO Pop Process ... slow event handlers
  blocking the queue"). The initial backlog, before ``has_synced``, is expected: no warning.
* **Sync** (client-go's per-handler HasSynced). After :meth:`Dispatcher.mark_synced` a
  subscription's ``has_synced`` turns True once it has handled every change queued
  before that call. One added later first gets ADDED for each object of ``initial`` (read
  the snapshot and subscribe without awaiting in between) and syncs once it handled those.
* **Namespace.** A subscription made with ``namespace="ns"`` is given only the changes of
  objects in that namespace (a namespace never changes, so nothing else is ever owed to
  it). The others are never queued: a namespaced controller on a cluster-wide informer
  does not pay, per event of the other namespaces, for a change and a handler call.
* **Fairness.** A consumer draining a backlog yields to the loop at least every ~2 ms. A
  slow *async* handler delays only its own subscription; a *sync* handler runs on the loop,
  and one that blocks, blocks everything (``Informer.add_handler(..., in_thread=True)`` runs
  sync handlers in a thread instead).
* **Shutdown.** :meth:`Dispatcher.aclose` drops what is queued, cancels running handlers,
  awaits every task (for at most :data:`STOP_GRACE` seconds; a handler still running then
  is abandoned, logged) and ends every stream; idempotent. Nothing is drained: changes
  are hints over state the final snapshot holds, and a stuck handler must not hang
  shutdown. A subscription's task starts with its first change, so a dispatcher whose
  informer never ran leaves nothing to stop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self, TypeAlias

from aioinformer._cache.deltas import Change, ChangeType
from aioinformer._core import logs
from aioinformer._core.callables import check_callable
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._core.failurelog import FailureLog
from aioinformer._core.objects import KubeObject

__all__ = [
    "DEFAULT_MAX_QUEUE",
    "STOP_GRACE",
    "ChangeStream",
    "Dispatcher",
    "HandlerFailure",
    "OnAdd",
    "OnDelete",
    "OnUpdate",
    "Subscription",
    "SubscriptionStatistics",
]

OnAdd: TypeAlias = Callable[[KubeObject], Awaitable[None] | None]
"""``on_add(obj)``: a plain function or a coroutine function."""
OnUpdate: TypeAlias = Callable[[KubeObject, KubeObject], Awaitable[None] | None]
"""``on_update(old, new)``: a plain function or a coroutine function."""
OnDelete: TypeAlias = Callable[[KubeObject], Awaitable[None] | None]
"""``on_delete(obj)``, ``obj`` the last known state: a plain or a coroutine function."""
_Handlers: TypeAlias = tuple[OnAdd | None, OnUpdate | None, OnDelete | None]

DEFAULT_MAX_QUEUE = 10_000
"""The default ``max_queue`` of exact subscribers (see the module docstring): a backlog
beyond it is merged per key. About 1 s of the contention scenario's peak event rate, ten times the
slow-handler warning depth: a healthy handler never reaches it."""

STOP_GRACE = 1.0
"""Seconds a stopping dispatcher waits for cancelled handlers to end: a handler whose
cancellation cleanup takes longer is abandoned (logged), so that an informer's stop, and
a factory's and a manager's, never depends on user code cooperating."""

_YIELD_INTERVAL = 0.002  # a consumer draining a backlog yields to the loop this often (s)
_SLOW, _OVERFLOW = 0, 1  # the two rate-limited warnings


@dataclass(frozen=True, slots=True)
class HandlerFailure:
    """The last failure of a subscription's handler (``Subscription.last_error``)."""

    key: str
    """The key of the object the handler was handling."""
    change: ChangeType
    """The type of the change it was handling."""
    error: Exception
    """What it raised."""


@dataclass(frozen=True, slots=True)
class SubscriptionStatistics:
    """A copy of one subscription's counters (``InformerStatistics.handlers``)."""

    name: str
    """The subscriber's name (``add_handler(name=...)``, or one made from its handlers)."""
    depth: int
    """Changes queued, not yet handed to the consumer."""
    peak_depth: int
    """The largest ``depth`` seen."""
    handled_total: int
    """Changes handled, including those whose handler raised."""
    errors_total: int
    """Handler calls that raised."""
    overflows: int
    """Times the backlog exceeded ``max_queue`` (and was merged per key)."""
    coalescing: bool
    """Whether changes are merged per key now."""
    has_synced: bool
    """Whether every change queued before the informer synced was handled."""


@dataclass(slots=True)
class _Pending:
    """One key's pending change when coalescing: from ``base`` to ``last.obj``."""

    seq: int  # number of the oldest change merged in; _pending is ordered by it
    had: bool  # the subscriber's view holds the key (it saw ``base``)
    base: KubeObject | None
    last: Change

    def change(self) -> Change:
        last = self.last
        if last.type == ChangeType.DELETED:  # so ``had``: entries that cancel out are removed
            return last
        if not self.had:
            return (
                last if last.type == ChangeType.ADDED else Change(ChangeType.ADDED, last.obj, None)
            )
        if last.type == ChangeType.UPDATED and last.old is self.base:
            return last
        return Change(ChangeType.UPDATED, last.obj, self.base)


class Subscription:
    """One subscriber: its queue, counters and sync state (see the module docstring).

    Made by :meth:`Informer.add_handler <aioinformer.Informer.add_handler>` or
    :meth:`Informer.changes <aioinformer.Informer.changes>`, not by users. The counters
    ``peak_depth``, ``handled_total``, ``errors_total``, ``overflows`` and ``last_error``
    are read-only for users.

    Args:
        dispatcher: the informer's fan-out this subscription belongs to.
        name: the subscriber's name, in logs, statistics and metrics.
        coalesce: keep at most one pending change per key.
        max_queue: an exact subscriber's backlog beyond which it is merged per key
            (None: unbounded).
        namespace: only changes of objects in this namespace are queued (None: all).
        after: the number (seq) of the store state its initial changes came from:
            changes of that state or older are skipped, the initial ones hold them.
        handlers: ``(on_add, on_update, on_delete)`` for a handler subscription, whose
            task starts with its first change; None for a change stream (its consumer
            reads the changes).
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        name: str,
        coalesce: bool,
        max_queue: int | None,
        namespace: str | None = None,
        after: int = 0,
        handlers: _Handlers | None = None,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.after = after
        """Batches numbered up to this one are not delivered (its initial objects hold them)."""
        """Only changes of objects in this namespace are queued (None: every change)."""
        self.peak_depth = self.handled_total = self.errors_total = self.overflows = 0
        self.last_error: HandlerFailure | None = None
        self._dispatcher = dispatcher
        self._failures = FailureLog(dispatcher._logger, clock=dispatcher._clock)
        self._coalesce = coalesce  # as configured; _coalescing is the current mode
        self._coalescing = coalesce
        self._max_queue = None if coalesce else max_queue
        # One of these holds the backlog: _fifo the changes numbered
        # _seq - len(_fifo) + 1 .. _seq, or _pending (coalescing) ordered by _Pending.seq.
        self._fifo: deque[Change] = deque()
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._seq = 0  # changes enqueued so far
        self._inflight: int | None = None  # number of the change being handled
        self._sync_target: int | None = None  # synced once every number <= it is handled
        self._synced = self._closed = False
        self._handlers = handlers  # (None: read as a ChangeStream)
        self._task: asyncio.Task[None] | None = None  # started with the first change
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._synced_or_closed = asyncio.Event()
        self._last_yield = 0.0
        self._warned: list[float | None] = [None, None]

    @property
    def has_synced(self) -> bool:
        """True once every change queued before the informer synced was handled."""
        return self._synced

    @property
    def depth(self) -> int:
        """Changes queued, not yet handed to the consumer."""
        return len(self._fifo) + len(self._pending)

    @property
    def coalescing(self) -> bool:
        """Whether changes are merged per key (as configured, or after an overflow)."""
        return self._coalescing

    @property
    def closed(self) -> bool:
        """True after :meth:`cancel` or the dispatcher's ``aclose()``."""
        return self._closed

    def statistics(self) -> SubscriptionStatistics:
        """Copy the counters."""
        return SubscriptionStatistics(
            self.name, self.depth, self.peak_depth, self.handled_total, self.errors_total,
            self.overflows, self._coalescing, self._synced,
        )  # fmt: skip

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Wait until :attr:`has_synced`; :class:`FreshnessTimeout` after ``timeout``
        seconds, :class:`ClosedError` if the subscription is closed first."""
        if not self._synced:
            try:
                async with asyncio.timeout(timeout):
                    await self._synced_or_closed.wait()
            except TimeoutError:
                raise FreshnessTimeout(
                    f"{self._dispatcher.name}: subscriber {self.name!r} not synced after "
                    f"{timeout}s ({self.depth} queued)"
                ) from None
        if not self._synced:
            raise ClosedError(f"{self._dispatcher.name}: subscriber {self.name!r} was closed")

    async def join(self) -> None:
        """Wait until everything queued so far has been handled (or the subscription closed)."""
        await self._idle.wait()

    def cancel(self) -> None:
        """Unsubscribe: drop the queue, cancel the task (a running handler too, unless it is
        the caller) and end the stream. Idempotent; the dispatcher's ``aclose()`` awaits
        the task."""
        self._dispatcher._forget(self)
        if self._closed:
            return
        self._closed = True
        self._fifo.clear()
        self._pending.clear()
        for event in (self._wakeup, self._idle, self._synced_or_closed):
            event.set()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()

    # -- producer side ---------------------------------------------------------------------

    def _enqueue(self, changes: Iterable[Change]) -> None:
        if self._closed:
            return
        namespace = self.namespace
        for change in changes:
            if namespace is not None and change.obj.metadata.namespace != namespace:
                continue
            self._seq += 1
            if self._coalescing:
                self._merge(change, self._seq)
            else:
                self._fifo.append(change)
                if self._max_queue is not None and len(self._fifo) > self._max_queue:
                    self._overflow()
        depth = self.depth
        self.peak_depth = max(self.peak_depth, depth)
        if self._synced and depth >= self._dispatcher._slow_depth:
            self._warn(_SLOW, "slow handler %r: %d changes queued", depth)
        self._settle()

    def _merge(self, change: Change, seq: int) -> None:
        key = change.obj.key
        entry = self._pending.get(key)
        if entry is None:
            if change.type == ChangeType.ADDED:
                self._pending[key] = _Pending(seq, False, None, change)
            else:  # the subscriber saw the previous state: UPDATED's old, DELETED's obj
                base = (
                    change.obj
                    if change.type == ChangeType.DELETED or change.old is None
                    else change.old
                )
                self._pending[key] = _Pending(seq, True, base, change)
        else:
            entry.last = change
            if change.type == ChangeType.DELETED and not entry.had:
                del self._pending[key]  # added and deleted while pending: nothing to say

    def _overflow(self) -> None:
        self.peak_depth = max(self.peak_depth, len(self._fifo))
        first = self._seq - len(self._fifo) + 1
        backlog, self._fifo = self._fifo, deque()
        self._coalescing = True
        for offset, change in enumerate(backlog):
            self._merge(change, first + offset)
        self.overflows += 1
        if self._sync_target is not None:  # not the initial backlog: that one is expected
            msg = "subscriber %r fell more than max_queue=%d behind: coalescing per key until idle"
            self._warn(_OVERFLOW, msg, self._max_queue)

    def _warn(self, which: int, msg: str, *args: object) -> None:
        now, last = self._dispatcher._clock(), self._warned[which]
        if last is None or now - last >= self._dispatcher._slow_interval:
            self._warned[which] = now
            self._dispatcher._logger.warning("%s: " + msg, self._dispatcher.name, self.name, *args)

    # -- consumer side (the handler task or an ChangeStream) --------------------------------

    def _settle(self) -> None:
        """After the queue changed: wake the consumer (starting the handler task with the
        first change), update the idle and sync states."""
        if self._fifo or self._pending:
            self._idle.clear()
            self._wakeup.set()
            if self._task is None and self._handlers is not None and not self._closed:
                self._task = self._dispatcher._start(self, self._handlers)
        else:
            self._coalescing = self._coalesce  # nothing left after an overflow: exact again
            if self._inflight is None:
                self._idle.set()
        target = self._sync_target
        if self._synced or target is None:
            return
        if self._inflight is not None and self._inflight <= target:
            return
        if self._fifo:
            head = self._seq - len(self._fifo) + 1
        elif self._pending:
            head = next(iter(self._pending.values())).seq
        else:
            head = target + 1
        if head > target:
            self._synced = True
            self._synced_or_closed.set()

    def _set_sync_target(self) -> None:
        self._sync_target = self._seq
        self._settle()

    def _take(self) -> Change | None:
        if self._fifo:
            change = self._fifo.popleft()
            self._inflight = self._seq - len(self._fifo)
            return change
        if self._pending:
            _, entry = self._pending.popitem(last=False)
            self._inflight = entry.seq
            if not self._pending and not self._coalesce:
                self._coalescing = False  # caught up after an overflow: exact again
            return entry.change()
        return None

    async def _next(self) -> Change | None:
        """Count the previous change as handled; return the next (None: closed)."""
        if self._inflight is not None:
            self._inflight = None
            self.handled_total += 1
            self._settle()
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_yield >= _YIELD_INTERVAL:
            await asyncio.sleep(0)
            self._last_yield = loop.time()
        while not self._closed:
            change = self._take()
            if change is not None:
                return change
            self._wakeup.clear()
            await self._wakeup.wait()
            self._last_yield = loop.time()
        return None

    async def _run(self, handlers: _Handlers) -> None:
        """The subscription's task: call the handlers until closed."""
        on_add, on_update, on_delete = handlers
        while (change := await self._next()) is not None:
            obj = change.obj
            try:
                if change.type == ChangeType.ADDED:
                    result = on_add(obj) if on_add else None
                elif change.type == ChangeType.UPDATED:
                    old = change.old if change.old is not None else obj
                    result = on_update(old, obj) if on_update else None
                else:
                    result = on_delete(obj) if on_delete else None
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self.errors_total += 1
                self.last_error = HandlerFailure(obj.key, change.type, exc)
                self._failures.failed(
                    exc,
                    "%s: handler %r failed on %s %s: %r",
                    self._dispatcher.name,
                    self.name,
                    change.type,
                    obj.key,
                    exc,
                )


class ChangeStream:
    """``async for change in informer.changes(): ...``: a subscription read as a stream.

    Yields :class:`Change` objects (merged ones when coalescing). A change counts as
    handled when the consumer asks for the next. Iteration ends when the stream or the
    dispatcher is closed; close it (``async with`` or :meth:`aclose`) when done, or its
    queue keeps filling. One consumer at a time.

    Args:
        subscription: the subscription to read (made by ``Informer.changes()``).
    """

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        """The subscription behind the stream (``has_synced``, ``depth``, counters)."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Change:
        change = await self.subscription._next()
        if change is None:
            raise StopAsyncIteration
        return change

    async def aclose(self) -> None:
        """Unsubscribe and end the iteration. Idempotent."""
        self.subscription.cancel()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.aclose()


class Dispatcher:
    """Fans the store writer's changes out to isolated subscriptions (see the module doc).

    ``name`` (the informer's) starts every log line; ``logger`` defaults to
    ``logging.getLogger("aioinformer.handlers")``; ``clock`` (default ``time.monotonic``)
    spaces the slow and overflow warnings ``slow_warning_interval`` apart (injectable, so
    the interval can be tested exactly). Subscribe from inside the running loop.
    """

    def __init__(
        self,
        name: str = "informer",
        *,
        slow_warning_depth: int = 1000,
        slow_warning_interval: float = 10.0,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if slow_warning_depth < 1 or slow_warning_interval < 0:
            raise ConfigError(
                "slow_warning_depth must be >= 1 and slow_warning_interval >= 0, not "
                f"{slow_warning_depth} and {slow_warning_interval}"
            )
        self.name = name
        self._slow_depth = slow_warning_depth
        self._slow_interval = slow_warning_interval
        self._logger = logger if logger is not None else logs.logger("aioinformer.handlers")
        self._clock = clock
        self._subs: list[Subscription] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._synced = self._closed = False
        self._count = 0

    @property
    def has_subscribers(self) -> bool:
        """Whether any subscription is open (else no Change needs to be built)."""
        return bool(self._subs)

    @property
    def subscriptions(self) -> list[Subscription]:
        """The open subscriptions, oldest first (a copy)."""
        return list(self._subs)

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        initial: Iterable[KubeObject] = (),
        after: int = 0,
        namespace: str | None = None,
    ) -> Subscription:
        """Subscribe handlers, called in the subscription's own task (sync or async).

        ``initial``: objects announced as ADDED first (the informer passes its snapshot to
        a subscriber added after it synced); ``after``: the number of the store state
        ``initial`` was read from, so that the batches dispatched later with a number up
        to it (already in ``initial``) are skipped. ``max_queue`` (exact subscribers): the backlog
        beyond which changes are merged per key; None for unbounded (see the module
        docstring's overflow policy). ``namespace``: only objects in it (see the module
        docstring). ``name`` defaults to the first handler's qualified name.
        :class:`ConfigError` without any handler, :class:`ClosedError` after
        :meth:`aclose`.
        """
        handlers = (on_add, on_update, on_delete)
        for what, fn in zip(("on_add", "on_update", "on_delete"), handlers, strict=True):
            if fn is not None:
                check_callable(fn, what)
        first = next((fn for fn in handlers if fn is not None), None)
        if first is None:
            raise ConfigError("add_handler needs on_add, on_update or on_delete (or changes())")
        self._loop = asyncio.get_running_loop()
        default = getattr(first, "__qualname__", "handler")
        return self._subscribe(
            name or f"{default}#{self._count + 1}",
            coalesce,
            max_queue,
            initial,
            namespace,
            after,
            handlers,
        )

    def _start(self, sub: Subscription, handlers: _Handlers) -> asyncio.Task[None]:
        """The task of ``sub``'s handlers, started with its first change: a dispatcher
        whose informer never runs (a manager that failed to start) has none to stop."""
        assert self._loop is not None
        task = self._loop.create_task(sub._run(handlers), name=f"{self.name}/{sub.name}")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def changes(
        self,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        initial: Iterable[KubeObject] = (),
        after: int = 0,
        namespace: str | None = None,
    ) -> ChangeStream:
        """Subscribe as an async iterator of :class:`Change` (see :class:`ChangeStream`;
        ``initial`` and ``after`` as for :meth:`add_handler`)."""
        name = name or f"changes#{self._count + 1}"
        return ChangeStream(self._subscribe(name, coalesce, max_queue, initial, namespace, after))

    def _subscribe(
        self,
        name: str,
        coalesce: bool,
        max_queue: int | None,
        initial: Iterable[KubeObject],
        namespace: str | None = None,
        after: int = 0,
        handlers: _Handlers | None = None,
    ) -> Subscription:
        if self._closed:
            raise ClosedError(f"{self.name}: the dispatcher is closed")
        if max_queue is not None and max_queue < 1:
            raise ConfigError(f"max_queue must be >= 1 or None, not {max_queue}")
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise ConfigError(f"namespace must be a non-empty string or None, not {namespace!r}")
        self._count += 1
        sub = Subscription(self, name, coalesce, max_queue, namespace, after, handlers)
        sub._enqueue(Change(ChangeType.ADDED, obj, None) for obj in initial)
        if self._synced:
            sub._set_sync_target()
        self._subs.append(sub)
        return sub

    def dispatch(self, changes: Sequence[Change], seq: int | None = None) -> None:
        """Queue one applied batch of ``changes``, in order, for every subscription (with
        ``seq``, the number of the state the batch made: for those whose ``after`` is
        below it).

        Never awaits, never blocks; after :meth:`aclose` it does nothing (the writer may
        finish its last batch during shutdown).
        """
        if changes:
            for sub in self._subs:
                if seq is None or sub.after < seq:
                    sub._enqueue(changes)

    def wants(self, seq: int) -> bool:
        """Whether a subscription would be given the changes of state ``seq`` (see
        :meth:`dispatch`)."""
        return any(sub.after < seq for sub in self._subs)

    def mark_synced(self) -> None:
        """The initial list has been dispatched: each subscription syncs once it has
        handled what it holds now. Later calls do nothing."""
        if not self._synced:
            self._synced = True
            for sub in self._subs:
                sub._set_sync_target()

    def statistics(self) -> list[SubscriptionStatistics]:
        """The counters of every open subscription."""
        return [sub.statistics() for sub in self._subs]

    async def aclose(self) -> None:
        """Close every subscription (dropping what is queued), cancel running handlers and
        await every task, those of cancelled subscriptions too, for at most
        :data:`STOP_GRACE` seconds: a handler still running then (its cleanup ignores or
        outlasts the cancellation) is abandoned, with an ERROR naming it. Idempotent."""
        self._closed = True
        for sub in list(self._subs):
            sub.cancel()
        me = asyncio.current_task()  # aclose() called by a handler must not await itself
        tasks = [task for task in self._tasks if task is not me]
        if not tasks:
            return
        _, stuck = await asyncio.wait(tasks, timeout=STOP_GRACE)
        if stuck:
            self._logger.error(
                "%s: abandoned %d handler tasks still running %g s after their cancellation "
                "(%s): the informer stops without them",
                self.name,
                len(stuck),
                STOP_GRACE,
                ", ".join(sorted(t.get_name() for t in stuck)),
            )

    def _forget(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._logger.error("%s: task %s crashed", self.name, task.get_name(), exc_info=exc)
