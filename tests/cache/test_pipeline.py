"""The pipeline thread: a coroutine on a thread and loop of its own, its outcome, calls into
it, cancellation, the switch interval while it runs, and the selector that skips
zero-timeout polls."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading

import pytest

from aioinformer._cache.pipeline import (
    MAX_SKIPPED_POLLS,
    SWITCH_INTERVAL,
    THREAD_PREFIX,
    PipelineThread,
    _BurstSelector,
)
from aioinformer._core.errors import ClosedError


def gone(pipe: PipelineThread) -> bool:
    return pipe.thread is not None and not pipe.thread.is_alive()


async def test_main_runs_on_its_own_thread_and_loop_and_its_result_comes_back() -> None:
    caller = asyncio.get_running_loop()
    seen: dict[str, object] = {}

    async def main() -> str:
        seen["thread"] = threading.current_thread().name
        seen["loop"] = asyncio.get_running_loop()
        return "done"

    pipe = PipelineThread("one")
    pipe.start(main)
    assert await pipe.wait() == "done"
    assert seen["thread"] == THREAD_PREFIX + "one" and seen["loop"] is not caller
    assert pipe.loop.is_closed() and gone(pipe)


async def test_an_exception_of_main_is_raised_by_wait() -> None:
    async def main() -> None:
        raise ValueError("pipeline bug")

    pipe = PipelineThread("failing")
    pipe.start(main)
    with pytest.raises(ValueError, match="pipeline bug"):
        await pipe.wait()
    assert gone(pipe)


async def test_call_run_and_notify_cross_between_the_loops() -> None:
    stop: list[asyncio.Event] = []
    started = asyncio.Event()
    caller = asyncio.get_running_loop()

    async def main() -> int:
        stop.append(asyncio.Event())  # (an event of the thread's loop)
        pipe.notify(started.set)  # from the thread, onto the caller's loop
        await stop[0].wait()
        return 7

    async def where() -> str:
        assert asyncio.get_running_loop() is pipe.loop
        return threading.current_thread().name

    pipe = PipelineThread("calls")
    pipe.start(main)
    await asyncio.wait_for(started.wait(), 10)
    assert await pipe.run(where()) == THREAD_PREFIX + "calls"
    pipe.call(stop[0].set)
    assert await pipe.wait() == 7
    assert asyncio.get_running_loop() is caller
    with pytest.raises(ClosedError):
        await pipe.run(where())
    pipe.call(stop[0].set)  # harmless once ended
    pipe.cancel()


async def test_cancelling_the_waiter_cancels_main_and_waits_for_the_thread() -> None:
    cleaned = threading.Event()
    running = asyncio.Event()

    async def main() -> None:
        pipe.notify(running.set)
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.05)  # a cleanup that takes a moment
            cleaned.set()

    pipe = PipelineThread("cancelled")
    pipe.start(main)
    waiter = asyncio.create_task(pipe.wait())
    await asyncio.wait_for(running.wait(), 10)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert cleaned.is_set() and gone(pipe)  # cleaned up before wait() ended


async def test_the_switch_interval_is_lowered_while_pipelines_run() -> None:
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL

    async def main() -> None:
        await asyncio.Event().wait()  # until cancelled

    first, second = PipelineThread("a"), PipelineThread("b")
    first.start(main)
    second.start(main)
    # (the interpreter keeps whole microseconds: 0.0002 reads back as 0.000199999...)
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first.wait()
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)  # the other still runs
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second.wait()
    assert sys.getswitchinterval() == before


def test_a_pipeline_whose_caller_loop_closes_ends_by_itself() -> None:
    """An informer never stopped: once its caller's loop is closed nobody can stop it,
    so the thread cancels its coroutine itself and ends."""
    cancelled = threading.Event()
    holder: list[PipelineThread] = []

    async def main() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def start() -> None:
        pipe = PipelineThread("orphan")
        pipe.start(main)
        holder.append(pipe)

    asyncio.run(start())  # (closes the loop without waiting for the pipeline)
    thread = holder[0].thread
    assert thread is not None
    thread.join(timeout=30)
    assert cancelled.is_set() and not thread.is_alive()


def test_the_selector_skips_zero_timeout_polls_but_not_waiting_ones() -> None:
    a, b = socket.socketpair()
    selector = _BurstSelector()
    try:
        selector.register(b, 1)  # EVENT_READ
        a.send(b"x")
        assert len(selector.select(1.0)) == 1  # a poll that may wait sees the data
        skipped = [selector.select(0) for _ in range(MAX_SKIPPED_POLLS)]
        assert skipped == [[]] * MAX_SKIPPED_POLLS  # callbacks ready: no system call
        assert len(selector.select(0)) == 1  # then one poll, whatever
        assert selector.select(0) == []
    finally:
        selector.close()
        a.close()
        b.close()
