"""Lease leader election against KubeSim over HTTP: acquisition and the record's format,
mutual exclusion, release hand-over, a frozen leader, transient server errors, callbacks."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from aioinformer._coordination.leader import LeaderElector
from aioinformer._core.errors import ConfigError
from aioinformer.testing import KubeSim

NAME = "ctl-leader"
NS = "default"
FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def lease_spec(sim: KubeSim) -> dict[str, Any]:
    spec: dict[str, Any] = sim.get("leases", NAME, NS)["spec"]
    return spec


async def until(pred: Callable[[], bool], timeout: float = 8.0) -> None:
    """Poll ``pred`` until true; fail the test after a generous ``timeout``."""
    async with asyncio.timeout(timeout):
        while True:
            if pred():
                return
            await asyncio.sleep(0.01)


async def renewals(sim: KubeSim, n: int, timeout: float = 8.0) -> None:
    """Return once the Lease was written ``n`` more times (distinct resourceVersions seen)."""
    seen: set[str] = set()

    def written() -> bool:
        seen.add(sim.get("leases", NAME, NS)["metadata"]["resourceVersion"])
        return len(seen) > n

    await until(written, timeout)


class Sampler:
    """Checks, every few milliseconds, that at most one elector counts as leader and that a
    leader's own view agrees with the Lease on the server."""

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
            await asyncio.sleep(0.005)


@asynccontextmanager
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


def freezable(api: Any, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Make every request through ``api`` wait while the returned event is clear: what a
    process that cannot reach the API server (or is paused) looks like to the others."""
    thawed = asyncio.Event()
    thawed.set()
    call_api = api.call_api

    async def gated(*args: Any, **kwargs: Any) -> Any:
        await thawed.wait()
        return await call_api(*args, **kwargs)

    monkeypatch.setattr(api, "call_api", gated)
    return thawed


def test_timings_are_checked() -> None:
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="a", lease_duration=1.0)
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="a", renew_deadline=2.0)
    with pytest.raises(ConfigError):
        LeaderElector(None, name=NAME, namespace=NS, identity="", **FAST)


async def test_single_elector_acquires_renews_and_releases(sim: KubeSim) -> None:
    async with sim.api_client() as api:
        elector = LeaderElector(api, name=NAME, namespace=NS, identity="a", **FAST)
        assert not elector.is_leader and elector.leadership_lost.is_set()
        async with elector:
            await elector.wait_leader(timeout=5)
            assert elector.is_leader and elector.leader == "a"
            assert not elector.leadership_lost.is_set()
            first = lease_spec(sim)
            assert first["holderIdentity"] == "a"
            assert first["leaseDurationSeconds"] == 2  # ceil(1.5): never shorter than asked
            assert first["leaseTransitions"] == 0
            assert MICRO_TIME.match(first["acquireTime"]), first
            assert MICRO_TIME.match(first["renewTime"]), first
            await until(lambda: lease_spec(sim)["renewTime"] != first["renewTime"])
            renewed = lease_spec(sim)
            assert MICRO_TIME.match(renewed["renewTime"])
            assert renewed["renewTime"] > first["renewTime"]
            assert renewed["acquireTime"] == first["acquireTime"]
            assert renewed["leaseTransitions"] == 0
        assert not elector.is_leader and elector.leadership_lost.is_set()
        released = lease_spec(sim)
        assert released["holderIdentity"] == ""
        assert released["leaseDurationSeconds"] == 1
        assert released["leaseTransitions"] == 0
        assert MICRO_TIME.match(released["renewTime"])


async def test_two_electors_one_leads_and_release_hands_over(sim: KubeSim) -> None:
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a = LeaderElector(api_a, name=NAME, namespace=NS, identity="a", **FAST)
        # b's clock never advances: the lease can never expire in b's eyes, so b can only
        # take over through a's release
        b = LeaderElector(api_b, name=NAME, namespace=NS, identity="b", clock=lambda: 0.0, **FAST)
        async with sampling(sim, [a, b]):
            async with a:
                await a.wait_leader(timeout=5)
                async with b:
                    with pytest.raises(TimeoutError):
                        await b.wait_leader(timeout=1.5)  # several renewals of a
                    assert b.leader == "a" and a.is_leader
                    await a.aclose()  # stop a: it releases
                    await b.wait_leader(timeout=5)
                    assert b.is_leader and not a.is_leader
                    spec = lease_spec(sim)
                    assert spec["holderIdentity"] == "b"
                    assert spec["leaseTransitions"] == 1
                    assert spec["leaseDurationSeconds"] == 2


async def test_frozen_leader_steps_down_before_standby_takes_over(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    async with sim.api_client() as api_a, sim.api_client() as api_b:
        thawed = freezable(api_a, monkeypatch)
        a = LeaderElector(
            api_a,
            name=NAME,
            namespace=NS,
            identity="a",
            on_started_leading=lambda: events.append("a started"),
            on_stopped_leading=lambda: events.append("a stopped"),
            **FAST,
        )
        b = LeaderElector(
            api_b,
            name=NAME,
            namespace=NS,
            identity="b",
            on_started_leading=lambda: events.append("b started"),
            **FAST,
        )
        async with sampling(sim, [a, b]), a:
            await a.wait_leader(timeout=5)
            scope_lost: list[bool] = []

            async def work() -> None:
                async with a.leadership(timeout=1) as scope:
                    await asyncio.Event().wait()  # "controllers", until leadership ends
                scope_lost.append(scope.lost)

            worker = asyncio.create_task(work())
            async with b:
                # b sees a's valid Lease and stays a follower while a renews it twice
                await until(lambda: b.leader == "a")
                await renewals(sim, 2)
                assert a.is_leader and not b.is_leader
                thawed.clear()  # a's requests hang from now on
                await b.wait_leader(timeout=10)
                assert events == ["a started", "a stopped", "b started"]
                assert not a.is_leader and a.leadership_lost.is_set()
                await asyncio.wait_for(worker, 5)
                assert scope_lost == [True]
                spec = lease_spec(sim)
                assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
                thawed.set()
                # a, thawed, sees b's valid lease and stays a follower
                await until(lambda: a.leader == "b")
                await renewals(sim, 2)  # a had two rounds to grab it, and must not
                assert b.is_leader and not a.is_leader


async def test_one_failed_renewal_keeps_leadership(sim: KubeSim) -> None:
    stopped: list[str] = []
    async with sim.api_client() as api:
        elector = LeaderElector(
            api,
            name=NAME,
            namespace=NS,
            identity="a",
            on_stopped_leading=lambda: stopped.append("a"),
            **FAST,
        )
        async with elector:
            await elector.wait_leader(timeout=5)
            before = lease_spec(sim)
            # one renewal fails entirely: the optimistic PUT and the fallback GET get 500
            sim.fail_next(2, 500, path_contains=f"/leases/{NAME}")
            await until(lambda: sim.faults.injected.get("http_500", 0) == 2)
            failed_at = lease_spec(sim)["renewTime"]
            await until(lambda: lease_spec(sim)["renewTime"] != failed_at)
            assert elector.is_leader and stopped == []
            after = lease_spec(sim)
            assert after["holderIdentity"] == "a"
            assert after["acquireTime"] == before["acquireTime"]
            assert after["leaseTransitions"] == 0


async def test_callbacks_report_leaders_in_order(sim: KubeSim) -> None:
    log: list[str] = []

    def elector(api: Any, identity: str) -> LeaderElector:
        return LeaderElector(
            api,
            name=NAME,
            namespace=NS,
            identity=identity,
            on_started_leading=lambda: log.append(f"{identity}: started"),
            on_stopped_leading=lambda: log.append(f"{identity}: stopped"),
            on_new_leader=lambda who: log.append(f"{identity}: new leader {who}"),
            **FAST,
        )

    async with sim.api_client() as api_a, sim.api_client() as api_b:
        a, b = elector(api_a, "a"), elector(api_b, "b")
        async with a:
            await a.wait_leader(timeout=5)
            async with b:
                await until(lambda: b.leader == "a")
                await a.aclose()
                await b.wait_leader(timeout=5)
    assert log == [
        "a: new leader a",
        "a: started",
        "b: new leader a",
        "a: stopped",
        "b: new leader b",
        "b: started",
        "b: stopped",
    ]
