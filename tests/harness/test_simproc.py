"""SimProcess: KubeSim in a child process, driven over its command pipe, reached over HTTP."""

from __future__ import annotations

import os
import signal

import pytest

from aioinformer import InformerFactory
from aioinformer._harness.contention import percentile, staleness_of
from aioinformer._harness.simproc import SimProcess, SimProcessError

pytestmark = pytest.mark.timeout(60)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_populate_churn_commits_and_an_informer_over_http() -> None:
    async with SimProcess(history_size=5000) as sim:
        assert sim.url.startswith("http://127.0.0.1:") and alive(sim.pid)
        assert sim.token not in repr(sim)
        made = await sim.populate(2, 25, namespaces=2, nodes=3)
        assert made["pods"] == 50
        async with sim.api_client() as api, InformerFactory(api) as factory:
            pods = factory.informer("v1", "pods")
            await factory.wait_for_sync(timeout=20)
            assert len(pods.snapshot()) == 50
            assert len(pods.snapshot().index_values("controller")) == 2  # two owners
            start_rv = await sim.record()
            await sim.churn(200)
            await pods.wait_until(lambda s: s.resource_version >= start_rv + 20, timeout=20)
            await sim.churn(0)
            stats = await sim.stats()
            await pods.wait_for_rv(stats["rv"], timeout=20)
            commits = await sim.commits()
        assert stats["churn_writes"] >= 20 and stats["pods"] == 50 and stats["rss_bytes"] > 0
        rvs = [rv for rv, _ in commits]
        assert rvs == sorted(rvs) and rvs[0] > start_rv and len(rvs) == stats["churn_writes"]
        assert await sim.commits() == []  # each call returns what is new since the last
        with pytest.raises(SimProcessError, match="no-such-command failed: KeyError"):
            await sim.call("no-such-command")
        pid = sim.pid
    assert not alive(pid)  # no process left behind


async def test_a_child_that_died_is_reported() -> None:
    async with SimProcess() as sim:
        os.kill(sim.pid, signal.SIGKILL)
        with pytest.raises(SimProcessError, match="exited"):
            await sim.stats()


def test_staleness_is_commit_to_first_covering_publish() -> None:
    commits = [(10, 1.0), (11, 1.5), (12, 2.0), (20, 3.0)]
    publishes = [(1.2, 10), (2.5, 12), (3.0, 19)]  # RV 20 never published
    timed = staleness_of(commits, publishes)
    assert [c for c, _ in timed] == [1.0, 1.5, 2.0]
    assert [s for _, s in timed] == pytest.approx([0.2, 1.0, 0.5])
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and percentile([], 0.99) == 0.0
