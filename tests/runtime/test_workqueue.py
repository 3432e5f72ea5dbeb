"""WorkQueue: dedup, the processing/dirty rule, order, delays, rate limiting, shutdown,
statistics and metrics, and properties over concurrent workers.

Delays are measured on the event loop's clock, so the tests about them run on looptime's
virtual clock (``@pytest.mark.looptime``): a key added after 0.01 s comes out at exactly
loop time +0.01, whatever the machine's load, and a test waits no real time for it."""

from __future__ import annotations

import asyncio
import itertools
import random

import looptime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._core.errors import ClosedError, ConfigError, WouldBlock
from aioinformer._runtime.ratelimit import ItemExponentialFailureRateLimiter
from aioinformer._runtime.workqueue import WorkQueue, WorkQueueMetrics, WorkQueueStatistics
from tests.support import FakeClock, FixedLimiter

FAR = 3600.0  # a delay no test waits for


async def settle(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


class Recorder:
    """A WorkQueueMetrics that records every call."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []
        self.ticked = asyncio.Event()

    def add(self, depth: int) -> None:
        self.events.append(("add", depth))

    def get(self, depth: int, queued_for: float) -> None:
        self.events.append(("get", depth))
        self.events.append(("queued_for", queued_for))

    def done(self, worked_for: float) -> None:
        self.events.append(("worked_for", worked_for))

    def retry(self) -> None:
        self.events.append(("retry", 1))

    def longest_running(self, seconds: float) -> None:
        self.events.append(("longest", seconds))
        if seconds > 0:
            self.ticked.set()

    def unfinished_work(self, seconds: float) -> None:
        self.events.append(("unfinished", seconds))

    def of(self, kind: str) -> list[float]:
        return [value for name, value in self.events if name == kind]


# -- dedup, processing, order -------------------------------------------------------------


async def test_dedup_a_queued_key_is_queued_once() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    for key in ["a", "b", "a", "a", "b"]:
        q.add(key)
    assert len(q) == 2
    assert [q.get_nowait(), q.get_nowait()] == ["a", "b"]
    with pytest.raises(WouldBlock):
        q.get_nowait()
    assert q.statistics().adds_total == 2


async def test_fifo_order_for_distinct_keys() -> None:
    q: WorkQueue[int] = WorkQueue()
    keys = [5, 3, 9, 1, 7, 0]
    for key in keys:
        q.add(key)
    q.add(3)  # a duplicate keeps its first position
    assert [await q.get() for _ in keys] == keys


async def test_key_added_while_processing_comes_back_once_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert await q.get() == "a"
    other = asyncio.create_task(q.get())  # a second worker, waiting
    q.add("a")
    q.add("a")
    await settle()
    assert not other.done(), "a processing key must not go to a second worker"
    assert len(q) == 0
    assert q.statistics().depth == 1  # waiting for done
    q.done("a")
    assert await other == "a"
    q.done("a")
    assert len(q) == 0
    with pytest.raises(WouldBlock):
        q.get_nowait()  # queued once, not twice


async def test_key_added_after_done_is_processed_again() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.done(q.get_nowait())
    q.add("a")
    assert q.get_nowait() == "a"


async def test_done_of_a_key_not_processing_does_nothing() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.done("a")  # queued, not processing: must not queue it a second time
    q.done("zzz")
    assert len(q) == 1
    key = q.get_nowait()
    q.done(key)
    q.done(key)  # twice is harmless
    assert len(q) == 0
    assert q.statistics().processing == 0


async def test_get_waits_and_cancelling_it_loses_no_key() -> None:
    q: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await settle()
    assert q.statistics().getters == 2
    q.add("a")  # wakes `first` ...
    first.cancel()  # ... which is cancelled before it runs: the wake-up moves on
    assert await second == "a"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert q.statistics().getters == 0


async def test_keys_may_be_any_hashable() -> None:
    q: WorkQueue[tuple[str, int]] = WorkQueue()
    q.add(("a", 1))
    q.add(("a", 1))
    q.add(("a", 2))
    assert [q.get_nowait(), q.get_nowait()] == [("a", 1), ("a", 2)]


def test_bad_metrics_interval() -> None:
    with pytest.raises(ConfigError):
        WorkQueue[str](metrics_interval=0)


# -- delays -------------------------------------------------------------------------------


@pytest.mark.looptime
async def test_add_after_releases_keys_at_their_deadlines_in_order() -> None:
    loop = asyncio.get_running_loop()
    q: WorkQueue[str] = WorkQueue()
    t0 = loop.time()
    q.add_after("c", 0.03)
    q.add_after("a", 0.01)
    q.add_after("b", 0.02)
    assert len(q) == 0
    assert q.statistics().waiting == 3
    got = []
    for _ in range(3):
        key = await q.get()
        got.append((key, round(loop.time() - t0, 6)))
    assert got == [("a", 0.01), ("b", 0.02), ("c", 0.03)]
    assert q.statistics().waiting == 0


@pytest.mark.looptime
async def test_add_after_earlier_deadline_wins() -> None:
    loop = asyncio.get_running_loop()
    q: WorkQueue[str] = WorkQueue()
    t0 = loop.time()
    q.add_after("k", FAR)
    q.add_after("k", 0.001)  # earlier: replaces the far one
    assert q.statistics().waiting == 1
    assert await q.get() == "k"
    assert loop.time() - t0 == pytest.approx(0.001)
    assert q.statistics().waiting == 0  # the far deadline is gone, not still pending

    q.done("k")
    t1 = loop.time()
    q.add_after("k", 0.001)
    q.add_after("k", FAR)  # later: ignored, does not postpone
    assert await q.get() == "k"
    assert loop.time() - t1 == pytest.approx(0.001)
    assert q.statistics().waiting == 0


async def test_add_after_nonpositive_delay_adds_now() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("a", 0)
    q.add_after("b", -1.0)
    assert [q.get_nowait(), q.get_nowait()] == ["a", "b"]
    assert q.statistics().waiting == 0


@pytest.mark.looptime
async def test_add_after_a_queued_key_adds_it_again_at_the_deadline() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("k", 0.001)
    q.add("k")  # queued now as well (client-go: the waiting entry stays)
    assert q.get_nowait() == "k"
    q.done("k")
    assert q.statistics().waiting == 1
    assert await q.get() == "k"


@pytest.mark.looptime
async def test_delayed_keys_dedup_with_queued_ones() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("k")
    q.add_after("k", 0.001)
    await asyncio.sleep(0.002)  # (virtual) time past the deadline
    assert q.statistics().waiting == 0
    assert len(q) == 1  # the deadline came while "k" was still queued
    assert q.statistics().adds_total == 1


@pytest.mark.looptime
async def test_add_rate_limited_waits_the_limiters_delay() -> None:
    loop = asyncio.get_running_loop()
    q: WorkQueue[str] = WorkQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.5, 10.0))
    waited = []
    for _ in range(4):
        t0 = loop.time()
        q.add_rate_limited("k")
        q.done(await q.get())
        waited.append(round(loop.time() - t0, 6))
    assert waited == [0.5, 1.0, 2.0, 4.0]
    q.forget("k")
    t0 = loop.time()
    q.add_rate_limited("k")
    assert await q.get() == "k" and loop.time() - t0 == pytest.approx(0.5)


# -- rate limiting ------------------------------------------------------------------------


async def test_add_rate_limited_uses_the_limiter() -> None:
    limiter = FixedLimiter(0.0)
    q: WorkQueue[str] = WorkQueue(rate_limiter=limiter)
    q.add_rate_limited("a")
    assert limiter.asked == ["a"]
    assert q.get_nowait() == "a"  # a 0 s delay queues at once
    q.done("a")
    limiter.delay = FAR
    q.add_rate_limited("a")
    assert len(q) == 0
    assert q.statistics().waiting == 1  # the limiter's delay was applied
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert limiter.forgotten == ["a"]
    assert q.statistics().retries_total == 2
    await q.shutdown()


async def test_forget_resets_the_backoff() -> None:
    q: WorkQueue[str] = WorkQueue(rate_limiter=ItemExponentialFailureRateLimiter(FAR, FAR * 8))
    for _ in range(3):
        q.add_rate_limited("a")
    q.add_rate_limited("b")
    assert (q.num_requeues("a"), q.num_requeues("b")) == (3, 1)
    q.forget("a")
    assert (q.num_requeues("a"), q.num_requeues("b")) == (0, 1)
    await q.shutdown()


# -- shutdown -----------------------------------------------------------------------------


async def test_shutdown_drain_lets_work_finish_and_ignores_adds() -> None:
    q: WorkQueue[str] = WorkQueue(rate_limiter=FixedLimiter(0.0))
    q.add("a")
    q.add("b")
    assert q.get_nowait() == "a"
    stopping = asyncio.create_task(q.shutdown())
    await settle()
    assert q.shutting_down
    assert not stopping.done()
    q.add("c")
    q.add_after("d", 0.001)
    q.add_rate_limited("e")
    stats = q.statistics()
    assert (stats.adds_total, stats.retries_total, stats.waiting) == (2, 0, 0)
    assert q.get_nowait() == "b"  # what was queued is still handed out
    q.done("a")
    await settle()
    assert not stopping.done()  # "b" is in flight
    q.done("b")
    async with asyncio.timeout(5):
        await stopping
    with pytest.raises(ClosedError):
        q.get_nowait()
    with pytest.raises(ClosedError):
        await q.get()


async def test_shutdown_drain_hands_out_keys_readded_while_processing() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get_nowait() == "a"
    q.add("a")  # dirty: due again after done
    stopping = asyncio.create_task(q.shutdown())
    worker = asyncio.create_task(q.get())
    await settle()
    assert not worker.done(), "a pending re-queue is not 'drained'"
    q.done("a")
    assert await worker == "a"
    assert not stopping.done()
    q.done("a")
    async with asyncio.timeout(5):
        await stopping
    with pytest.raises(ClosedError):
        await q.get()


async def test_shutdown_without_drain_drops_the_backlog_but_waits_for_in_flight() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in "abc":
        q.add(key)
    assert q.get_nowait() == "a"
    q.add("a")  # would come back after done, but is dropped
    stopping = asyncio.create_task(q.shutdown(drain=False))
    await settle()
    with pytest.raises(ClosedError):
        q.get_nowait()
    assert not stopping.done()
    q.done("a")
    async with asyncio.timeout(5):
        await stopping
    assert q.statistics().depth == 0


async def test_shutdown_wakes_waiting_getters_with_closed_error() -> None:
    q: WorkQueue[str] = WorkQueue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    await q.shutdown()
    for task in getters:
        with pytest.raises(ClosedError):
            await task


@pytest.mark.looptime
async def test_shutdown_drops_delayed_keys() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("k", 0.001)
    q.add_after("j", FAR)
    await q.shutdown()
    assert q.statistics().waiting == 0
    await asyncio.sleep(0.002)  # (virtual) time past k's deadline
    assert len(q) == 0
    with pytest.raises(ClosedError):
        q.get_nowait()


async def test_shutdown_is_idempotent_and_drain_false_escalates() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    assert q.get_nowait() == "a"
    first = asyncio.create_task(q.shutdown())  # would wait for "b" to be processed too
    await settle()
    second = asyncio.create_task(q.shutdown(drain=False))  # abandons "b"
    await settle()
    assert not first.done() and not second.done()
    assert len(q) == 0
    q.done("a")
    async with asyncio.timeout(5):
        await asyncio.gather(first, second)
    await q.shutdown()  # again: returns at once
    assert q.shutting_down


# -- statistics and metrics ---------------------------------------------------------------


async def test_statistics_with_an_injected_clock() -> None:
    clock = FakeClock(100.0)
    q: WorkQueue[str] = WorkQueue("pods", rate_limiter=FixedLimiter(FAR), clock=clock)
    empty = q.statistics()
    assert empty == WorkQueueStatistics("pods", 0, 0, 0, 0, 0, 0.0, 0.0, 0, False)
    q.add("a")
    q.add("b")
    q.add_rate_limited("c")
    clock.now = 102.0
    q.get_nowait()  # a, started at 102
    clock.now = 105.0
    q.get_nowait()  # b, started at 105
    clock.now = 106.0
    s = q.statistics()
    assert (s.depth, s.waiting, s.processing) == (0, 1, 2)
    assert (s.adds_total, s.retries_total) == (2, 1)
    assert s.longest_running == 4.0
    assert s.unfinished_work == 4.0 + 1.0
    q.done("a")
    s = q.statistics()
    assert (s.processing, s.longest_running) == (1, 1.0)
    q.done("b")
    await q.shutdown(drain=False)  # drops the waiting "c"
    s = q.statistics()
    assert (s.waiting, s.processing, s.longest_running, s.shutting_down) == (0, 0, 0.0, True)


async def test_metrics_hooks_report_depth_latency_work_and_retries() -> None:
    clock = FakeClock(0.0)
    rec = Recorder()
    hook: WorkQueueMetrics = rec  # conforms to the protocol
    q: WorkQueue[str] = WorkQueue("t", metrics=hook, clock=clock, rate_limiter=FixedLimiter(0.0))
    q.add("a")
    q.add("b")
    q.add("a")  # duplicate: not reported
    assert rec.of("add") == [1, 2]
    clock.now = 3.0
    assert q.get_nowait() == "a"
    assert rec.of("get") == [1]
    assert rec.of("queued_for") == [3.0]
    q.add("a")  # while processing: accepted, depth counts it
    assert rec.of("add") == [1, 2, 2]
    clock.now = 10.0
    q.done("a")
    assert rec.of("worked_for") == [7.0]
    assert rec.of("longest")[-1] == 0.0 and rec.of("unfinished")[-1] == 0.0
    q.add_rate_limited("c")
    assert rec.of("retry") == [1]
    clock.now = 11.0
    assert [q.get_nowait() for _ in range(3)] == ["b", "a", "c"]
    assert rec.of("queued_for")[1:] == [11.0, 8.0, 1.0]  # "a" counts from its re-add at 3


@pytest.mark.looptime
async def test_metrics_gauges_refresh_while_a_key_is_processing() -> None:
    clock = FakeClock(0.0)
    rec = Recorder()
    q: WorkQueue[str] = WorkQueue(metrics=rec, clock=clock, metrics_interval=0.5)
    q.add("slow")
    assert q.get_nowait() == "slow"
    clock.now = 42.0  # no queue event happens; only the periodic refresh can see this
    await asyncio.sleep(0.4)  # (virtual) time before the first refresh
    assert 42.0 not in rec.of("longest")
    await asyncio.sleep(0.2)  # and past it
    assert rec.ticked.is_set()
    assert 42.0 in rec.of("longest")
    assert 42.0 in rec.of("unfinished")
    q.done("slow")
    assert rec.of("longest")[-1] == 0.0
    await q.shutdown()


# -- properties ---------------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    workers=st.integers(1, 6),
    keys=st.integers(1, 8),
    initial=st.lists(st.integers(0, 7), max_size=30),
    budget=st.integers(0, 60),
    seed=st.integers(0, 2**32 - 1),
)
def test_concurrent_workers_never_share_a_key_and_never_lose_one(
    workers: int, keys: int, initial: list[int], budget: int, seed: int
) -> None:
    """N workers re-add random keys (now, or after a tiny delay) while processing:
    (1) no key is ever processed by two workers at once;
    (2) every key is processed at least once after its last accepted add."""
    rng = random.Random(seed)  # not st.randoms(): the delayed adds make draws timing-dependent
    stamp = itertools.count()
    last_add: dict[int, int] = {}
    starts: dict[int, list[int]] = {}
    active: set[int] = set()
    overlaps: list[int] = []
    left = [budget]

    async def scenario() -> WorkQueueStatistics:
        q: WorkQueue[int] = WorkQueue("prop", rate_limiter=FixedLimiter(0.0))

        def add(key: int) -> None:
            if q.shutting_down:
                return  # ignored by contract; not an add to account for
            kind = rng.random()
            last_add[key] = next(stamp)
            if kind < 0.7:
                q.add(key)
            elif kind < 0.85:
                q.add_rate_limited(key)
            else:
                q.add_after(key, 0.0005)

        async def worker() -> None:
            while True:
                try:
                    key = await q.get()
                except ClosedError:
                    return
                starts.setdefault(key, []).append(next(stamp))
                if key in active:
                    overlaps.append(key)
                active.add(key)
                try:
                    for _ in range(rng.randrange(4)):
                        await asyncio.sleep(0)
                        if left[0] > 0 and rng.random() < 0.5:
                            left[0] -= 1
                            add(rng.randrange(keys) if rng.random() < 0.6 else key)
                finally:
                    active.discard(key)
                    q.done(key)

        async def producer() -> None:
            for key in initial:
                add(key % keys)
                if rng.random() < 0.3:
                    await asyncio.sleep(0)

        async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
            for _ in range(workers):
                tg.create_task(worker())
            await producer()
            # Polling is the point here: let the workers spend their re-add budget, then
            # let every delayed add land (shutdown drops waiting keys by contract).
            while left[0] > 0 and q.statistics().processing:  # noqa: ASYNC110
                await asyncio.sleep(0)
            while q.statistics().waiting:  # noqa: ASYNC110
                await asyncio.sleep(0.0005)  # (virtual time)
            await q.shutdown(drain=True)
        return q.statistics()

    with asyncio.Runner(loop_factory=looptime.new_event_loop) as runner:  # virtual time
        stats = runner.run(scenario())
    assert overlaps == []
    for key, added in last_add.items():
        assert any(start > added for start in starts.get(key, [])), f"key {key} was lost"
    assert (stats.depth, stats.processing, stats.waiting) == (0, 0, 0)


@settings(max_examples=60, deadline=None)
@given(
    base_exp=st.integers(-10, 3),
    cap_doublings=st.integers(0, 12),
    failures=st.lists(st.integers(1, 20), min_size=1, max_size=4),
)
def test_backoff_doubles_to_the_cap_and_forget_resets(
    base_exp: int, cap_doublings: int, failures: list[int]
) -> None:
    """(3) Through the queue, successive rate-limited adds of a key wait base, 2*base,
    4*base, ... up to the cap; forget starts again from base."""
    base = 2.0**base_exp * FAR  # never fires during the test
    cap = base * 2**cap_doublings

    class Spy(ItemExponentialFailureRateLimiter[str]):
        delays: list[float]

        def when(self, item: str) -> float:
            delay = super().when(item)
            self.delays.append(delay)
            return delay

    async def scenario() -> None:
        spy = Spy(base, cap)
        spy.delays = []
        q: WorkQueue[str] = WorkQueue(rate_limiter=spy)
        for n in failures:
            spy.delays.clear()
            for _ in range(n):
                q.add_rate_limited("k")
            assert spy.delays == [min(base * 2**i, cap) for i in range(n)]
            assert q.num_requeues("k") == n
            q.forget("k")
            assert q.num_requeues("k") == 0
        await q.shutdown()

    asyncio.run(scenario())
