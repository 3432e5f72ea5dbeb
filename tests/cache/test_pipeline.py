"""The pipeline hosts (aioinformer/_cache/pipeline.py). Both keep one contract: ``run``
returns main's result or raises its error, cancelling the caller cancels main and ``run``
returns only once main has ended; ``call``, ``notify`` and ``submit`` cross between the
loops. The ThreadHost besides: one thread and loop of its own, one clone of a RestClient per
source (closed at its end), ``aclose`` ends it (idempotent), it ends by itself once the
caller's loop is closed, its loop is uvloop's when the caller's is (end to end against
KubeSim), the switch interval follows ProcessSettings while it runs, so does its
scheduling policy (and the informers' statistics say which), and its selector skips
zero-timeout polls."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
import uvloop

from aioinformer import ClosedError, ConfigError, InformerFactory, ProcessSettings
from aioinformer._cache.pipeline import (
    MAX_SKIPPED_POLLS,
    THREAD_PREFIX,
    LoopHost,
    PipelineHost,
    ThreadHost,
    _BurstSelector,
)
from aioinformer._cache.process import DEFAULT_SWITCH_INTERVAL
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import RestClient
from aioinformer.testing import KubeSim, eventually
from tests.support import (
    LINUX_SCHEDULING,
    api_client_for,
    kernel_grants_rr,
    pod,
    policy_of,
    watch_options,
)

UNREACHABLE = "http://127.0.0.1:9"  # (no request is sent: the clients are only made)


@pytest.fixture(params=["thread", "loop"])
async def host(request: pytest.FixtureRequest) -> AsyncIterator[PipelineHost]:
    """Either host; closed at the end of the test."""
    made: PipelineHost = ThreadHost("test") if request.param == "thread" else LoopHost()
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture
def switch_interval() -> Iterator[float]:
    """The interpreter's switch interval before the test, put back after it."""
    before = sys.getswitchinterval()
    try:
        yield before
    finally:
        sys.setswitchinterval(before)


def where() -> tuple[str, asyncio.AbstractEventLoop]:
    return threading.current_thread().name, asyncio.get_running_loop()


# -- the contract of every host ----------------------------------------------------------------


async def test_run_returns_the_result_of_main_where_the_host_runs_it(host: PipelineHost) -> None:
    async def main() -> tuple[str, asyncio.AbstractEventLoop]:
        return where()

    thread, loop = await host.run(main, "main")
    if isinstance(host, ThreadHost):
        assert thread == THREAD_PREFIX + "test" and host.thread is not None
        assert host.thread.name == thread and loop is host.loop
        assert loop is not asyncio.get_running_loop() and host.thread.is_alive()
    else:
        assert (thread, loop) == where()
    assert await host.run(main, "again") == (thread, loop)  # one thread for every pipeline


async def test_run_raises_the_error_of_main(host: PipelineHost) -> None:
    async def main() -> None:
        raise ValueError("pipeline bug")

    with pytest.raises(ValueError, match="pipeline bug"):
        await host.run(main, "failing")


async def test_cancelling_the_caller_cancels_main_and_run_returns_once_main_ended(
    host: PipelineHost,
) -> None:
    """main's cleanup waits for the test to let it finish: ``run`` is still running then,
    and raises the cancellation only after the cleanup."""
    running, cleaning = asyncio.Event(), asyncio.Event()
    finish: list[asyncio.Event] = []
    cleaned = threading.Event()

    async def main() -> None:
        finish.append(asyncio.Event())  # (an event of the host's loop)
        host.notify(running.set)
        try:
            await asyncio.Event().wait()
        finally:
            host.notify(cleaning.set)
            await finish[0].wait()
            cleaned.set()

    runner = asyncio.create_task(host.run(main, "cancelled"))
    await running.wait()
    runner.cancel()
    await cleaning.wait()
    assert not runner.done(), "run returned while main was still cleaning up"
    host.call(finish[0].set)
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert cleaned.is_set()


async def test_call_notify_and_submit_cross_between_the_loops(host: PipelineHost) -> None:
    caller = where()
    stop: list[asyncio.Event] = []
    started = asyncio.Event()
    seen: dict[str, tuple[str, asyncio.AbstractEventLoop]] = {}

    async def main() -> str:
        seen["main"] = where()
        stop.append(asyncio.Event())
        host.notify(lambda: seen.setdefault("notify", where()))
        host.notify(started.set)
        await stop[0].wait()
        return "stopped"

    async def submitted() -> int:
        seen["submit"] = where()
        return 7

    def stopping() -> None:
        seen["call"] = where()
        stop[0].set()

    runner = asyncio.create_task(host.run(main, "calls"))
    await started.wait()
    assert await host.submit(submitted()) == 7
    host.call(stopping)
    assert await runner == "stopped"
    assert seen["notify"] == caller  # from the host onto the caller's loop
    assert seen["submit"] == seen["call"] == seen["main"]  # onto the host
    assert (seen["main"] != caller) is host.threaded


# -- ThreadHost: its end ---------------------------------------------------------------------------


async def test_aclose_cancels_what_runs_ends_the_thread_and_is_idempotent() -> None:
    host = ThreadHost("closing")
    await host.aclose()  # harmless before the first pipeline: nothing was started
    assert host.thread is None and not host.ended
    running = asyncio.Event()
    cancelled = threading.Event()

    async def main() -> None:
        host.notify(running.set)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    runner = asyncio.create_task(host.run(main, "still running"))
    await running.wait()
    await host.aclose()
    assert cancelled.is_set() and host.ended
    assert host.thread is not None and not host.thread.is_alive()
    assert host.loop is not None and host.loop.is_closed()
    with pytest.raises(ClosedError, match="still running: its host ended"):
        await runner  # (the caller was not cancelled: no CancelledError out of the blue)
    await host.aclose()  # idempotent
    # once ended: run and submit refuse, call and notify do nothing
    with pytest.raises(ClosedError, match="has ended"):
        await host.run(main, "late")
    coro = asyncio.sleep(0)
    with pytest.raises(ClosedError, match="has ended"):
        await host.submit(coro)
    assert coro.cr_frame is None  # closed, never left "never awaited"
    host.call(lambda: pytest.fail("called after the end"))
    host.notify(lambda: None)


def test_a_thread_whose_caller_loop_closes_ends_by_itself() -> None:
    """A host nobody closed (its factory's task left pending on a loop closed by hand):
    nobody is left to stop it, so the thread sees the closed loop, cancels its pipelines,
    closes its clients and ends. The ``run`` left pending can still be closed."""
    host = ThreadHost("orphan")
    cancelled = threading.Event()
    clones: list[RestClient] = []

    async def main(list_watch: ListWatch) -> None:
        clones.append(host.adopt(list_watch).rest)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def start() -> asyncio.Task[None]:
        async with api_client_for(UNREACHABLE) as api:
            list_watch = ListWatch(api, "v1", "pods")
            task = asyncio.create_task(host.run(lambda: main(list_watch), "orphan"))
            await eventually(lambda: bool(clones), "the pipeline to adopt its client")
        return task

    loop = asyncio.new_event_loop()
    task = loop.run_until_complete(start())
    loop.close()  # without cancelling the task that runs the host
    thread = host.thread
    assert thread is not None
    thread.join(timeout=30)
    assert not thread.is_alive(), "the thread outlived its caller's loop"
    assert cancelled.is_set() and host.ended
    assert clones[0].api_client.rest_client.pool_manager.closed
    task.get_coro().close()  # (a coroutine that ignored GeneratorExit would raise here)
    task._log_destroy_pending = False  # type: ignore[attr-defined]


# -- ThreadHost: one HTTP client per source --------------------------------------------------


async def test_adopt_gives_one_clone_per_source_and_closes_it_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clones: list[RestClient] = []
    clone = RestClient.clone

    def counting_clone(self: RestClient) -> RestClient:
        made = clone(self)
        clones.append(made)
        return made

    monkeypatch.setattr(RestClient, "clone", counting_clone)
    async with api_client_for(UNREACHABLE) as api_a, api_client_for(UNREACHABLE) as api_b:
        rest_a, rest_b = RestClient(api_a), RestClient(api_b)
        host = ThreadHost("adopting")
        lists = [ListWatch(rest_a, "v1", p) for p in ("pods", "configmaps", "secrets")]
        other = ListWatch(rest_b, "v1", "pods")

        async def main(list_watch: ListWatch) -> ListWatch:
            adopted = host.adopt(list_watch)
            assert adopted.rest.api_client.rest_client.pool_manager._loop is host.loop
            return adopted

        adopted = [await host.run(lambda lw=lw: main(lw), lw.path) for lw in lists]  # type: ignore[misc]
        assert [a.path for a in adopted] == [lw.path for lw in lists]  # the same requests
        assert len({id(a.rest) for a in adopted}) == 1 and adopted[0].rest is not rest_a
        moved_other = await host.run(lambda: main(other), "other")
        assert moved_other.rest is not adopted[0].rest
        assert clones == [adopted[0].rest, moved_other.rest]  # one per source
        with pytest.raises(ConfigError, match="adopt"):
            host.adopt(ListWatch(RestClient(api_a), "v1", "pods"))  # not from a pipeline
        await host.aclose()
        assert all(c.api_client.rest_client.pool_manager.closed for c in clones)
        assert not api_a.rest_client.pool_manager.closed  # the caller's stay open
        assert not api_b.rest_client.pool_manager.closed


async def test_a_loop_host_adopts_nothing() -> None:
    async with api_client_for(UNREACHABLE) as api:
        list_watch = ListWatch(api, "v1", "pods")
        assert LoopHost().adopt(list_watch) is list_watch


# -- ThreadHost: the loop it runs ------------------------------------------------------------


def test_on_uvloop_the_pipeline_thread_runs_uvloop_end_to_end() -> None:
    """An application on uvloop: the factory's pipeline thread runs a uvloop loop too, and
    an informer syncs and follows a write through it."""

    async def scenario() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with (
            KubeSim(bookmark_interval=60.0) as sim,
            sim.api_client() as api,
            InformerFactory(api, watch_options=watch_options()) as factory,
        ):
            pods = factory.informer("v1", "pods")
            await factory.wait_for_sync(timeout=30)
            made = sim.create("pods", pod("on-uvloop"), "default")
            snap = await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=30)
            assert "default/on-uvloop" in snap
            host = factory.host
            assert isinstance(host, ThreadHost) and isinstance(host.loop, uvloop.Loop)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())


async def test_on_asyncio_the_pipeline_thread_runs_a_selector_loop_that_skips_polls() -> None:
    host = ThreadHost("selector")

    async def main() -> object:
        loop = asyncio.get_running_loop()
        return loop._selector  # type: ignore[attr-defined]

    try:
        assert isinstance(await host.run(main, "main"), _BurstSelector)
        assert isinstance(host.loop, asyncio.SelectorEventLoop)
    finally:
        await host.aclose()


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


# -- ThreadHost: the switch interval ---------------------------------------------------------


async def started(host: ThreadHost) -> ThreadHost:
    """``host`` with its thread running (a first pipeline started and ended)."""

    async def main() -> None:
        pass

    await host.run(main, "start")
    return host


async def test_the_switch_interval_is_lowered_while_threads_run_then_put_back(
    switch_interval: float,
) -> None:
    assert switch_interval > DEFAULT_SWITCH_INTERVAL
    first, second = await started(ThreadHost("a")), await started(ThreadHost("b"))
    # (the interpreter keeps whole microseconds: 0.0002 reads back as 0.000199999...)
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_SWITCH_INTERVAL)
    await first.aclose()
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_SWITCH_INTERVAL)  # b still runs
    await second.aclose()
    assert sys.getswitchinterval() == switch_interval


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (ProcessSettings(switch_interval=None), None),
        (ProcessSettings(switch_interval=0.001), 0.001),
    ],
    ids=["left-alone", "own-value"],
)
async def test_the_switch_interval_follows_the_process_settings(
    switch_interval: float, settings: ProcessSettings, expected: float | None
) -> None:
    host = await started(ThreadHost("settings", settings))
    try:
        now = sys.getswitchinterval()
        assert now == (switch_interval if expected is None else pytest.approx(expected))
    finally:
        await host.aclose()
    assert sys.getswitchinterval() == switch_interval


async def test_an_applications_own_switch_interval_is_kept(switch_interval: float) -> None:
    lower = DEFAULT_SWITCH_INTERVAL / 2
    sys.setswitchinterval(lower)  # the application's own, lower already: left alone
    host = await started(ThreadHost("lower"))
    assert sys.getswitchinterval() == pytest.approx(lower)
    await host.aclose()
    assert sys.getswitchinterval() == pytest.approx(lower)

    sys.setswitchinterval(switch_interval)
    host = await started(ThreadHost("changed"))
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_SWITCH_INTERVAL)
    sys.setswitchinterval(0.003)  # the application changes it while the thread runs
    await host.aclose()
    assert sys.getswitchinterval() == pytest.approx(0.003)  # not "put back" over it


@LINUX_SCHEDULING
async def test_the_thread_runs_at_the_priority_asked_for_where_the_kernel_grants_it(
    sim: KubeSim,
) -> None:
    """A factory with ``pipeline_priority``: its thread is SCHED_RR at that priority, and
    its informers' statistics say so (or, where the kernel refuses, the normal policy and
    None); without it, the normal policy. The caller's loop (LoopHost) is never touched."""
    assert LoopHost(ProcessSettings(pipeline_priority=2)).priority is None
    grants = kernel_grants_rr()
    for settings in (ProcessSettings(), ProcessSettings(pipeline_priority=2)):
        async with (
            sim.api_client() as api,
            InformerFactory(api, watch_options=watch_options(), process=settings) as factory,
        ):
            pods = factory.informer("v1", "pods")
            await pods.wait_for_sync()
            host = factory.host
            assert isinstance(host, ThreadHost)
            thread = host.thread
            assert thread is not None and thread.native_id is not None
            policy = policy_of(thread.native_id)
            granted = pods.statistics().pipeline_priority
            if settings.pipeline_priority is None:
                assert (granted, policy) == (None, os.SCHED_OTHER)
            elif grants:
                assert (granted, policy) == (2, os.SCHED_RR)
                assert os.sched_getparam(thread.native_id).sched_priority == 2
            else:  # refused (no CAP_SYS_NICE): the normal policy, as statistics say
                assert (granted, policy) == (None, os.SCHED_OTHER)
        assert policy_of(0) == os.SCHED_OTHER  # (the caller's thread: untouched)
