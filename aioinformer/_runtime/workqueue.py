"""The controller work queue: deduplicating, delaying and rate limited (client-go's
``util/workqueue`` queue, delaying queue and rate-limiting queue as one asyncio class).

A :class:`WorkQueue` holds *keys* (any hashable; controllers use ``"namespace/name"``).
Workers ``key = await queue.get()``, process it, then ``queue.done(key)`` -- always, in a
``finally``. Contract:

* **Dedup.** A key is queued at most once: adding a queued key does nothing.
* **Never processed twice at once.** From ``get`` until ``done`` the key is *processing*;
  adding it then marks it *dirty* and it is queued again (once) when ``done`` is called,
  not handed to a second worker. So a change that arrives during processing is never lost.
* **Fair.** Distinct keys come out in the order they were first added (FIFO).
* **Delays.** ``add_after(key, delay)`` queues the key once ``delay`` seconds have passed,
  measured on the event loop's clock (like ``asyncio.sleep``). If the key is already
  waiting, the earlier deadline wins. A waiting key can be queued meanwhile by ``add``;
  when its deadline comes it is added again (deduplicated as usual). No task is spawned:
  one ``loop.call_at`` timer serves the earliest deadline.
* **Rate limited retries.** ``add_rate_limited(key)`` is ``add_after(key,
  limiter.when(key))``; ``forget(key)`` clears the key's backoff once it succeeded.
* **Shutdown** (idempotent): adds of every kind are ignored from then on (event handlers
  racing a shutdown need not catch anything) and keys still waiting for a deadline are
  dropped. ``shutdown(drain=True)`` keeps handing out queued keys (and keys re-added while
  processing) and returns once all are done; ``shutdown(drain=False)`` drops the queued
  keys at once and returns when the keys already handed out are done. ``get`` raises
  :class:`ClosedError` once shut down with nothing left to hand out. Shutdown waits for
  workers, so keep calling ``get``/``done`` until then; bound it with ``asyncio.timeout``
  if a worker may hang. ``shutdown(drain=False)`` after ``shutdown()`` abandons the rest.

Metrics: pass a :class:`WorkQueueMetrics` (e.g. Prometheus-backed); :meth:`statistics`
gives the same numbers without one. The metrics ``clock`` is injectable; it only
timestamps, it never schedules. Everything runs on one event loop; no locks.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from aioinformer._core.errors import ClosedError, ConfigError, WouldBlock
from aioinformer._runtime.ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["WorkQueue", "WorkQueueMetrics", "WorkQueueStatistics"]

K = TypeVar("K", bound=Hashable)


class WorkQueueMetrics(Protocol):
    """What a :class:`WorkQueue` reports as it works (client-go's workqueue metrics).

    ``depth`` is the number of keys waiting to be handed out (including keys re-added
    while processing); durations are seconds on the queue's ``clock``. The time-based
    gauges are refreshed every ``metrics_interval`` seconds while keys are processing, and
    once more when the last one is done, so a stuck worker shows up.
    """

    def add(self, depth: int) -> None:
        """A key was accepted (not a duplicate, not ignored); ``depth`` is the new depth."""
        ...

    def get(self, depth: int, queued_for: float) -> None:
        """A key was handed out after waiting ``queued_for`` since it was added."""
        ...

    def done(self, worked_for: float) -> None:
        """A key was done, ``worked_for`` after it was handed out."""
        ...

    def retry(self) -> None:
        """``add_rate_limited`` was called (and accepted)."""
        ...

    def longest_running(self, seconds: float) -> None:
        """The longest any processing key has been processing (0.0 when idle)."""
        ...

    def unfinished_work(self, seconds: float) -> None:
        """The summed time all processing keys have been processing (0.0 when idle)."""
        ...


@dataclass(frozen=True, slots=True)
class WorkQueueStatistics:
    """A point-in-time view of a :class:`WorkQueue`."""

    name: str
    """The queue's name."""
    depth: int
    """Keys waiting to be handed out, including keys re-added while processing."""
    waiting: int
    """Keys waiting for an ``add_after``/``add_rate_limited`` deadline."""
    processing: int
    """Keys handed out by ``get`` and not yet ``done``."""
    adds_total: int
    """Adds accepted (duplicates of a queued key and adds after shutdown not counted)."""
    retries_total: int
    """``add_rate_limited`` calls accepted."""
    longest_running: float
    """Seconds the longest processing key has been processing; 0.0 if none."""
    unfinished_work: float
    """Seconds of processing so far, summed over all processing keys; 0.0 if none."""
    getters: int
    """Tasks blocked in ``get`` right now."""
    shutting_down: bool
    """Whether ``shutdown`` was called."""


class WorkQueue(Generic[K]):
    """A deduplicating, delaying, rate-limited async work queue of hashable keys.

    Args:
        name: names the queue in metrics, logs and statistics.
        rate_limiter: the delays of :meth:`add_rate_limited` (default:
            :func:`~aioinformer.default_controller_rate_limiter`).
        metrics: receives the queue's events (adds, gets, done, retries, the longest
            running key); None: no metrics.
        clock: timestamps the events (default ``time.monotonic``).
        metrics_interval: seconds between two reports of the longest running key and the
            unfinished work while keys are processed.

    Example::

        queue: WorkQueue[str] = WorkQueue("podsets")
        queue.add("default/web")
        key = await queue.get()
        try:
            ok = await reconcile(key)
        finally:
            queue.done(key)
        if ok:
            queue.forget(key)            # reset the key's backoff
        else:
            queue.add_rate_limited(key)  # retry in 5 ms, 10 ms, 20 ms, ...
    """

    __slots__ = (
        "_added_at", "_adds", "_clock", "_dirty", "_getters", "_heap", "_idle", "_limiter",
        "_metrics", "_metrics_interval", "_processing", "_queue", "_retries", "_seq",
        "_shutting_down", "_started_at", "_ticker", "_timer", "_timer_at", "_waiting",
        "name",
    )  # fmt: skip

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter[K] | None = None,
        metrics: WorkQueueMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics_interval: float = 0.5,
    ) -> None:
        if not metrics_interval > 0:
            raise ConfigError(f"metrics_interval must be positive, not {metrics_interval}")
        self.name = name
        """Names the queue in metrics, logs and statistics."""
        self._limiter: RateLimiter[K] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        )
        self._metrics = metrics
        self._metrics_interval = metrics_interval
        self._clock = clock
        # Invariants: a key is in _queue iff it is in _dirty and not in _processing;
        # so _dirty is a subset of _queue | _processing.
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}  # dirty key -> clock() when it became dirty
        self._started_at: dict[K, float] = {}  # processing key -> clock() at get
        # Delaying: _waiting maps a key to its live deadline (loop time); _heap may also
        # hold stale, later entries for it, skipped when they surface.
        self._waiting: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._ticker: asyncio.TimerHandle | None = None
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle = asyncio.Event()  # set once shut down, nothing queued or processing
        self._shutting_down = False
        self._adds = 0
        self._retries = 0

    def __len__(self) -> int:
        """The number of keys ready to be handed out now."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shutdown` has been called."""
        return self._shutting_down

    # -- adding -----------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is already queued; if it is processing, queue it again
        when it is done. Ignored after shutdown."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._adds += 1
        self._added_at[key] = self._clock()
        if key not in self._processing:
            self._queue.append(key)
            self._wake_one()
        if self._metrics is not None:
            self._metrics.add(len(self._dirty))

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed (at once if ``delay <= 0``).

        If ``key`` is already waiting, the earlier deadline wins. Needs a running event
        loop when ``delay > 0``. Ignored after shutdown.
        """
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        current = self._waiting.get(key)
        if current is not None and current <= ready_at:
            return
        self._waiting[key] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), key))
        if ready_at < self._timer_at:
            self._schedule(loop)

    def add_rate_limited(self, key: K) -> None:
        """Add ``key`` after the delay the rate limiter gives it (a retry).
        Ignored after shutdown."""
        if self._shutting_down:
            return
        self._retries += 1
        if self._metrics is not None:
            self._metrics.retry()
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        """Clear ``key``'s backoff (call it when the key was processed successfully)."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How often ``key`` was rate-limited since it was last forgotten."""
        return self._limiter.num_requeues(key)

    # -- taking -----------------------------------------------------------------------------

    def get_nowait(self) -> K:
        """Hand out the oldest queued key; it is processing until :meth:`done`.

        Raises :class:`WouldBlock` if no key is ready, :class:`ClosedError` if the queue
        is shut down and nothing is left to hand out.
        """
        if not self._queue:
            if self._shutting_down and not self._dirty:
                raise ClosedError(f"work queue {self.name!r} is shut down")
            raise WouldBlock(f"work queue {self.name!r} is empty")
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        now = self._clock()
        self._started_at[key] = now
        queued_for = now - self._added_at.pop(key, now)
        if self._metrics is not None:
            self._metrics.get(len(self._dirty), queued_for)
            if self._ticker is None:
                self._start_ticker()
        return key

    async def get(self) -> K:
        """Wait for a key, then hand it out (see :meth:`get_nowait`).

        Raises :class:`ClosedError` once the queue is shut down and nothing is left.
        Cancelling a waiting ``get`` loses no key.
        """
        while True:
            try:
                return self.get_nowait()
            except WouldBlock:
                pass
            fut = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except BaseException:
                # Woken and cancelled in the same step: pass the wake-up on.
                if fut.done() and not fut.cancelled() and self._queue:
                    self._wake_one()
                raise
            finally:
                try:
                    self._getters.remove(fut)
                except ValueError:
                    pass

    def done(self, key: K) -> None:
        """Mark ``key`` as processed. If it was added meanwhile, it is queued again.
        Does nothing for a key that is not processing (so it is safe in a ``finally``)."""
        if key not in self._processing:
            return
        self._processing.remove(key)
        now = self._clock()
        worked_for = now - self._started_at.pop(key, now)
        if key in self._dirty:
            self._queue.append(key)
            self._wake_one()
        if self._metrics is not None:
            self._metrics.done(worked_for)
            self._report_unfinished()
            if not self._processing and self._ticker is not None:
                self._ticker.cancel()
                self._ticker = None
        if self._shutting_down:
            self._check_drained()

    # -- shutting down ----------------------------------------------------------------------

    async def shutdown(self, drain: bool = True) -> None:
        """Stop accepting keys and wait for the workers (see the module docstring).

        ``drain=True``: hand out every key accepted so far, return when all are done.
        ``drain=False``: drop the queued keys, return when the handed-out keys are done.
        Idempotent; a later ``drain=False`` drops whatever is still queued.
        """
        self._shut(drain)
        await self._idle.wait()

    def shutdown_nowait(self) -> None:
        """Stop accepting keys and drop the queued ones (``shutdown(drain=False)``)
        without waiting for the handed-out keys to be done."""
        self._shut(drain=False)

    def _shut(self, drain: bool) -> None:
        if not self._shutting_down:
            self._shutting_down = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._timer_at = math.inf
            self._heap.clear()
            self._waiting.clear()
        if not drain:
            self._queue.clear()
            self._dirty.clear()
            self._added_at.clear()
        self._check_drained()

    def statistics(self) -> WorkQueueStatistics:
        """Depth, delayed and processing keys, totals and running times, as of now."""
        longest, unfinished = self._running_times()
        return WorkQueueStatistics(
            name=self.name,
            depth=len(self._dirty),
            waiting=len(self._waiting),
            processing=len(self._processing),
            adds_total=self._adds,
            retries_total=self._retries,
            longest_running=longest,
            unfinished_work=unfinished,
            getters=sum(1 for fut in self._getters if not fut.done()),
            shutting_down=self._shutting_down,
        )

    def __repr__(self) -> str:
        state = "shutting down" if self._shutting_down else "open"
        return (
            f"<WorkQueue {self.name!r} {state} depth={len(self._dirty)}"
            f" waiting={len(self._waiting)} processing={len(self._processing)}>"
        )

    # -- internals --------------------------------------------------------------------------

    def _wake_one(self) -> None:
        for fut in self._getters:
            if not fut.done():
                fut.set_result(None)
                return

    def _check_drained(self) -> None:
        """After shutdown: wake every getter once nothing is left to hand out, and set
        ``_idle`` once nothing is processing either."""
        if not self._dirty:
            for fut in self._getters:
                if not fut.done():
                    fut.set_result(None)
            if not self._processing:
                self._idle.set()

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        """(Re)arm the timer for the earliest live deadline, dropping stale entries."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        heap, waiting = self._heap, self._waiting
        while heap and waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        if heap:
            self._timer_at = heap[0][0]
            self._timer = loop.call_at(self._timer_at, self._fire, loop)
        else:
            self._timer_at = math.inf

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        """Add every key whose deadline has come, then re-arm for the next one."""
        self._timer = None
        # asyncio may run a timer up to one clock resolution early: what it ran is due.
        due = max(loop.time(), self._timer_at)
        heap, waiting = self._heap, self._waiting
        while heap and heap[0][0] <= due:
            ready_at, _, key = heapq.heappop(heap)
            if waiting.get(key) == ready_at:
                del waiting[key]
                self.add(key)
        self._schedule(loop)

    def _running_times(self) -> tuple[float, float]:
        """(longest, summed) seconds the processing keys have been processing."""
        if not self._started_at:
            return 0.0, 0.0
        now = self._clock()
        ages = [max(0.0, now - started) for started in self._started_at.values()]
        return max(ages), sum(ages)

    def _report_unfinished(self) -> None:
        if self._metrics is not None:
            longest, unfinished = self._running_times()
            self._metrics.longest_running(longest)
            self._metrics.unfinished_work(unfinished)

    def _start_ticker(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # get_nowait outside a loop: no periodic refresh
            return
        self._ticker = loop.call_later(self._metrics_interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ticker = None
        self._report_unfinished()
        if self._processing:
            self._ticker = loop.call_later(self._metrics_interval, self._tick, loop)
