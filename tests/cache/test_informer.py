"""Informers end to end over real HTTP against KubeSim: sync, reads, freshness, handlers.
Convergence under faults: tests/testing/test_faultmix.py (seeded fault mixes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import InformerFactory, WatchOptions, by_label
from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer.testing import KubeSim

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
async def factory(sim: KubeSim) -> AsyncIterator[InformerFactory]:
    async with sim.api_client() as api:
        async with InformerFactory(api, watch_options=FAST) as f:
            yield f


def cache_versions(snapshot: Any) -> dict[str, str]:
    return {o.key: str(o.rv) for o in snapshot.list()}


async def test_sync_and_follow_writes(sim: KubeSim, factory: InformerFactory) -> None:
    for i in range(5):
        sim.create("pods", pod(f"p{i}"), "default")
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    assert cache_versions(pods.snapshot()) == sim.versions("pods")
    made = sim.create("pods", pod("new"), "default")
    snap = await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=5)
    assert snap.get("default/new") is not None
    sim.patch("pods", "p1", {"metadata": {"labels": {"app": "db"}}}, "default")
    sim.delete("pods", "p2", "default")
    snap = await pods.wait_for_rv(sim.resource_version, timeout=5)
    assert cache_versions(snap) == sim.versions("pods")
    assert snap.get("default/p1").labels == {"app": "db"}  # type: ignore[union-attr]
    assert sorted(o.name for o in snap.by_index("namespace", "default")) == sorted(
        k.split("/")[1] for k in sim.versions("pods")
    )


async def test_on_publish_sees_every_publish_in_order(
    sim: KubeSim, factory: InformerFactory
) -> None:
    pods = factory.informer("v1", "pods")
    seen: list[tuple[int, int]] = []
    remove = pods.on_publish(lambda seq, rv: seen.append((seq, rv)))
    await factory.wait_for_sync(timeout=10)
    made = sim.create("pods", pod("a"), "default")
    await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=5)
    assert seen and seen[-1] == (pods.snapshot().seq, pods.snapshot().resource_version)
    assert [s for s, _ in seen] == sorted({s for s, _ in seen})  # each seq once, in order
    assert [rv for _, rv in seen] == sorted(rv for _, rv in seen)
    remove()
    remove()  # harmless twice
    count = len(seen)
    made = sim.create("pods", pod("b"), "default")
    await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=5)
    assert len(seen) == count


async def test_same_informer_is_shared(factory: InformerFactory) -> None:
    a = factory.informer("v1", "pods")
    b = factory.informer("v1", "pods")
    c = factory.informer("v1", "pods", label_selector="app=web")
    assert a is b and a is not c


async def test_query_index_and_min_rv(sim: KubeSim, factory: InformerFactory) -> None:
    pods = factory.informer("v1", "pods", indexers={"app": by_label("app")})
    await factory.wait_for_sync(timeout=10)
    made = sim.create("pods", pod("q", app="queried"), "default")
    got = await pods.query("app", "queried", min_rv=made["metadata"]["resourceVersion"], timeout=5)
    assert [o.name for o in got] == ["q"]
    with pytest.raises(ConfigError):
        pods.snapshot().by_index("nope", "x")


async def test_wait_until_and_timeouts(sim: KubeSim, factory: InformerFactory) -> None:
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)

    async def later() -> None:
        await asyncio.sleep(0.2)
        sim.create("pods", pod("awaited"), "default")

    task = asyncio.create_task(later())
    snap = await pods.wait_until(lambda s: "default/awaited" in s, timeout=5)
    await task
    assert snap.get("default/awaited") is not None
    with pytest.raises(FreshnessTimeout):
        await pods.wait_for_rv(sim.resource_version + 1000, timeout=0.3)


async def test_waits_wake_on_publish_and_leave_no_waiter_behind(
    sim: KubeSim, factory: InformerFactory
) -> None:
    """A publish wakes every waiting reader; a wait that times out or is cancelled leaves
    nothing behind and disturbs no other."""
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    rv = sim.resource_version
    timing_out = [asyncio.create_task(pods.wait_for_rv(rv + 1000, timeout=0.1)) for _ in range(3)]
    cancelled = [asyncio.create_task(pods.wait_for_rv(rv + 1000)) for _ in range(3)]
    served = [asyncio.create_task(pods.wait_for_rv(rv + 1, timeout=10)) for _ in range(3)]
    for task in timing_out:
        with pytest.raises(FreshnessTimeout):
            await task
    for task in cancelled:
        task.cancel()
    await asyncio.gather(*cancelled, return_exceptions=True)
    assert all(task.cancelled() for task in cancelled)
    assert len(pods._waiters) == 3 and not any(task.done() for task in served)
    sim.create("pods", pod("x"), "default")
    for snap in await asyncio.gather(*served):
        assert snap.get("default/x") is not None
    assert pods._waiters == []


async def test_handlers_and_late_subscribers(sim: KubeSim, factory: InformerFactory) -> None:
    sim.create("pods", pod("before"), "default")
    pods = factory.informer("v1", "pods")
    seen: list[tuple[str, str]] = []
    pods.add_handler(
        on_add=lambda o: seen.append(("add", o.name)),
        on_update=lambda old, new: seen.append(("update", new.name)),
        on_delete=lambda o: seen.append(("delete", o.name)),
    )
    await factory.wait_for_sync(timeout=10)
    sim.create("pods", pod("x"), "default")
    sim.patch("pods", "x", {"metadata": {"labels": {"v": "2"}}}, "default")
    sim.delete("pods", "x", "default")
    await pods.wait_for_rv(sim.resource_version, timeout=5)
    late: list[str] = []
    sub = pods.add_handler(on_add=lambda o: late.append(o.name), name="late")
    await sub.wait_for_sync(timeout=5)
    for _ in range(100):
        if ("delete", "x") in seen:
            break
        await asyncio.sleep(0.02)
    assert seen[0] == ("add", "before")
    assert seen[1:] == [("add", "x"), ("update", "x"), ("update", "x"), ("delete", "x")]
    assert late == ["before"]


async def test_locked_store_has_the_same_reader_api(sim: KubeSim, factory: InformerFactory) -> None:
    for i in range(3):
        sim.create("pods", pod(f"l{i}"), "default")
    locked = factory.informer("v1", "pods", store="locked")
    await factory.wait_for_sync(timeout=10)
    await locked.wait_fresh(sim.resource_version, timeout=5)
    async with locked.read() as view:
        assert {o.key: str(o.rv) for o in view.list()} == sim.versions("pods")
        assert len(view.by_index("namespace", "default")) == 3
    with pytest.raises(ConfigError):
        locked.snapshot()


async def test_stats(sim: KubeSim, factory: InformerFactory) -> None:
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    sim.create("pods", pod("s"), "default")
    await pods.wait_for_rv(sim.resource_version, timeout=5)
    st = pods.statistics()
    assert st.has_synced and st.objects == 1 and st.resource_version == sim.resource_version
    assert st.fifo_depth == 0 and st.staleness == 0 and st.applied_total >= 2


async def test_factory_stop_leaves_no_tasks(sim: KubeSim) -> None:
    before = {t for t in asyncio.all_tasks()}
    async with sim.api_client() as api:
        f = InformerFactory(api, watch_options=FAST)
        await f.start()
        f.informer("v1", "pods")
        f.informer("v1", "configmaps")
        await f.wait_for_sync(timeout=10)
        await f.stop()
        await f.stop()  # harmless
    await asyncio.sleep(0)
    left = [
        t.get_coro()
        for t in asyncio.all_tasks()
        if t not in before and not t.done() and t is not asyncio.current_task()
    ]
    # the sim's own request handlers may still be finishing; nothing of the informers may
    mine = [
        c
        for c in left
        if "aioinformer/_" in getattr(getattr(c, "cr_code", None), "co_filename", "")
    ]
    assert mine == []


async def test_cancelling_the_runner_stops_everything(sim: KubeSim) -> None:
    async with sim.api_client() as api:

        async def runner() -> None:
            async with InformerFactory(api, watch_options=FAST) as f:
                f.informer("v1", "pods")
                await f.wait_for_sync(timeout=10)
                await asyncio.Event().wait()

        task = asyncio.create_task(runner())
        for _ in range(200):
            if sim.open_watches:
                break
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    for _ in range(100):
        if sim.open_watches == 0:
            break
        await asyncio.sleep(0.02)
    assert sim.open_watches == 0


async def test_slow_readers_and_stuck_handlers_never_stop_publishing(
    sim: KubeSim, factory: InformerFactory
) -> None:
    """A reader iterating a snapshot across awaits and a handler stuck forever: the store
    keeps publishing (asserted on sequence numbers, not time), the reader's snapshot never
    changes under it, and the other subscriber keeps receiving."""
    sim.create_many("pods", (pod(f"bulk-{i}") for i in range(3000)), "default")
    pods = factory.informer("v1", "pods")
    stuck = asyncio.Event()
    pods.add_handler(on_add=lambda o: stuck.wait(), name="stuck")
    received: list[str] = []
    pods.add_handler(on_add=lambda o: received.append(o.name), name="healthy")
    await factory.wait_for_sync(timeout=30)
    snap = pods.snapshot()
    seq_before = snap.seq
    seen = 0
    writes = 0
    async for _obj in snap.iter_chunks(chunk=100):
        seen += 1
        if seen % 300 == 0:
            sim.create("pods", pod(f"during-{writes}"), "default")
            writes += 1
            await asyncio.sleep(0.01)
    assert seen == 3000 == len(snap)
    await pods.wait_for_rv(sim.resource_version, timeout=10)
    assert pods.snapshot().seq > seq_before, "the writer published while the reader iterated"
    assert len(pods.snapshot()) == 3000 + writes and len(snap) == 3000
    for _ in range(200):
        if sum(n.startswith("during-") for n in received) == writes:
            break
        await asyncio.sleep(0.02)
    assert sum(n.startswith("during-") for n in received) == writes
    stuck.set()


async def test_staleness_bound_makes_fresh_reads_wait(sim: KubeSim) -> None:
    """With staleness_bound, freshness-asking reads wait while the store lags the FIFO by
    more than the bound (here: the baseline store's writer is blocked by a reader)."""
    async with sim.api_client() as api:
        async with InformerFactory(api, staleness_bound=0.1, watch_options=FAST) as f:
            inf = f.informer("v1", "pods", store="locked")
            await f.wait_for_sync(timeout=10)
            async with inf.read():
                sim.create("pods", pod("behind"), "default")
                for _ in range(1000):  # the watcher receives it; the writer cannot apply it
                    if inf.statistics().fifo_depth and inf.staleness() > 0.1:
                        break
                    await asyncio.sleep(0.01)
                assert inf.staleness() > 0.1
                fresh = asyncio.create_task(inf.wait_fresh(timeout=10))
                await asyncio.sleep(0.1)
                assert not fresh.done(), "a fresh read must wait while the store lags"
            await fresh
            assert inf.staleness() <= 0.1
            async with inf.read() as view:
                assert view.get("default/behind") is not None
