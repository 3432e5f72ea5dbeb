"""Lease leader election against KubeSim over HTTP: acquisition and the record's format,
renewals every ``retry_period``, mutual exclusion, release hand-over, a frozen leader
stepping down ``renew_deadline`` after its last renewal (before the standby may take over,
``lease_duration`` after it last saw the Lease change), transient server errors,
callbacks.

On virtual time (looptime): the electors' clock is the loop's, KubeSim answers on the same
loop in no virtual time, so the Leases have client-go's durations (15 s, renewed within
10 s, every 2 s), no test waits for one, and the instants asserted are exact."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from aioinformer._coordination.leader import JITTER, LeaderElector
from aioinformer._core.errors import ConfigError
from aioinformer.testing import KubeSim, eventually
from tests.coordination.freeze import cut_off
from tests.coordination.history import (
    LeaseRequest,
    LeaseWrite,
    lease_requests,
    lease_writes,
    renewed,
    same_instant,
)

pytestmark = pytest.mark.looptime

NAME = "ctl-leader"
NS = "default"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 15.0, 10.0, 2.0  # client-go's defaults
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LONG = 10 * LEASE_DURATION  # (virtual) seconds a test may wait for a change of leader
FIRST = (
    LEASE_DURATION + 5
)  # (virtual) seconds: a fresh deployment's first leader waits a renew deadline


def lease_spec(sim: KubeSim) -> dict[str, Any]:
    spec: dict[str, Any] = sim.get("leases", NAME, NS)["spec"]
    return spec


def elector(api: Any, identity: str, **options: Any) -> LeaderElector:
    """An elector on the loop's clock with client-go's timings."""
    options.setdefault("clock", asyncio.get_running_loop().time)
    return LeaderElector(
        api,
        name=NAME,
        namespace=NS,
        identity=identity,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        **options,
    )


def by(writes: list[LeaseWrite], holder: str) -> list[float]:
    """When the Lease was written naming ``holder``."""
    return [w.at for w in writes if w.lease == NAME and w.holder == holder]


def sent(requests: list[LeaseRequest], holder: str) -> list[float]:
    """When the writes of the Lease naming ``holder`` that succeeded were sent."""
    return [r.sent for r in requests if r.lease == NAME and r.holder == holder and r.ok]


class Sampler:
    """Checks, every 50 (virtual) milliseconds, that at most one elector counts as leader
    and that a leader's own view agrees with the Lease on the server."""

    def __init__(self, sim: KubeSim, electors: list[LeaderElector]) -> None:
        self.sim, self.electors = sim, electors
        self.samples = 0
        self.violations: list[str] = []

    async def run(self) -> None:
        while True:
            leaders = [e.identity for e in self.electors if e.is_leader]
            if len(leaders) > 1:
                self.violations.append(f"two leaders at once: {leaders}")
            for identity in leaders:
                holder = lease_spec(self.sim)["holderIdentity"]
                if holder != identity:
                    self.violations.append(f"{identity} leads but the lease names {holder!r}")
            self.samples += 1
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def sampling(sim: KubeSim, electors: list[LeaderElector]) -> AsyncIterator[Sampler]:
    sampler = Sampler(sim, electors)
    task = asyncio.create_task(sampler.run())
    try:
        yield sampler
    finally:
        task.cancel()
        await asyncio.wait([task])
    assert sampler.samples > 20
    assert sampler.violations == []


def test_timings_are_checked() -> None:
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="a", lease_duration=1.0)
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="a", renew_deadline=2.0)
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="")


async def test_single_elector_acquires_renews_every_retry_period_and_releases(
    sim: KubeSim,
) -> None:
    async with sim.api_client() as api:
        requests = lease_requests(api)
        a = elector(api, "a")
        assert not a.is_leader and a.leadership_lost.is_set()
        async with a:
            await a.wait_leader(timeout=FIRST)
            assert a.is_leader and a.leader == "a"
            assert not a.leadership_lost.is_set()
            first = lease_spec(sim)
            assert first["holderIdentity"] == "a"
            assert first["leaseDurationSeconds"] == 15
            assert first["leaseTransitions"] == 0
            assert MICRO_TIME.match(first["acquireTime"]), first
            assert MICRO_TIME.match(first["renewTime"]), first
            led = len(sent(requests, "a"))  # (it took the Lease, then led renew_deadline later)
            await eventually(
                lambda: len(sent(requests, "a")) == led + 5, "five renewals", timeout=LONG
            )
            renewed = lease_spec(sim)
            assert MICRO_TIME.match(renewed["renewTime"])
            assert renewed["renewTime"] > first["renewTime"]
            assert renewed["acquireTime"] == first["acquireTime"]
            assert renewed["leaseTransitions"] == 0
        assert not a.is_leader and a.leadership_lost.is_set()
        released = lease_spec(sim)
    # renewed retry_period after the last renewal ended (the requests take no time on
    # virtual time, but for the moments the HTTP client spends in a thread)
    written = sent(requests, "a")[led - 1 :]
    gaps = [later - earlier for earlier, later in itertools.pairwise(written)]
    assert all(RETRY_PERIOD <= gap < RETRY_PERIOD + 0.5 for gap in gaps), written
    assert released["holderIdentity"] == ""
    assert released["leaseDurationSeconds"] == 1
    assert released["leaseTransitions"] == 0
    assert MICRO_TIME.match(released["renewTime"])


async def test_two_electors_one_leads_and_release_hands_over(sim: KubeSim) -> None:
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = elector(api_a, "a")
        # b's clock never advances: the lease can never expire in b's eyes, so b can only
        # take over through a's release
        b = elector(api_b, "b", clock=lambda: 0.0)
        async with sampling(sim, [a, b]), contextlib.AsyncExitStack() as running_a:
            await running_a.enter_async_context(a)
            await a.wait_leader(timeout=FIRST)
            async with b:
                with pytest.raises(TimeoutError):  # many renewals of a
                    await b.wait_leader(timeout=3 * LEASE_DURATION)
                assert b.leader == "a" and a.is_leader
                await running_a.aclose()  # stop a: it releases
                released = loop.time()
                await b.wait_leader(timeout=LONG)
                # b took it at its next try: after retry_period and its jitter at most
                assert loop.time() - released <= RETRY_PERIOD * (1 + JITTER)
                assert b.is_leader and not a.is_leader
                spec = lease_spec(sim)
                assert spec["holderIdentity"] == "b"
                assert spec["leaseTransitions"] == 1
                assert spec["leaseDurationSeconds"] == 15


async def test_frozen_leader_steps_down_before_standby_takes_over(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a's requests hang: a steps down exactly ``renew_deadline`` after its last renewal
    started, b takes the Lease over no sooner than ``lease_duration`` after that renewal
    (the moment it saw the Lease change last); a, reachable again, stays a follower."""
    events: list[tuple[str, float]] = []
    loop = asyncio.get_running_loop()

    def note(what: str) -> Callable[[], None]:
        return lambda: events.append((what, loop.time()))

    async with sim.api_client() as api_a, sim.api_client() as api_b:
        thawed = cut_off(api_a, monkeypatch)
        a = elector(
            api_a, "a", on_started_leading=note("a started"), on_stopped_leading=note("a stopped")
        )
        b = elector(api_b, "b", on_started_leading=note("b started"))
        requests = lease_requests(api_a)
        async with lease_writes(api_b, NS) as writes, sampling(sim, [a, b]), a:
            await a.wait_leader(timeout=FIRST)
            scope_lost: list[bool] = []

            async def work() -> None:
                async with a.leadership(timeout=1) as scope:
                    await asyncio.Event().wait()  # "controllers", until leadership ends
                scope_lost.append(scope.lost)

            worker = asyncio.create_task(work())
            async with b:
                # b sees a's valid Lease and stays a follower while a renews it twice
                await eventually(lambda: b.leader == "a", "b sees a")
                renewals = len(by(writes, "a"))
                await eventually(lambda: len(by(writes, "a")) >= renewals + 2, "two renewals")
                assert a.is_leader and not b.is_leader
                thawed.clear()  # a's requests hang from now on
                last_renewal = renewed(requests, NAME, "a", by=loop.time())
                await b.wait_leader(timeout=LONG)
                assert [what for what, _ in events] == ["a started", "a stopped", "b started"]
                stopped, took_over = events[1][1], events[2][1]
                assert same_instant(stopped, last_renewal + RENEW_DEADLINE)
                assert took_over >= last_renewal + LEASE_DURATION
                assert not a.is_leader and a.leadership_lost.is_set()
                await asyncio.wait_for(worker, 5)
                assert scope_lost == [True]
                spec = lease_spec(sim)
                assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
                thawed.set()
                # a, reachable again, sees b's valid lease and stays a follower
                await eventually(lambda: a.leader == "b", "a sees b")
                renewals = len(by(writes, "b"))
                await eventually(lambda: len(by(writes, "b")) >= renewals + 2, "two renewals")
                assert b.is_leader and not a.is_leader


async def test_a_deadline_the_clock_falls_short_of_by_a_hair_counts_as_passed(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The elector's clock runs a hair slower than the loop's timers (as time.monotonic
    and uvloop's millisecond timers do): when the timer for its renew deadline fires, the
    clock is a hair short of it. A cut-off leader still steps down then, after its one
    renewal attempt, instead of retrying with a timeout too short for any timer, at once
    and again (on virtual time, for ever: the loop's time moves only when it idles)."""
    loop = asyncio.get_running_loop()
    async with sim.api_client() as api:
        thawed = cut_off(api, monkeypatch)
        sent = 0
        call_api = api.call_api

        async def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal sent
            sent += 1
            return await call_api(*args, **kwargs)

        monkeypatch.setattr(api, "call_api", counted)
        tries: list[int] = []
        a = elector(
            api,
            "a",
            clock=lambda: loop.time() * (1 - 1e-12),
            on_stopped_leading=lambda: tries.append(sent - sent_before),
        )
        async with a:
            await a.wait_leader(timeout=FIRST)
            thawed.clear()
            sent_before = sent
            await asyncio.wait_for(a.leadership_lost.wait(), RENEW_DEADLINE + RETRY_PERIOD)
            thawed.set()
    assert tries[0] == 1  # the renewal that hung, and no other


async def test_one_failed_renewal_keeps_leadership(sim: KubeSim) -> None:
    stopped: list[str] = []
    async with sim.api_client() as api, lease_writes(api, NS) as writes:
        a = elector(api, "a", on_stopped_leading=lambda: stopped.append("a"))
        async with sampling(sim, [a]), a:
            await a.wait_leader(timeout=FIRST)
            before = lease_spec(sim)
            # one renewal fails entirely: the optimistic PUT and the fallback GET get 500
            sim.fail_next(2, 500, path_contains=f"/leases/{NAME}")
            await eventually(lambda: sim.faults.injected.get("http_500", 0) == 2, "the 500s")
            renewals = len(by(writes, "a"))
            await eventually(lambda: len(by(writes, "a")) > renewals, "the next renewal")
            assert a.is_leader and stopped == []
            after = lease_spec(sim)
            assert after["holderIdentity"] == "a"
            assert after["acquireTime"] == before["acquireTime"]
            assert after["leaseTransitions"] == 0


async def test_callbacks_report_leaders_in_order(sim: KubeSim) -> None:
    log: list[str] = []

    def candidate(api: Any, identity: str) -> LeaderElector:
        return elector(
            api,
            identity,
            on_started_leading=lambda: log.append(f"{identity}: started"),
            on_stopped_leading=lambda: log.append(f"{identity}: stopped"),
            on_new_leader=lambda who: log.append(f"{identity}: new leader {who}"),
        )

    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = candidate(api_a, "a"), candidate(api_b, "b")
        async with contextlib.AsyncExitStack() as running_a:
            await running_a.enter_async_context(a)
            await a.wait_leader(timeout=FIRST)
            async with b:
                await eventually(lambda: b.leader == "a", "b sees a")
                await running_a.aclose()
                await b.wait_leader(timeout=LONG)
    assert log == [
        "a: new leader a",
        "a: started",
        "b: new leader a",
        "a: stopped",
        "b: new leader b",
        "b: started",
        "b: stopped",
    ]
