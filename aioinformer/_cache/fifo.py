"""The DeltaFIFO: an async, in-order, unbounded queue from the watcher to the store writer.

Items are :class:`Delta` (one watch event), :class:`Replace` (a relist: the full new state,
applied by the store as one atomic swap) and :class:`Bookmark` (a resourceVersion with no
object change). Contract:

* **In order, nothing dropped, nothing merged.** Items come out exactly in the order they
  went in. Unlike client-go's DeltaFIFO there is no per-key compression: the store applies
  every delta, which is cheap with a persistent map, and handlers see every transition.
* **Unbounded puts.** :meth:`DeltaFIFO.put_nowait` never blocks (back-pressure is the
  watcher's business: it stops reading the stream), nor does :meth:`DeltaFIFO.put_many`,
  the same for several items; :meth:`DeltaFIFO.put` is built on ``put_nowait`` and only
  adds a scheduling point, as trio's ``send`` is built on ``send_nowait``.
* **Batched pops.** :meth:`DeltaFIFO.pop_batch` waits for at least one item, then returns
  every item already queued, up to ``max_items``, without waiting for more (client-go's
  RealFIFO ``PopBatch``). The store writer publishes one snapshot per batch.
* **Closing is the stop signal.** After :meth:`DeltaFIFO.close`, puts raise
  :class:`ClosedError`; pops drain what is left, then raise :class:`ClosedError`. Closing
  wakes every waiting pop. ``close()`` is idempotent.
* :meth:`DeltaFIFO.statistics` reports depth, peak depth and the age of the oldest item
  (how far the store lags what the watcher has received).
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import msgspec

from aioinformer._core.errors import ClosedError, ConfigError, WouldBlock
from aioinformer._core.objects import KubeObject

__all__ = [
    "Bookmark",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "FifoStatistics",
    "Item",
    "Replace",
]


class DeltaType(enum.StrEnum):
    """What happened to one object, as the watch reported it."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"


class Delta(msgspec.Struct, frozen=True, gc=False):
    """One watch event: ``type`` happened to ``obj``.

    ``received`` is ``time.monotonic()`` when the watcher read the event. For DELETED,
    ``obj`` is the object's final state as the server sent it. Immutable (a frozen
    struct built in C: one per watch event, so it is kept cheap, and it is never tracked
    by the cyclic GC since it only refers to an untracked object, a str and a float).
    """

    type: DeltaType
    obj: KubeObject
    received: float


@dataclass(frozen=True, slots=True)
class Replace:
    """An atomic relist: ``objects`` is the complete new state at ``resource_version``.

    The store swaps it in as one snapshot and reports objects that vanished as deletions
    (tombstones).
    """

    objects: Sequence[KubeObject]
    resource_version: int
    received: float


@dataclass(frozen=True, slots=True)
class Bookmark:
    """The store is current up to ``resource_version``; no object changed."""

    resource_version: int
    received: float


Item: TypeAlias = Delta | Replace | Bookmark
"""One entry of the FIFO."""


@dataclass(frozen=True, slots=True)
class FifoStatistics:
    """A point-in-time view of a :class:`DeltaFIFO`."""

    depth: int
    """Items queued now."""
    peak_depth: int
    """The largest ``depth`` ever reached."""
    oldest_received: float | None
    """``received`` of the oldest queued item (``time.monotonic()`` clock); None if empty."""
    oldest_age: float
    """Seconds the oldest queued item has waited since it was received; 0.0 if empty."""
    puts_total: int
    """Items ever put."""
    pops_total: int
    """Items ever popped (a batch counts each of its items)."""
    waiters: int
    """Tasks blocked in ``pop``/``pop_batch`` right now."""


class DeltaFIFO:
    """An unbounded, in-order async queue of :data:`Item` with a closed state.

    Intended for one producer (the watcher) and one consumer (the store writer), but safe
    for any number of either within one event loop.

    Example::

        fifo = DeltaFIFO()
        fifo.put_nowait(Delta(DeltaType.ADDED, obj, time.monotonic()))
        batch = await fifo.pop_batch(1000)   # [Delta(...)]
        fifo.close()
        await fifo.pop()                     # raises ClosedError
    """

    __slots__ = ("_closed", "_items", "_peak", "_pops", "_puts", "_waiters")

    def __init__(self) -> None:
        self._items: deque[Item] = deque()
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

    def put_nowait(self, item: Item) -> None:
        """Append ``item``. Never blocks; raises :class:`ClosedError` once closed."""
        if self._closed:
            raise ClosedError("put on a closed DeltaFIFO")
        items = self._items
        items.append(item)
        self._puts += 1
        if len(items) > self._peak:
            self._peak = len(items)
        if self._waiters:
            self._wake_one()

    def put_many(self, items: Sequence[Item]) -> None:
        """Append ``items`` in order, as that many :meth:`put_nowait` calls would (one call
        for the events of one read of a watch). Raises :class:`ClosedError` once closed,
        with nothing appended."""
        if self._closed:
            raise ClosedError("put on a closed DeltaFIFO")
        queued = self._items
        queued.extend(items)
        self._puts += len(items)
        if len(queued) > self._peak:
            self._peak = len(queued)
        for _ in range(min(len(items), len(self._waiters))):
            self._wake_one()

    async def put(self, item: Item) -> None:
        """Append ``item`` (see :meth:`put_nowait`), then let other tasks run once."""
        self.put_nowait(item)
        await asyncio.sleep(0)

    def pop_nowait(self) -> Item:
        """Remove and return the oldest item.

        Raises :class:`WouldBlock` when empty, :class:`ClosedError` when closed and empty.
        """
        if not self._items:
            if self._closed:
                raise ClosedError("DeltaFIFO is closed and drained")
            raise WouldBlock("DeltaFIFO is empty")
        self._pops += 1
        return self._items.popleft()

    async def pop(self) -> Item:
        """Wait for an item, then remove and return the oldest one.

        Raises :class:`ClosedError` when the FIFO is closed and drained.
        """
        await self._wait_nonempty()
        return self.pop_nowait()

    async def pop_batch(self, max_items: int = 1000) -> list[Item]:
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

    def statistics(self) -> FifoStatistics:
        """Depth, peak depth, age of the oldest item, totals and waiters, as of now."""
        oldest = self._items[0].received if self._items else None
        return FifoStatistics(
            depth=len(self._items),
            peak_depth=self._peak,
            oldest_received=oldest,
            oldest_age=0.0 if oldest is None else max(0.0, time.monotonic() - oldest),
            puts_total=self._puts,
            pops_total=self._pops,
            waiters=sum(1 for fut in self._waiters if not fut.done()),
        )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<DeltaFIFO {state} depth={len(self._items)} peak={self._peak}>"

    async def _wait_nonempty(self) -> None:
        """Return once an item is queued; raise ClosedError if closed and drained."""
        while not self._items:
            if self._closed:
                raise ClosedError("DeltaFIFO is closed and drained")
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
