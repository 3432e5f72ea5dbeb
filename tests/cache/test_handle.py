"""Dynamic informers over real HTTP against KubeSim: ``factory.acquire()`` starts an
informer while the factory runs, holders share it, the last release stops it (the server
sees its watch close) and the factory forgets it (its informers, its wait_for_sync, its
memory); handlers go with their handle; waiters get a ClosedError, not a hang; a release
before the factory runs, during the informer's initial sync, while the factory stops and
after it ended all end cleanly."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

from aioinformer import (
    ClosedError,
    ConfigError,
    InformerFactory,
    InformerHandle,
    KubeObject,
)
from aioinformer.testing import KubeSim, eventually
from tests.cache.test_factory import informer_tasks
from tests.support import configmap, watch_options

FAST = watch_options()


def factory(api: Any) -> InformerFactory:
    return InformerFactory(api, namespace="default", watch_options=FAST)


async def test_acquire_while_running_starts_it_and_the_last_release_closes_its_watch(
    sim: KubeSim, api: Any
) -> None:
    sim.create("configmaps", configmap("before"), "default")
    async with factory(api) as f:
        pods = f.informer("v1", "pods")  # pinned: runs throughout
        await f.wait_for_sync(timeout=10)
        await eventually(lambda: sim.open_watches == 1, "the pods watch")
        handle = f.acquire("v1", "configmaps")
        inf = handle.informer
        assert f.informers == [pods, inf] and f.holders(inf) == 1 and not f.is_pinned(inf)
        await inf.wait_for_sync(timeout=10)
        assert "default/before" in inf.snapshot()
        await eventually(lambda: sim.open_watches == 2, "the configmaps watch")
        await handle.release()
        assert inf.closed and handle.released
        assert f.informers == [pods] and f.holders(inf) == 0
        await eventually(lambda: sim.open_watches == 1, "the server to see its watch close")
        assert not pods.closed  # the others go on
        await f.wait_for_sync(timeout=10)  # the current set: the released one is not in it
        ref = weakref.ref(inf)
        del inf, handle
        # (the pipeline thread's loop lets go of the ended task on its next iterations)
        await eventually(lambda: gc.collect() >= 0 and ref() is None, "the informer freed")


async def test_holders_share_one_informer_and_only_the_last_release_stops_it(
    sim: KubeSim, api: Any
) -> None:
    async with factory(api) as f:
        first = f.acquire("v1", "configmaps")
        second = f.acquire("v1", "configmaps")
        inf = first.informer
        assert second.informer is inf and f.holders(inf) == 2
        await inf.wait_for_sync(timeout=10)
        await first.release()
        await first.release()  # idempotent: counts once
        assert f.holders(inf) == 1 and not inf.closed and f.informers == [inf]
        sim.create("configmaps", configmap("after-one-release"), "default")
        await inf.wait_until(lambda s: "default/after-one-release" in s, timeout=10)
        await eventually(lambda: sim.open_watches == 1, "the shared watch")
        await second.release()
        assert inf.closed and f.informers == []
        await eventually(lambda: sim.open_watches == 0, "the server to see its watch close")


async def test_acquire_after_the_last_release_starts_a_fresh_informer(
    sim: KubeSim, api: Any
) -> None:
    async with factory(api) as f:
        async with f.acquire("v1", "configmaps") as handle:
            old = handle.informer
            await old.wait_for_sync(timeout=10)
        assert old.closed and handle.released  # (async with released it)
        sim.create("configmaps", configmap("while-released"), "default")
        again = f.acquire("v1", "configmaps")
        assert again.informer is not old and f.informers == [again.informer]
        await again.informer.wait_for_sync(timeout=10)
        assert "default/while-released" in again.informer.snapshot()
        assert "default/while-released" not in old.snapshot()  # the old one follows no more
        await again.release()


async def test_pinning_keeps_an_informer_whatever_its_holders_do(api: Any) -> None:
    async with factory(api) as f:
        handle = f.acquire("v1", "configmaps")
        pinned = f.informer("v1", "configmaps")
        assert pinned is handle.informer and f.is_pinned(pinned)
        await handle.release()
        assert not pinned.closed and f.informers == [pinned] and f.holders(pinned) == 0
        later = f.acquire("v1", "configmaps")
        assert later.informer is pinned
        await later.release()
        assert not pinned.closed


async def test_handlers_go_with_their_handle(sim: KubeSim, api: Any) -> None:
    """A released user's handlers and streams end; another holder's, and the handlers
    added on the informer itself, keep receiving."""
    seen: dict[str, list[str]] = {"first": [], "second": [], "direct": []}

    def recorder(who: str) -> Any:
        return lambda obj: seen[who].append(obj.name)

    async with factory(api) as f:
        first, second = f.acquire("v1", "configmaps"), f.acquire("v1", "configmaps")
        inf = first.informer
        sub_first = first.add_handler(on_add=recorder("first"))
        stream = first.changes()
        sub_second = second.add_handler(on_add=recorder("second"))
        sub_direct = inf.add_handler(on_add=recorder("direct"))
        await inf.wait_for_sync(timeout=10)
        sim.create("configmaps", configmap("one"), "default")
        await eventually(lambda: all(v == ["one"] for v in seen.values()), "every handler")
        await first.release()
        assert sub_first.closed and stream.subscription.closed and not sub_second.closed
        assert [c async for c in stream] == [], "its backlog dropped, the stream ended"
        sim.create("configmaps", configmap("two"), "default")
        await eventually(lambda: seen["second"] == seen["direct"] == ["one", "two"], "the rest")
        assert seen["first"] == ["one"]
        with pytest.raises(ClosedError, match="released"):
            first.add_handler(on_add=recorder("first"))
        with pytest.raises(ClosedError, match="released"):
            first.changes()
        await second.release()
        assert sub_second.closed and sub_direct.closed  # the informer stopped: all end


async def test_a_stream_through_a_released_handle_ends(sim: KubeSim, api: Any) -> None:
    async with factory(api) as f:
        sim.create("configmaps", configmap("one"), "default")
        handle = f.acquire("v1", "configmaps")
        await handle.informer.wait_for_sync(timeout=10)
        stream = handle.changes()
        names = [(await anext(stream)).obj.name]
        await handle.release()
        names += [c.obj.name async for c in stream]  # ends, rather than waiting forever
        assert names == ["one"]


async def test_waiters_on_a_released_informer_get_a_closed_error(sim: KubeSim, api: Any) -> None:
    """Reads blocked on the informer when it stops raise ClosedError at once, as do those
    started after; what its last state satisfies still returns; snapshot() keeps the last
    state."""
    sim.create("configmaps", configmap("kept"), "default")
    async with factory(api) as f:
        handle = f.acquire("v1", "configmaps")
        inf = handle.informer
        await inf.wait_for_sync(timeout=10)
        far = inf.snapshot().resource_version + 10**6
        waits = [
            asyncio.create_task(inf.wait_fresh(far)),
            asyncio.create_task(inf.wait_for_rv(far)),
            asyncio.create_task(inf.wait_until(lambda s: "default/never" in s)),
            asyncio.create_task(inf.wait_gone("default/kept")),
            asyncio.create_task(inf.query("namespace", "default", min_rv=far)),
        ]
        await asyncio.sleep(0)  # (each is waiting now)
        assert not any(w.done() for w in waits)
        await handle.release()
        for wait in waits:
            with pytest.raises(ClosedError, match="stopped while waiting"):
                await wait
        with pytest.raises(ClosedError):
            await inf.wait_fresh(far)
        await inf.wait_for_sync()  # satisfied by its last state: returns
        assert "default/kept" in inf.snapshot()


async def test_release_during_the_initial_sync(sim: KubeSim, api: Any) -> None:
    """An informer whose list keeps failing (a resource the server does not serve) never
    syncs: releasing it ends its retries and its waiters, and the factory's wait_for_sync,
    waiting for it meanwhile, returns instead of failing."""
    async with factory(api) as f:
        f.informer("v1", "configmaps")
        handle = f.acquire("example.invalid/v1", "widgets")
        inf = handle.informer
        own_wait = asyncio.create_task(inf.wait_for_sync())
        factory_wait = asyncio.create_task(f.wait_for_sync())
        await eventually(lambda: inf.statistics().errors_by_code.get(404), "a failed list")
        assert not own_wait.done() and not factory_wait.done()
        await handle.release()
        with pytest.raises(ClosedError, match="its initial sync"):
            await own_wait
        await factory_wait  # returns: every informer the factory still runs has synced
        requests = inf.statistics().requests
        assert f.informers and inf not in f.informers
    assert inf.statistics().requests == requests, "no request after its release"


async def test_wait_for_sync_waits_for_an_informer_acquired_meanwhile(
    sim: KubeSim, api: Any
) -> None:
    async with factory(api) as f:
        blocked = f.acquire("example.invalid/v1", "widgets")  # never syncs
        waiting = asyncio.create_task(f.wait_for_sync())
        late = f.acquire("v1", "configmaps")
        await blocked.release()
        await waiting
        assert late.informer.has_synced, "the informer acquired meanwhile was waited for"
        await late.release()


async def test_release_before_the_factory_runs(sim: KubeSim, api: Any) -> None:
    f = factory(api)
    handle = f.acquire("v1", "configmaps")
    kept = f.acquire("v1", "secrets")
    inf = handle.informer
    waiting = asyncio.create_task(inf.wait_for_sync())
    await asyncio.sleep(0)
    await handle.release()
    with pytest.raises(ClosedError):
        await waiting
    assert inf.closed and f.informers == [kept.informer]
    async with f:
        await f.wait_for_sync(timeout=10)
        await eventually(lambda: sim.open_watches == 1, "only the secrets watch")
        assert inf.statistics().requests == 0, "the released informer never ran"
    await kept.release()  # after the factory ended: nothing left to stop, no error
    assert f.informers == []


async def test_release_while_the_factory_stops(sim: KubeSim, api: Any) -> None:
    before = asyncio.all_tasks()
    f = factory(api)
    runner = asyncio.create_task(f.run())
    handles = [f.acquire("v1", "configmaps"), f.acquire("v1", "secrets")]
    await f.wait_for_sync(timeout=10)
    runner.cancel()
    await asyncio.gather(*(h.release() for h in handles))  # while it stops
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert all(h.informer.closed for h in handles) and f.informers == []
    assert informer_tasks(before) == []
    await eventually(lambda: sim.open_watches == 0, "the server to see both watches close")
    with pytest.raises(ConfigError, match="closed"):
        f.acquire("v1", "pods")


async def test_a_handle_is_typed_and_says_what_it_holds(api: Any) -> None:
    async with factory(api) as f:
        handle = f.acquire("v1", "configmaps")
        assert isinstance(handle, InformerHandle)
        assert repr(handle) == "<InformerHandle configmaps[default] held>"
        got: list[KubeObject] = []
        handle.add_handler(on_add=got.append, name="typed")
        await handle.release()
        assert repr(handle) == "<InformerHandle configmaps[default] released>"
