"""Informers end to end over real HTTP against KubeSim: sync, reads, freshness, handlers,
statistics, the staleness bound and the store's steady state. Convergence under faults:
tests/kubesim/test_faultmix.py (seeded fault mixes); sharing and running informers:
test_factory.py."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import (
    InformerFactory,
    KubeObject,
    Metrics,
    ProcessSettings,
    WatchOptions,
    by_label,
)
from aioinformer._cache import informer as informer_module
from aioinformer._cache.deltas import Change, Delta, ObjectDelta, Replace
from aioinformer._cache.informer import Informer, Pipeline
from aioinformer._cache.pipeline import LoopHost, ThreadHost
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._harness.locked_informer import LockedFactory, LockedInformer
from aioinformer.testing import KubeSim, eventually
from tests.support import FakeClock, pod

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)


@pytest.fixture(params=["thread", "loop"])
async def factory(sim: KubeSim, request: pytest.FixtureRequest) -> AsyncIterator[InformerFactory]:
    """A factory whose informers run their pipelines on its pipeline thread, or on the
    test's loop (every test here runs both ways)."""
    async with sim.api_client() as api:
        async with InformerFactory(api, watch_options=FAST, pipeline=request.param) as f:
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


def sync_leftovers(prefix: str) -> int:
    """The Replaces and Changes still referenced that hold an object named ``prefix...``
    (other tests' may be alive in this process)."""
    gc.collect()
    found = 0
    for item in gc.get_objects():
        if type(item) is Replace:
            found += any(ours(obj, prefix) for obj in item.objects)
        elif type(item) is Change:
            found += ours(item.obj, prefix)
    return found


def ours(obj: object, prefix: str) -> bool:
    return isinstance(obj, KubeObject) and obj.name.startswith(prefix)


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_a_quiet_informer_keeps_nothing_of_its_sync_but_the_cache(
    sim: KubeSim, pipeline: Pipeline
) -> None:
    """With no batch after the sync (watches of the default length, no bookmark for a
    minute), neither the list's Replace nor the Changes made of it (one per object, built
    where a subscriber may come) stay alive: the writer lets each batch go once it is
    published, not when the next one comes."""
    for i in range(20):
        sim.create("pods", pod(f"quiet-{i}"), "default")
    async with sim.api_client() as api, InformerFactory(api, pipeline=pipeline) as factory:
        pods = factory.informer("v1", "pods")
        await factory.wait_for_sync(timeout=10)
        await eventually(
            lambda: sync_leftovers("quiet-") == 0,
            "the sync's Replace and its changes let go",
            interval=0.2,
        )
        assert pods.statistics().batches == 1  # (let go by the writer, not by a later batch)
        assert len(pods.snapshot()) == 20


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

    waiting = asyncio.create_task(pods.wait_until(lambda s: "default/awaited" in s, timeout=30))
    await eventually(lambda: len(pods._waiters) == 1, "wait_until to wait for a publish")
    sim.create("pods", pod("awaited"), "default")
    snap = await waiting
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
    await eventually(lambda: ("delete", "x") in seen, "the DELETED to reach the handler")
    assert seen[0] == ("add", "before")
    assert seen[1:] == [("add", "x"), ("update", "x"), ("update", "x"), ("delete", "x")]
    assert late == ["before"]


async def test_stats(sim: KubeSim, factory: InformerFactory) -> None:
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    sim.create("pods", pod("s"), "default")
    await pods.wait_for_rv(sim.resource_version, timeout=5)
    st = pods.statistics()
    assert st.has_synced and st.objects == 1 and st.resource_version == sim.resource_version
    assert st.fifo_depth == 0 and st.staleness == 0 and st.applied_total >= 2


async def test_fifo_peak_of_a_period_counts_what_the_pipeline_drained_unseen(
    sim: KubeSim, factory: InformerFactory
) -> None:
    """The peak is kept by the FIFO's puts: the write below went through the FIFO (depth
    1 at least) although the writer took it before anyone here could look at the depth."""
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    pods.reset_fifo_peak()
    assert pods.statistics().fifo_peak == 0
    await pods.wait_for_rv(sim.create("pods", pod("p"), "default")["metadata"]["resourceVersion"])
    st = pods.statistics()
    assert st.fifo_depth == 0 and st.fifo_peak >= 1
    assert pods.reset_fifo_peak() == st.fifo_peak
    assert pods.statistics().fifo_peak == 0


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
    seen = 0
    writes = 0
    async for _obj in snap.iter_chunks(chunk=100):
        seen += 1
        if seen % 300 == 0:
            before = pods.snapshot().seq
            made = sim.create("pods", pod(f"during-{writes}"), "default")
            writes += 1
            # the writer publishes this write while the reader is mid-scan
            await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=30)
            assert pods.snapshot().seq > before and len(snap) == 3000
    assert seen == 3000 == len(snap) and writes == 10
    assert len(pods.snapshot()) == 3000 + writes
    await eventually(
        lambda: sum(n.startswith("during-") for n in received) == writes,
        "the healthy subscriber to receive every write",
    )
    assert not stuck.is_set()
    stuck.set()


async def test_staleness_bound_makes_fresh_reads_wait(sim: KubeSim) -> None:
    """With staleness_bound, freshness-asking reads wait while the store lags the FIFO by
    more than the bound. Here the writer is held back by a reader of the harness's
    lock-based baseline (the same Informer, whose writer waits for its readers' lock). The
    informer's clock is a fake one, moved by the test: the lag is exact."""
    clock = FakeClock()
    received: list[Delta] = []
    async with sim.api_client() as api:
        async with LockedFactory(api, staleness_bound=0.1, watch_options=FAST, clock=clock) as f:
            inf = f.informer("v1", "pods")
            assert isinstance(inf, LockedInformer)
            inf.on_receive(received.extend)
            await f.wait_for_sync(timeout=30)
            async with inf.read():
                sim.create("pods", pod("behind"), "default")
                await eventually(
                    lambda: any(
                        isinstance(i, ObjectDelta) and i.obj.name == "behind" for i in received
                    ),
                    "the watcher to receive the write",
                )
                clock.advance(1.0)  # the write has waited 1 s: the writer cannot apply it
                assert inf.staleness() == 1.0 and inf.statistics().staleness == 1.0
                fresh = asyncio.create_task(inf.wait_fresh(timeout=30))
                await eventually(lambda: len(inf._waiters) == 1, "the fresh read to wait")
                assert not fresh.done(), "a fresh read must wait while the store lags"
            await fresh
            assert inf.staleness() == 0.0
            async with inf.read() as view:
                assert view.get("default/behind") is not None


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_the_steady_state_writes_in_place(sim: KubeSim, pipeline: Pipeline) -> None:
    """Nobody holding a snapshot, every batch of the steady state goes in place, with a
    handler subscribed and metrics reading the informer's statistics; while a reader
    holds the snapshots every batch copies, and once it lets go they go in place again.
    On the caller's loop the writer writes the current snapshot in place, so holding the
    latest one is enough to make it copy; on the pipeline thread it writes the retired
    one (readers of other threads may take the current one at any moment), so it copies
    while a reader holds the last two."""
    metrics = Metrics()
    handled: list[str] = []
    async with sim.api_client() as api:
        async with InformerFactory(api, "default", watch_options=FAST, pipeline=pipeline) as f:
            pods = f.informer("v1", "pods")
            metrics.add_informer_source(lambda: [pods.statistics()])
            pods.add_handler(
                on_add=lambda o: handled.append(o.name),
                on_update=lambda old, new: handled.append(new.name),
            )
            await f.wait_for_sync(timeout=30)

            async def write(name: str) -> None:
                rv = sim.create("pods", pod(name), "default")["metadata"]["resourceVersion"]
                await pods.wait_fresh(rv, timeout=30)
                assert b'aioinformer_informer_objects{informer="pods[default]"}' in metrics.render()

            await write("warm-up")
            start = pods.statistics()
            for i in range(10):
                await write(f"steady-{i}")
            steady = pods.statistics()
            assert steady.batches - start.batches >= 10
            assert steady.in_place_batches - start.in_place_batches == (
                steady.batches - start.batches
            ), "every batch in place while nobody holds a snapshot"

            held = [pods.snapshot()]  # a reader holding the latest snapshot(s), always
            keep = 1 if pipeline == "loop" else 2
            await write("held-start")
            held = [*held, pods.snapshot()][-keep:]
            steady = pods.statistics()
            for i in range(5):
                await write(f"held-{i}")
                assert f"default/held-{i}" not in held[-1]
                held = [*held, pods.snapshot()][-keep:]
            holding = pods.statistics()
            assert holding.batches - steady.batches >= 5
            assert holding.in_place_batches == steady.in_place_batches, "each batch copied"
            del held

            for i in range(5):
                await write(f"again-{i}")
            after = pods.statistics()
            assert after.in_place_batches - holding.in_place_batches == (
                after.batches - holding.batches
            )
            await eventually(lambda: len(handled) == 22, "the handler to see every pod")


async def test_an_injected_clock_does_not_time_the_watches(sim: KubeSim) -> None:
    """The informer's clock stamps deltas and measures staleness; how long a watch lasted is
    the event loop's business. A clock that never moves must not make every watch the
    server ends at its timeout look like a very short one (an error, then a backoff)."""
    clock = FakeClock()
    async with sim.api_client() as api:
        async with InformerFactory(api, watch_options=FAST, clock=clock) as f:
            inf = f.informer("v1", "pods")
            await f.wait_for_sync(timeout=30)
            await eventually(
                lambda: inf.statistics().watch_restarts >= 1,
                "the server to end a watch at its timeout and the informer to resume it",
                timeout=30,
            )
            stats = inf.statistics()
            assert stats.last_error == "" and stats.stream_errors == 0, stats.last_error


@pytest.mark.parametrize("how", ["run", "async with"])
@pytest.mark.parametrize("host", ["thread", "loop"])
async def test_run_by_hand_add_an_index_while_it_runs_and_stop(
    sim: KubeSim, host: str, how: str
) -> None:
    """An informer run by hand on either host, by ``await informer.run()`` in a task or by
    ``async with informer:`` (a Service): an index added while it runs is built where its
    writer runs; cancelling ``run`` (leaving the block) ends the pipeline, watcher
    included, before it returns; an informer runs once (a second run is refused, during
    the first or after it)."""
    sim.create("pods", pod("a", app="web"), "default")
    async with sim.api_client() as api:
        made = ThreadHost("by-hand") if host == "thread" else LoopHost()
        inf = Informer(ListWatch(api, "v1", "pods"), name="pods", host=made, watch_options=FAST)

        async def use() -> None:
            await inf.wait_for_sync(timeout=30)
            await inf.add_indexer("app", by_label("app"))
            assert [o.name for o in inf.snapshot().by_index("app", "web")] == ["a"]
            with pytest.raises(ConfigError, match="runs once"):
                await inf.run()

        try:
            if how == "async with":
                async with inf as entered:
                    assert entered is inf
                    await use()
            else:
                task = asyncio.create_task(inf.run())
                try:
                    await use()
                finally:
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task
            assert inf._watcher._done and inf._fifo.closed
        finally:
            await made.aclose()
        with pytest.raises(ConfigError, match="runs once"):
            await inf.run()
        with pytest.raises(ClosedError):
            await inf.wait_fresh(sim.resource_version + 1, timeout=30)


async def test_a_pipeline_thread_needs_a_lister_watcher_it_can_move(api: Any) -> None:
    class Fixed:
        resource = "pods"

    with pytest.raises(ConfigError, match="needs a lister-watcher with using"):
        Informer(Fixed(), name="pods", host=ThreadHost("refused"))  # type: ignore[arg-type]


@pytest.mark.parametrize("release", [True, False])
async def test_the_heap_is_trimmed_after_a_sync_only_if_the_process_settings_say_so(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch, release: bool
) -> None:
    trims: list[str] = []
    monkeypatch.setattr(informer_module, "release_free_memory", lambda: trims.append("trim"))
    settings = ProcessSettings(release_memory=release)
    async with sim.api_client() as api:
        async with InformerFactory(api, watch_options=FAST, process=settings) as f:
            pods = f.informer("v1", "pods")
            await f.wait_for_sync(timeout=30)
            made = sim.create("pods", pod("after-the-sync"), "default")
            await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=30)
    assert trims == (["trim"] if release else [])  # the sync's, not the later write's


async def test_waiting_for_the_sync_of_an_informer_that_stops_first_raises(
    sim: KubeSim, api: Any
) -> None:
    """A wait for the sync of an informer that ends before it synced (a list refused for
    ever: a resource that is not served) raises ClosedError instead of waiting for ever."""
    inf = Informer(ListWatch(api, "v1", "nosuchthings"), name="nosuchthings")
    task = asyncio.create_task(inf.run())
    waiting = asyncio.create_task(inf.wait_for_sync())
    await eventually(lambda: inf.statistics().errors_by_code, "the list to be refused")
    task.cancel()
    with pytest.raises(ClosedError, match="stopped while waiting for its initial sync"):
        await waiting
    await asyncio.gather(task, return_exceptions=True)


async def test_a_subscriber_joining_while_an_unsubscribed_batch_is_applied_gets_its_changes(
    sim: KubeSim,
) -> None:
    """On the pipeline thread a batch nobody subscribes to is applied without building its
    changes. A subscriber that joins while it is applied (after the writer looked for
    subscribers, before the publish) starts from the state before it, so it still gets
    them, worked out at delivery from that state, each once; the next batch's are built
    for it as they are applied."""
    inside, gate = threading.Event(), threading.Event()

    def by_name(obj: KubeObject) -> list[str]:
        if obj.name == "held":  # (on the pipeline thread, in the batch's apply)
            inside.set()
            assert gate.wait(30), "the test never let the writer go on"
        return [obj.name]

    for i in range(3):
        sim.create("pods", pod(f"a{i}"), "default")
    async with (
        sim.api_client() as api,
        InformerFactory(api, watch_options=FAST, pipeline="thread") as factory,
    ):
        pods = factory.informer("v1", "pods", indexers={"name": by_name})
        await factory.wait_for_sync(timeout=10)
        built = spy_changes_of(pods)
        sim.create("pods", pod("held"), "default")
        assert await asyncio.to_thread(inside.wait, 30), "the writer never applied 'held'"
        seen: list[tuple[str, str]] = []
        sub = pods.add_handler(
            on_add=lambda o: seen.append(("add", o.name)),
            on_update=lambda old, new: seen.append(("update", new.name)),
            on_delete=lambda o: seen.append(("delete", o.name)),
        )
        gate.set()
        await pods.wait_for_rv(sim.resource_version, timeout=10)
        await eventually(lambda: ("add", "held") in seen, "the late batch's ADDED to arrive")
        sim.patch("pods", "a1", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: ("update", "a1") in seen, "the next batch's UPDATED")
        await sub.wait_for_sync(timeout=5)
        assert sorted(seen[:3]) == [("add", "a0"), ("add", "a1"), ("add", "a2")]  # its start
        assert seen[3:] == [("add", "held"), ("update", "a1")]
        assert built == [1]  # worked out once, for the batch applied unsubscribed


def spy_changes_of(informer: Informer) -> list[int]:
    """How many times the informer's writer worked a batch's changes out again (one
    count per call; each entry the number of changes)."""
    calls: list[int] = []
    writer = informer._writer
    real = writer.changes_of

    def counting(base: Any, batch: Any) -> list[Change]:
        changes = real(base, batch)
        calls.append(len(changes))
        return changes

    writer.changes_of = counting  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_a_sync_nobody_subscribes_to_builds_no_change(
    sim: KubeSim, pipeline: Pipeline
) -> None:
    """An informer without subscribers builds no Change for its sync nor for the writes
    after it (on the pipeline thread none is worked out later either); a subscriber from
    before the sync gets every object as ADDED."""
    for i in range(50):
        sim.create("pods", pod(f"n{i}"), "default")
    sim.create("configmaps", {"metadata": {"name": "c"}}, "default")
    async with sim.api_client() as api:
        factory = InformerFactory(api, watch_options=FAST, pipeline=pipeline)
        quiet, heard = factory.informer("v1", "pods"), factory.informer("v1", "configmaps")
        built = spy_changes_of(quiet)
        asked: list[bool] = []  # what each apply was asked for: changes built or not
        apply = quiet._writer.apply

        def spy(batch: Any, *, changes: bool = True) -> list[Change]:
            asked.append(changes)
            return apply(batch, changes=changes)

        quiet._writer.apply = spy  # type: ignore[method-assign]
        added: list[str] = []
        heard.add_handler(on_add=lambda o: added.append(o.name))
        async with factory:
            await factory.wait_for_sync(timeout=10)
            made = sim.create("pods", pod("n-after"), "default")
            await quiet.wait_for_rv(made["metadata"]["resourceVersion"], timeout=10)
            assert quiet.statistics().objects == 51
            assert len(asked) >= 2 and not any(asked) and built == []
            await eventually(lambda: added == ["c"], "the handler's ADDED")
