"""The informer's FIFO: an async, in-order, unbounded queue from the watcher to the writer.

Items are :mod:`~aioinformer._cache.deltas` items: a ``ObjectDelta`` (one watch event), a
``Replace`` (a relist: the full new state, applied by the store as one atomic swap) and a
``Bookmark`` (a resourceVersion with no object change). :class:`RealFIFO` is client-go's
RealFIFO in asyncio (the FIFO the incident's "RealFIFO backlog" is about, minus the per-key
grouping). Contract:

* **In order, nothing dropped, nothing merged.** Items come out exactly in the order they
  went in. There is no per-key grouping or compression (client-go's RealFIFO has one,
  its RealFIFO has not): the store applies every delta, which is cheap with a persistent
  map, and handlers see every transition.
* **Unbounded puts.** :meth:`RealFIFO.put_nowait` never blocks (back-pressure is the
  watcher's business: it stops reading the stream), nor does :meth:`RealFIFO.put_many`,
  the same for several items; :meth:`RealFIFO.put` is built on ``put_nowait`` and only
  adds a scheduling point, as trio's ``send`` is built on ``send_nowait``.
* **Batched pops.** :meth:`RealFIFO.pop_batch` waits for at least one item, then returns
  every item already queued, up to ``max_items``, without waiting for more (client-go's
  RealFIFO ``PopBatch``). The store writer publishes one snapshot per batch.
* **Closing is the stop signal.** After :meth:`RealFIFO.close`, puts raise
  :class:`ClosedError`; pops drain what is left, then raise :class:`ClosedError`. Closing
  wakes every waiting pop. ``close()`` is idempotent.
* :meth:`RealFIFO.statistics` reports depth, peak depth and the age of the oldest item
  (how far the store lags what the watcher has received), by the FIFO's ``clock`` (the
  clock the watcher stamps ``received`` with). The peak is kept by the puts themselves, so
  it is exact even when the writer drains the FIFO faster than anyone could sample its
  depth; :meth:`RealFIFO.reset_peak` starts it over (the peak of one period).
* **Receipt listeners** (:meth:`RealFIFO.on_put`) see every batch of items as it is put,
  before the writer can take them: for instrumentation (e.g. timing each event from the
  socket to the published state).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aioinformer._cache.deltas import Delta
from aioinformer._core import logs
from aioinformer._core.errors import ClosedError, ConfigError, WouldBlock
from aioinformer._core.failurelog import FailureLog

__all__ = ["FifoStatistics", "RealFIFO"]

log = logs.logger("aioinformer.fifo")


@dataclass(frozen=True, slots=True)
class FifoStatistics:
    """A point-in-time view of a :class:`RealFIFO`."""

    depth: int
    """Items queued now."""
    peak_depth: int
    """The largest ``depth`` reached since the FIFO was made or its peak was last reset."""
    oldest_received: float | None
    """``received`` of the oldest queued item (the FIFO's clock); None if empty."""
    oldest_age: float
    """Seconds the oldest queued item has waited since it was received; 0.0 if empty."""
    puts_total: int
    """Items ever put."""
    pops_total: int
    """Items ever popped (a batch counts each of its items)."""
    waiters: int
    """Tasks blocked in ``pop``/``pop_batch`` right now."""


class RealFIFO:
    """An unbounded, in-order async queue of :data:`Delta` with a closed state.

    Intended for one producer (the watcher) and one consumer (the store writer), but safe
    for any number of either within one event loop.

    Example::

        fifo = RealFIFO()
        fifo.put_nowait(ObjectDelta(ChangeType.ADDED, obj, time.monotonic()))
        batch = await fifo.pop_batch(1000)   # [ObjectDelta(...)]
        fifo.close()
        await fifo.pop()                     # raises ClosedError
    """

    __slots__ = (
        "_clock",
        "_closed",
        "_items",
        "_listener_failures",
        "_listeners",
        "_peak",
        "_pops",
        "_puts",
        "_waiters",
    )

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._listeners: list[Callable[[Sequence[Delta]], None]] = []
        self._listener_failures = FailureLog(log)
        self._items: deque[Delta] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False
        self._peak = 0
        self._puts = 0
        self._pops = 0

    def __len__(self) -> int:
        """The number of items queued."""
        return len(self._items)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called (items may still be left to pop)."""
        return self._closed

    def put_nowait(self, item: Delta) -> None:
        """Append ``item``. Never blocks; raises :class:`ClosedError` once closed."""
        if self._closed:
            raise ClosedError("put on a closed RealFIFO")
        if self._listeners:
            self._notify((item,))
        items = self._items
        items.append(item)
        self._puts += 1
        if len(items) > self._peak:
            self._peak = len(items)
        if self._waiters:
            self._wake_one()

    def put_many(self, items: Sequence[Delta]) -> None:
        """Append ``items`` in order, as that many :meth:`put_nowait` calls would (one call
        for the events of one read of a watch). Raises :class:`ClosedError` once closed,
        with nothing appended."""
        if self._closed:
            raise ClosedError("put on a closed RealFIFO")
        if self._listeners:
            self._notify(items)
        queued = self._items
        queued.extend(items)
        self._puts += len(items)
        if len(queued) > self._peak:
            self._peak = len(queued)
        for _ in range(min(len(items), len(self._waiters))):
            self._wake_one()

    async def put(self, item: Delta) -> None:
        """Append ``item`` (see :meth:`put_nowait`), then let other tasks run once."""
        self.put_nowait(item)
        await asyncio.sleep(0)

    def pop_nowait(self) -> Delta:
        """Remove and return the oldest item.

        Raises :class:`WouldBlock` when empty, :class:`ClosedError` when closed and empty.
        """
        if not self._items:
            if self._closed:
                raise ClosedError("RealFIFO is closed and drained")
            raise WouldBlock("RealFIFO is empty")
        self._pops += 1
        return self._items.popleft()

    async def pop(self) -> Delta:
        """Wait for an item, then remove and return the oldest one.

        Raises :class:`ClosedError` when the FIFO is closed and drained.
        """
        await self._wait_nonempty()
        return self.pop_nowait()

    async def pop_batch(self, max_items: int = 1000) -> list[Delta]:
        """Wait for at least one item, then remove and return up to ``max_items`` of those
        already queued, oldest first. Does not wait for a batch to fill.

        Raises :class:`ClosedError` when the FIFO is closed and drained, and
        :class:`ConfigError` when ``max_items < 1``.
        """
        if max_items < 1:
            raise ConfigError(f"max_items must be at least 1, not {max_items}")
        await self._wait_nonempty()
        items = self._items
        if len(items) <= max_items:
            batch = list(items)
            items.clear()
        else:
            popleft = items.popleft
            batch = [popleft() for _ in range(max_items)]
        self._pops += len(batch)
        return batch

    def close(self) -> None:
        """Stop the FIFO: later puts fail, pops drain then fail. Wakes every waiter."""
        if self._closed:
            return
        self._closed = True
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)

    def on_put(self, listener: Callable[[Sequence[Delta]], None]) -> Callable[[], None]:
        """Call ``listener(items)`` with the items of every put, in order, as they are put
        (before any pop can take them); returns a function that removes it. The listener
        runs on the watcher's path, so it must be quick; what it raises is logged and the
        put goes on."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def reset_peak(self) -> int:
        """Return the peak depth so far and start it over from the current depth. Safe to
        call from another thread than the FIFO's: a put racing with it is counted in the
        new peak or in the returned one."""
        peak = self._peak
        self._peak = len(self._items)
        return peak

    def _notify(self, items: Sequence[Delta]) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(items)
            except Exception as exc:
                self._listener_failures.failed(exc, "FIFO put listener %r raised: %r", listener,
                                               exc)  # fmt: skip

    def statistics(self) -> FifoStatistics:
        """Depth, peak depth, age of the oldest item, totals and waiters, as of now. Safe
        to call from another thread than the FIFO's (an informer's pipeline thread)."""
        items = self._items
        try:
            oldest: float | None = items[0].received
        except IndexError:  # empty (or emptied by the writer's thread since)
            oldest = None
        return FifoStatistics(
            depth=len(items),
            peak_depth=self._peak,
            oldest_received=oldest,
            oldest_age=0.0 if oldest is None else max(0.0, self._clock() - oldest),
            puts_total=self._puts,
            pops_total=self._pops,
            waiters=sum(1 for fut in list(self._waiters) if not fut.done()),
        )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RealFIFO {state} depth={len(self._items)} peak={self._peak}>"

    async def _wait_nonempty(self) -> None:
        """Return once an item is queued; raise ClosedError if closed and drained."""
        while not self._items:
            if self._closed:
                raise ClosedError("RealFIFO is closed and drained")
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                # Woken and cancelled in the same step: pass the wake-up on, so an item
                # is never left queued while another task waits for it.
                if fut.done() and not fut.cancelled() and self._items:
                    self._wake_one()
                raise
            finally:
                # usually already gone (_wake_one pops it); check first, since a failed
                # deque.remove formats the future's repr into its ValueError (~3 us)
                if fut in self._waiters:
                    self._waiters.remove(fut)

    def _wake_one(self) -> None:
        # The woken future leaves the queue at once (its waiter's ``remove`` then finds
        # nothing), so the puts that follow before the waiter runs see no waiter at all.
        waiters = self._waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
