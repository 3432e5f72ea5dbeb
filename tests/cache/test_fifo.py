"""RealFIFO: order, batching, closing, statistics, and a property over interleavings."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._cache.deltas import Bookmark, ChangeType, Delta
from aioinformer._cache.fifo import FifoStatistics, RealFIFO
from aioinformer._core.errors import ClosedError, ConfigError, WouldBlock
from tests.support import FakeClock


def bm(rv: int, received: float = 0.0) -> Bookmark:
    """Items carry no object here: a Bookmark is the cheapest Delta."""
    return Bookmark(rv, received)


def rvs(items: list[Delta]) -> list[int]:
    return [item.resource_version for item in items if isinstance(item, Bookmark)]


async def settle(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_delta_type_values() -> None:
    assert [t.value for t in ChangeType] == ["Added", "Updated", "Deleted"]
    assert all(isinstance(t, str) and t == t.value for t in ChangeType)  # StrEnum


async def test_in_order() -> None:
    fifo = RealFIFO()
    for i in range(10):
        await fifo.put(bm(i))
    assert len(fifo) == 10
    out = [await fifo.pop() for _ in range(5)] + [fifo.pop_nowait() for _ in range(5)]
    assert rvs(out) == list(range(10))
    assert len(fifo) == 0


async def test_pop_nowait_empty_would_block() -> None:
    with pytest.raises(WouldBlock):
        RealFIFO().pop_nowait()


async def test_pop_batch_waits_for_first_item() -> None:
    fifo = RealFIFO()
    task = asyncio.create_task(fifo.pop_batch())
    await settle()
    assert not task.done()
    assert fifo.statistics().waiters == 1
    fifo.put_nowait(bm(1))
    assert rvs(await task) == [1]
    assert fifo.statistics().waiters == 0


async def test_pop_batch_takes_what_is_queued_up_to_max() -> None:
    fifo = RealFIFO()
    for i in range(5):
        fifo.put_nowait(bm(i))
    assert rvs(await fifo.pop_batch(2)) == [0, 1]
    assert rvs(await fifo.pop_batch(10)) == [2, 3, 4]
    fifo.put_nowait(bm(5))
    assert rvs(await fifo.pop_batch(1000)) == [5]  # does not wait for the batch to fill


async def test_pop_batch_rejects_nonpositive_max() -> None:
    fifo = RealFIFO()
    fifo.put_nowait(bm(1))
    with pytest.raises(ConfigError):
        await fifo.pop_batch(0)
    assert len(fifo) == 1


async def test_woken_and_cancelled_pops_leave_no_waiter_behind() -> None:
    """Every waiting pop removes its future on the way out: woken by a put, cancelled
    while waiting, or woken by close (no waiter list grows with the number of pops)."""
    fifo = RealFIFO()
    for rv in range(3):
        task = asyncio.create_task(fifo.pop_batch())
        await settle()
        fifo.put_nowait(bm(rv))
        assert rvs(await task) == [rv]
    cancelled = asyncio.create_task(fifo.pop())
    await settle()
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    closing = asyncio.create_task(fifo.pop())
    await settle()
    fifo.close()
    assert isinstance((await asyncio.gather(closing, return_exceptions=True))[0], ClosedError)
    assert not fifo._waiters


async def test_close_wakes_every_waiter_with_closed_error() -> None:
    fifo = RealFIFO()
    waiters = [
        asyncio.create_task(fifo.pop()),
        asyncio.create_task(fifo.pop_batch()),
        asyncio.create_task(fifo.pop_batch(3)),
    ]
    await settle()
    assert fifo.statistics().waiters == 3
    fifo.close()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, ClosedError) for r in results), results
    assert fifo.closed


async def test_close_drains_then_fails_and_refuses_puts() -> None:
    fifo = RealFIFO()
    fifo.put_nowait(bm(1))
    fifo.put_nowait(bm(2))
    fifo.close()
    fifo.close()  # idempotent
    with pytest.raises(ClosedError):
        fifo.put_nowait(bm(3))
    with pytest.raises(ClosedError):
        await fifo.put(bm(3))
    assert rvs(await fifo.pop_batch()) == [1, 2]
    with pytest.raises(ClosedError):
        fifo.pop_nowait()
    with pytest.raises(ClosedError):
        await fifo.pop()
    with pytest.raises(ClosedError):
        await fifo.pop_batch()


async def test_put_many_is_that_many_puts_at_once() -> None:
    fifo = RealFIFO()
    pops = [asyncio.create_task(fifo.pop()) for _ in range(2)]
    batch = asyncio.create_task(fifo.pop_batch())
    await settle()
    fifo.put_many([bm(1), bm(2), bm(3)])
    fifo.put_many([])
    await settle()
    assert all(task.done() for task in [*pops, batch])  # a waiter woken per item
    assert rvs([pops[0].result(), pops[1].result(), *batch.result()]) == [1, 2, 3]
    stats = fifo.statistics()
    assert (stats.puts_total, stats.pops_total, stats.peak_depth) == (3, 3, 3)
    fifo.close()
    with pytest.raises(ClosedError):
        fifo.put_many([bm(4)])
    assert len(fifo) == 0


async def test_wakeup_is_not_lost_when_the_woken_waiter_is_cancelled() -> None:
    fifo = RealFIFO()
    first = asyncio.create_task(fifo.pop())
    second = asyncio.create_task(fifo.pop())
    await settle()
    fifo.put_nowait(bm(7))  # wakes `first`...
    first.cancel()  # ...which is cancelled before it runs
    await settle()
    assert first.cancelled()
    assert second.done()
    assert rvs([second.result()]) == [7]


async def test_statistics() -> None:
    """Depth, peak, totals, and the oldest item's age by the FIFO's clock (the one the
    watcher stamps ``received`` with), from its receive time, not from its put."""
    clock = FakeClock(100.0)
    fifo = RealFIFO(clock=clock)
    empty = fifo.statistics()
    assert isinstance(empty, FifoStatistics)
    assert (empty.depth, empty.peak_depth, empty.oldest_received, empty.oldest_age) == (
        0,
        0,
        None,
        0.0,
    )
    fifo.put_nowait(bm(1, received=95.0))  # the watcher read it 5 s ago
    fifo.put_nowait(bm(2, received=99.0))
    fifo.put_nowait(bm(3, received=100.0))
    assert fifo.statistics().oldest_age == 5.0
    fifo.pop_nowait()
    fifo.put_nowait(bm(4, received=100.0))
    clock.advance(2.0)
    stats = fifo.statistics()
    assert (stats.depth, stats.peak_depth, stats.puts_total, stats.pops_total) == (3, 3, 4, 1)
    assert stats.waiters == 0
    assert (stats.oldest_received, stats.oldest_age) == (99.0, 3.0)
    await fifo.pop_batch()
    stats = fifo.statistics()
    assert (stats.depth, stats.peak_depth, stats.pops_total, stats.oldest_age) == (0, 3, 4, 0.0)
    assert stats.oldest_received is None


def test_reset_peak_returns_the_peak_and_starts_over_from_the_depth() -> None:
    fifo = RealFIFO()
    fifo.put_many([bm(1), bm(2), bm(3), bm(4)])
    fifo.pop_nowait()
    fifo.pop_nowait()
    assert fifo.reset_peak() == 4
    assert fifo.statistics().peak_depth == 2  # what is still queued
    fifo.pop_nowait()
    fifo.put_nowait(bm(5))
    assert fifo.statistics().peak_depth == 2
    fifo.put_nowait(bm(6))
    assert fifo.reset_peak() == 3
    assert fifo.statistics().peak_depth == 3


# An interleaving: the producer's steps (put k items at once, or yield to the loop) and the
# max_items the consumer cycles through.
_steps = st.lists(
    st.one_of(st.integers(1, 5).map(lambda k: ("put", k)), st.just(("yield", 0))),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=_steps, maxes=st.lists(st.integers(1, 7), min_size=1, max_size=5))
def test_any_interleaving_pops_every_item_exactly_once_in_order(
    steps: list[tuple[str, int]], maxes: list[int]
) -> None:
    async def scenario() -> tuple[int, list[list[Delta]]]:
        fifo = RealFIFO()
        batches: list[list[Delta]] = []

        async def consume() -> None:
            i = 0
            while True:
                max_items = maxes[i % len(maxes)]
                i += 1
                try:
                    batch = await fifo.pop_batch(max_items)
                except ClosedError:
                    return
                assert 1 <= len(batch) <= max_items
                if len(batch) < max_items:
                    assert len(fifo) == 0  # took everything that was queued
                batches.append(batch)
                if i % 2:
                    await asyncio.sleep(0)

        consumer = asyncio.create_task(consume())
        n = 0
        for op, k in steps:
            if op == "put":
                for _ in range(k - 1):
                    fifo.put_nowait(bm(n))
                    n += 1
                await fifo.put(bm(n))
                n += 1
            else:
                await asyncio.sleep(0)
        fifo.close()
        await consumer
        return n, batches

    n, batches = asyncio.run(scenario())
    assert rvs([item for batch in batches for item in batch]) == list(range(n))
