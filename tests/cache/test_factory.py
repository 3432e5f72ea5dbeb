"""InformerFactory over real HTTP against KubeSim: one shared informer per resource and
options, indexers merged, the namespace default, store kinds checked at once, informers
started whenever they are created, ``wait_for_sync`` failing with names and causes, a stop
that leaves nothing behind, and the two ways of giving watch options."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import ConfigError, FreshnessTimeout, InformerFactory, WatchOptions, by_label
from aioinformer._cache.factory import ALL_NAMESPACES, watch_options_from
from aioinformer._core.backoff import Backoff
from aioinformer.testing import KubeSim
from tests.support import configmap, eventually, pod

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)
PODSETS = "example.aioinformer.dev/v1"


@pytest.fixture
async def factory(api: Any) -> AsyncIterator[InformerFactory]:
    async with InformerFactory(api, watch_options=FAST) as f:
        yield f


def informer_tasks(before: set[asyncio.Task[Any]]) -> list[Any]:
    """Tasks started since ``before`` that run aioinformer's own code."""
    return [
        t
        for t in asyncio.all_tasks() - before
        if not t.done()
        and t is not asyncio.current_task()
        and "aioinformer/_" in t.get_coro().cr_code.co_filename  # type: ignore[union-attr]
    ]


# -- sharing -----------------------------------------------------------------------------------


async def test_the_same_resource_and_options_share_one_informer(api: Any) -> None:
    f = InformerFactory(api, watch_options=FAST)
    pods = f.informer("v1", "pods")
    assert f.informer("v1", "pods") is pods
    others = [
        f.informer("v1", "pods", label_selector="app=web"),
        f.informer("v1", "pods", field_selector="spec.nodeName=n1"),
        f.informer("v1", "pods", namespace="default"),
        f.informer("v1", "pods", metadata_only=True),
        f.informer("v1", "pods", store="locked"),
        f.informer("v1", "configmaps"),
    ]
    assert len({id(i) for i in [pods, *others]}) == 7
    assert f.informers == [pods, *others]
    await f.stop()


async def test_indexers_of_a_shared_informer_are_merged_before_it_runs(
    sim: KubeSim, api: Any
) -> None:
    sim.create("pods", pod("a", app="web", tier="db"), "default")
    f = InformerFactory(api, watch_options=FAST)
    first = f.informer("v1", "pods", indexers={"app": by_label("app")})
    second = f.informer("v1", "pods", indexers={"tier": by_label("tier")})
    assert first is second and {"app", "tier"} <= set(first.indexers)
    async with f:
        await f.wait_for_sync(timeout=30)
        snap = first.snapshot()
        assert [o.name for o in snap.by_index("app", "web")] == ["a"]
        assert [o.name for o in snap.by_index("tier", "db")] == ["a"]
        assert f.informer("v1", "pods", indexers={"app": by_label("other")}) is first  # known
        with pytest.raises(ConfigError, match=r"await informer\.add_indexer"):
            f.informer("v1", "pods", indexers={"late": by_label("late")})


# -- namespaces and store kinds ------------------------------------------------------------------


async def test_informers_default_to_the_factory_namespace(sim: KubeSim, api: Any) -> None:
    sim.create("namespaces", {"metadata": {"name": "team"}})
    sim.create("configmaps", configmap("mine"), "team")
    sim.create("configmaps", configmap("theirs"), "default")
    async with InformerFactory(api, "team", watch_options=FAST) as f:
        ours = f.informer("v1", "configmaps")
        everywhere = f.informer("v1", "configmaps", namespace=ALL_NAMESPACES)
        default = f.informer("v1", "configmaps", namespace="default")
        await f.wait_for_sync(timeout=30)
        assert (ours.namespace, everywhere.namespace, default.namespace) == (
            "team",
            None,
            "default",
        )
        assert (ours.name, everywhere.name) == ("configmaps[team]", "configmaps")
        assert [o.key for o in ours.snapshot().list()] == ["team/mine"]
        assert [o.key for o in default.snapshot().list()] == ["default/theirs"]
        assert {"team/mine", "default/theirs"} <= set(everywhere.snapshot().keys())


async def test_a_factory_without_a_namespace_watches_all_of_them(api: Any) -> None:
    f = InformerFactory(api)
    assert f.informer("v1", "pods").namespace is None
    assert f.informer("apps/v1", "statefulsets").name == "statefulsets.apps"
    await f.stop()


async def test_unknown_store_kinds_and_resources_are_refused_at_once(api: Any) -> None:
    with pytest.raises(ConfigError, match="store must be one of"):
        InformerFactory(api, store="fast")  # type: ignore[arg-type]
    f = InformerFactory(api, store="locked")
    assert f.informer("v1", "pods").store_kind == "locked"
    assert f.informer("v1", "pods", store="snapshot").store_kind == "snapshot"
    with pytest.raises(ConfigError, match="store must be one of"):
        f.informer("v1", "pods", store="fast")  # type: ignore[arg-type]
    for gv, plural in (("", "pods"), ("v1", ""), ("v1", "pods/status")):
        with pytest.raises(ConfigError, match="bad resource"):
            f.informer(gv, plural)
    await f.stop()


# -- running ------------------------------------------------------------------------------------


async def test_informers_created_after_start_are_started(
    sim: KubeSim, factory: InformerFactory
) -> None:
    sim.create("configmaps", configmap("late"), "default")
    await factory.wait_for_sync(timeout=30)  # nothing to wait for yet
    late = factory.informer("v1", "configmaps")
    await factory.wait_for_sync(timeout=30)
    assert late.has_synced and "default/late" in late.snapshot()


async def test_wait_for_sync_timeout_names_the_informer_and_its_last_error(
    sim: KubeSim, factory: InformerFactory
) -> None:
    pods = factory.informer("v1", "pods")
    podsets = factory.informer(PODSETS, "podsets")  # no CRD: the list gets 404
    await pods.wait_for_sync(timeout=30)
    await eventually(lambda: podsets.statistics().last_error != "", "the first failed list")
    with pytest.raises(FreshnessTimeout) as info:
        await factory.wait_for_sync(timeout=0.01)
    message = str(info.value)
    assert message.startswith("not synced after 0.01s: podsets.example.aioinformer.dev (")
    assert "HTTP 404" in message and "is the CRD installed?" in message
    assert ";" not in message  # one informer named: the synced one is not
    with pytest.raises(FreshnessTimeout, match=r"informer podsets\.example\.aioinformer\.dev"):
        await podsets.wait_for_sync(timeout=0.01)


async def test_stop_is_idempotent_and_leaves_no_task(api: Any) -> None:
    before = asyncio.all_tasks()
    f = InformerFactory(api, watch_options=FAST)
    await f.start()
    f.informer("v1", "pods")
    f.informer("v1", "configmaps")
    await f.wait_for_sync(timeout=30)
    assert informer_tasks(before), "the informers run in tasks of their own"
    await f.stop()
    assert informer_tasks(before) == []
    await f.stop()  # harmless
    with pytest.raises(ConfigError, match="closed"):
        f.informer("v1", "secrets")
    with pytest.raises(ConfigError, match="closed"):
        await f.start()


async def test_cancelling_the_task_that_runs_it_stops_every_informer(
    sim: KubeSim, api: Any
) -> None:
    before = asyncio.all_tasks()
    synced = asyncio.Event()

    async def runner() -> None:
        async with InformerFactory(api, watch_options=FAST) as f:
            f.informer("v1", "pods")
            f.informer("v1", "configmaps")
            await f.wait_for_sync(timeout=30)
            synced.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(runner())
    await synced.wait()
    await eventually(lambda: sim.open_watches == 2, "both watches")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert informer_tasks(before) == []
    await eventually(lambda: sim.open_watches == 0, "the server to see both watches close")


# -- watch options -------------------------------------------------------------------------------


async def test_watch_options_reach_every_informer(api: Any) -> None:
    options = WatchOptions(page_size=7, idle_timeout=12.0)
    f = InformerFactory(api, watch_options=options)
    assert f.watch_options is options
    watcher = f.informer("v1", "pods")._watcher
    assert (watcher.page_size, watcher.idle_timeout) == (7, 12.0)
    assert InformerFactory(api).watch_options == WatchOptions()
    await f.stop()


async def test_the_deprecated_watcher_options_mapping(api: Any) -> None:
    with pytest.warns(DeprecationWarning, match="watcher_options= is deprecated"):
        f = InformerFactory(api, watcher_options={"page_size": 3, "backoff_initial": 0.5})
    assert f.watch_options == WatchOptions(page_size=3, backoff_initial=0.5)
    with pytest.raises(ConfigError, match="not both"):
        InformerFactory(api, watch_options=WatchOptions(), watcher_options={"page_size": 3})
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ConfigError, match=r"watch options: .*pagesize"),
    ):
        InformerFactory(api, watcher_options={"pagesize": 3})
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match="page_size"):
        InformerFactory(api, watcher_options={"page_size": -1})  # checked as WatchOptions


def test_watch_options_from_a_mapping_with_a_backoff() -> None:
    backoff = Backoff(initial=0.1, maximum=2.0, reset_after=5.0, jitter=0.0)
    got = watch_options_from({"backoff": backoff, "idle_timeout": 9.0})
    assert got == WatchOptions(
        idle_timeout=9.0,
        backoff_initial=0.1,
        backoff_maximum=2.0,
        backoff_reset_after=5.0,
        backoff_jitter=0.0,
    )
    assert watch_options_from(None) == WatchOptions()
    assert watch_options_from(got) is got
