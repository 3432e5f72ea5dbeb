"""Service, the one lifecycle shape (aioinformer/_core/service.py): ``async with`` enters
once the service is ready and raises a failure before that; leaving cancels it and raises
the error it failed with; one run at a time; nothing outlives the block, even when the
caller is cancelled while it waits for the service to end; ``wait_ended``."""

from __future__ import annotations

import asyncio

import pytest

from aioinformer import ConfigError
from aioinformer._core.service import Service, wait_ended
from aioinformer.testing import eventually


class Probe(Service):
    """A service the test steers: ``run`` starts, waits for ``go``, then fails
    (``before_ready``), returns (``returns``) or becomes ready; once ready it runs until cancelled, or fails when ``fail`` is
    set. Its cleanup waits for ``release`` when ``stubborn`` (even if cancelled again)."""

    def __init__(
        self,
        *,
        before_ready: Exception | None = None,
        returns: bool = False,
        stubborn: bool = False,
    ) -> None:
        self.before_ready = before_ready
        self.returns = returns
        self.stubborn = stubborn
        self.started, self.go, self.fail = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.cleaning, self.release = asyncio.Event(), asyncio.Event()
        self.runs = 0
        self.ended = 0
        self.interrupted = 0

    async def run(self) -> None:
        self._begin()
        try:
            self.runs += 1
            self.started.set()
            await self.go.wait()
            if self.before_ready is not None:
                raise self.before_ready
            if self.returns:
                return
            self._ready()
            await self.fail.wait()
            raise RuntimeError("failed while running")
        finally:
            self.cleaning.set()
            while self.stubborn and not self.release.is_set():
                try:
                    await self.release.wait()
                except asyncio.CancelledError:
                    self.interrupted += 1
            self.ended += 1
            self._end()


async def test_async_with_enters_once_the_service_is_ready() -> None:
    probe = Probe()
    entered = asyncio.Event()

    async def user() -> None:
        async with probe:
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(user())
    await probe.started.wait()
    assert not entered.is_set(), "entered before the service said it was ready"
    probe.go.set()
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.ended == 1


async def test_a_failure_before_ready_is_raised_by_entering() -> None:
    probe = Probe(before_ready=ValueError("bad configuration"))
    probe.go.set()
    with pytest.raises(ValueError, match="bad configuration"):
        async with probe:
            pytest.fail("entered a service that failed")
    assert probe.ended == 1


async def test_ending_without_error_before_ready_is_a_config_error() -> None:
    probe = Probe(returns=True)
    probe.go.set()
    with pytest.raises(ConfigError, match="Probe ended before it was ready"):
        async with probe:
            pytest.fail("entered a service that ended")


async def test_leaving_raises_the_error_the_service_failed_with() -> None:
    probe = Probe()
    probe.go.set()
    with pytest.raises(RuntimeError, match="failed while running"):
        async with probe:
            probe.fail.set()
            await probe.cleaning.wait()  # it has failed (nothing tells the body)
    assert probe.ended == 1


async def test_leaving_a_healthy_service_cancels_it_and_raises_nothing() -> None:
    probe = Probe()
    probe.go.set()
    async with probe as entered:
        assert entered is probe
    assert probe.ended == 1 and probe.cleaning.is_set()
    async with probe:  # and it may run again afterwards
        assert probe.runs == 2


async def test_a_second_run_at_the_same_time_is_refused() -> None:
    probe = Probe()
    probe.go.set()
    async with probe:
        with pytest.raises(ConfigError, match="Probe is already running"):
            await probe.run()
        with pytest.raises(ConfigError, match="Probe is already started"):
            async with probe:
                pytest.fail("entered twice")
        assert probe.runs == 1
    assert probe.ended == 1


async def test_run_until_cancelled_without_async_with() -> None:
    probe = Probe()
    probe.go.set()
    task = asyncio.create_task(probe.run())
    await probe.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.ended == 1


async def test_nothing_outlives_the_block_when_the_caller_is_cancelled_during_exit() -> None:
    """Leaving waits for the service's cleanup; a cancellation of the caller meanwhile is
    passed on to the service and raised only once the service has ended."""
    probe = Probe(stubborn=True)
    probe.go.set()
    leave = asyncio.Event()

    async def user() -> None:
        async with probe:
            await leave.wait()

    task = asyncio.create_task(user())
    await probe.started.wait()
    leave.set()
    await probe.cleaning.wait()  # the block is leaving: the service cleans up
    task.cancel()  # the caller is cancelled while it waits for that
    await eventually(lambda: probe.interrupted == 1, "the cancellation to reach the service")
    for _ in range(5):
        await asyncio.sleep(0)  # (let the caller run, had it anything left to do)
    assert not task.done(), "the block was left while the service still ran"
    probe.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.ended == 1


async def test_entering_cancelled_stops_the_service_before_raising() -> None:
    probe = Probe()  # never ready: go is never set

    async def user() -> None:
        async with probe:
            pytest.fail("entered a service that is not ready")

    task = asyncio.create_task(user())
    await probe.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.ended == 1


async def test_a_failure_while_the_block_runs_cancels_the_body_and_is_raised_at_exit() -> None:
    probe = Probe()
    probe.go.set()
    reached_end = False
    with pytest.raises(RuntimeError, match="failed while running"):
        async with probe:
            probe.fail.set()
            await asyncio.Event().wait()  # cancelled at once: the service failed
            reached_end = True
    assert not reached_end and probe.ended == 1
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # uncancelled


class FailsOnStop(Service):
    """Ready at once; stopping it fails (its cleanup raises)."""

    async def run(self) -> None:
        self._begin()
        try:
            self._ready()
            await asyncio.Event().wait()
        finally:
            self._end()
            raise RuntimeError("failed while stopping")


async def test_the_bodys_own_exception_wins_with_the_services_as_its_cause() -> None:
    with pytest.raises(KeyError) as raised:
        async with FailsOnStop():
            raise KeyError("the body's")
    assert isinstance(raised.value.__cause__, RuntimeError)


async def test_a_failure_at_exit_after_a_clean_body_is_raised() -> None:
    with pytest.raises(RuntimeError, match="failed while stopping"):
        async with FailsOnStop():
            pass


async def test_wait_ended_waits_for_a_task_asked_to_stop() -> None:
    cleaning, release = asyncio.Event(), asyncio.Event()
    done = False

    async def slow_to_stop() -> None:
        nonlocal done
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.shield(release.wait())
            done = True

    task = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)
    task.cancel()
    waiter = asyncio.create_task(wait_ended(task))
    await cleaning.wait()
    assert not waiter.done()
    release.set()
    await waiter
    assert done and task.cancelled()
