"""InformerFactory over real HTTP against KubeSim. It is a Service: ``async with`` or
``await factory.run()`` runs the informers created before and while it runs, and its end
stops every one of them and its pipeline thread (and its resolver threads). One pipeline
thread and one HTTP session serve all its informers. One informer per InformerSpec (a transform made anew per call is
the same one; a differing one makes a second informer, with a WARNING), indexers merged
and checked when registered, the namespace default, ``wait_for_sync`` failing with names
and causes, an informer that dies logged while the others go on, and the watch options."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aioinformer import (
    ClosedError,
    ConfigError,
    FreshnessTimeout,
    InformerFactory,
    InformerSpec,
    KubeObject,
    WatchOptions,
    by_field,
    by_label,
    drop_managed_fields,
)
from aioinformer._cache.factory import ALL_NAMESPACES
from aioinformer._cache.informer import Informer
from aioinformer._cache.pipeline import (
    RESOLVER_PREFIX,
    RESOLVER_THREADS,
    THREAD_PREFIX,
    LoopHost,
    ThreadHost,
)
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import RestClient
from aioinformer.testing import KubeSim, eventually
from tests.support import configmap, pod, watch_options

FAST = watch_options()
PODSETS = "example.aioinformer.dev/v1"


def informer_tasks(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Tasks started since ``before`` that run aioinformer's own code."""
    return [
        t
        for t in asyncio.all_tasks() - before
        if not t.done()
        and t is not asyncio.current_task()
        and "aioinformer/_" in t.get_coro().cr_code.co_filename  # type: ignore[union-attr]
    ]


def pipeline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def resolver_prefix(factory: InformerFactory) -> str:
    """How the names of the factory's resolver threads start."""
    return f"{RESOLVER_PREFIX}{id(factory):x}"


@pytest.fixture
def clones(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RestClient]]:
    """Every RestClient a pipeline thread clones (one HTTP session each) in this test."""
    made: list[RestClient] = []
    clone = RestClient.clone

    def counting_clone(self: RestClient) -> RestClient:
        made.append(clone(self))
        return made[-1]

    monkeypatch.setattr(RestClient, "clone", counting_clone)
    yield made


# -- running: a Service ------------------------------------------------------------------------


async def test_one_pipeline_thread_and_one_http_session_serve_every_informer(
    sim: KubeSim, api: Any, clones: list[RestClient]
) -> None:
    resources = [
        ("v1", "pods"),
        ("v1", "configmaps"),
        ("v1", "secrets"),
        ("apps/v1", "deployments"),
    ]
    before = {t.ident for t in pipeline_threads()}
    sim.create("configmaps", configmap("early"), "default")
    f = InformerFactory(api, watch_options=FAST)
    early = [f.informer(gv, plural) for gv, plural in resources[:2]]  # before it runs
    assert {t.ident for t in pipeline_threads()} == before  # the thread starts with them
    async with f:
        late = [f.informer(gv, plural) for gv, plural in resources[2:]]  # while it runs
        await f.wait_for_sync(timeout=30)
        assert all(inf.has_synced for inf in early + late)
        assert "default/early" in early[1].snapshot()
        threads = [t for t in pipeline_threads() if t.ident not in before]
        assert isinstance(f.host, ThreadHost) and threads == [f.host.thread]
        assert threads[0].name == f.host.name == f"{THREAD_PREFIX}{id(f):x}"
        resolvers = [t for t in threading.enumerate() if t.name.startswith(resolver_prefix(f))]
        assert len(resolvers) <= RESOLVER_THREADS  # (made as host names are looked up)
        assert len(clones) == 1, "one HTTP session for every informer of the factory"
        assert {id(inf._watcher._lw.rest) for inf in early + late} == {id(clones[0])}  # type: ignore[attr-defined]
        await eventually(lambda: sim.open_watches == 4, "the four watches")
        assert {inf.pipeline for inf in early + late} == {"thread"}
    assert not threads[0].is_alive() and f.host.ended
    assert not [t for t in resolvers if t.is_alive()]
    assert clones[0].api_client.rest_client.pool_manager.closed
    assert not api.rest_client.pool_manager.closed  # the caller's client is the caller's
    await eventually(lambda: sim.open_watches == 0, "the server to see every watch close")


async def test_on_the_callers_loop_there_is_no_thread_and_no_clone(
    sim: KubeSim, api: Any, clones: list[RestClient]
) -> None:
    before = {t.ident for t in pipeline_threads()}
    async with InformerFactory(api, watch_options=FAST, pipeline="loop") as f:
        pods = f.informer("v1", "pods")
        await f.wait_for_sync(timeout=30)
        assert isinstance(f.host, LoopHost) and f.pipeline == pods.pipeline == "loop"
        assert pods._watcher._lw.rest is f.rest  # type: ignore[attr-defined]
    assert clones == [] and {t.ident for t in pipeline_threads()} <= before
    with pytest.raises(ConfigError, match="pipeline must be one of"):
        InformerFactory(api, pipeline="process")  # type: ignore[arg-type]


async def test_exit_stops_every_informer_and_the_thread_and_the_factory_runs_once(
    sim: KubeSim, api: Any
) -> None:
    before = asyncio.all_tasks()
    f = InformerFactory(api, watch_options=FAST)
    async with f:
        f.informer("v1", "pods")
        f.informer("v1", "configmaps")
        await f.wait_for_sync(timeout=30)
        assert informer_tasks(before), "the informers run in tasks of their own"
        with pytest.raises(ConfigError, match="already running"):
            await f.run()  # a second run while it runs
    assert informer_tasks(before) == []
    assert isinstance(f.host, ThreadHost) and f.host.ended
    assert f.host.thread is not None and not f.host.thread.is_alive()
    await eventually(lambda: sim.open_watches == 0, "the server to see both watches close")
    with pytest.raises(ConfigError, match="closed"):
        f.informer("v1", "secrets")
    with pytest.raises(ConfigError, match="has run already"):
        await f.run()


async def test_cancelling_the_task_that_runs_it_stops_every_informer(
    sim: KubeSim, api: Any
) -> None:
    """``await factory.run()``, the other way of running it: cancellation is its stop."""
    before = asyncio.all_tasks()
    f = InformerFactory(api, watch_options=FAST)
    pods, configmaps = f.informer("v1", "pods"), f.informer("v1", "configmaps")
    runner = asyncio.create_task(f.run())
    await f.wait_for_sync(timeout=30)
    await eventually(lambda: sim.open_watches == 2, "both watches")
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert informer_tasks(before) == []
    assert isinstance(f.host, ThreadHost) and f.host.ended
    assert pods._closed and configmaps._closed
    await eventually(lambda: sim.open_watches == 0, "the server to see both watches close")


async def test_an_informer_that_dies_is_logged_and_the_others_go_on(
    sim: KubeSim, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that fails even the harmless probe is broken: that informer stops, the
    factory logs it at ERROR when it happens, and its other informers keep following."""

    class BrokenWriter:
        def __init__(self, writer: Any) -> None:
            self._writer = writer

        def apply(self, batch: Any, *, changes: bool = True) -> Any:
            raise RuntimeError("the store is broken")

        def __getattr__(self, name: str) -> Any:
            return getattr(self._writer, name)

    async with InformerFactory(api, watch_options=FAST) as f:
        pods = f.informer("v1", "pods")
        broken = f.informer("v1", "configmaps")
        broken._writer = BrokenWriter(broken._writer)  # type: ignore[assignment]
        await pods.wait_for_sync(timeout=30)
        await eventually(lambda: broken._closed, "the broken informer to stop")
        stopped = [r for r in caplog.records if "stopped" in r.getMessage()]
        assert [r.levelno for r in stopped] == [logging.ERROR]
        assert stopped[0].getMessage().startswith("informer configmaps stopped")
        assert "the others keep running" in stopped[0].getMessage()
        made = sim.create("pods", pod("after"), "default")
        snap = await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=30)
        assert "default/after" in snap and not broken.has_synced


# -- sharing: one informer per spec ---------------------------------------------------------------


FIELDS = ("metadata", "spec")


def project(obj: KubeObject, fields: tuple[str, ...]) -> KubeObject:
    return obj


def per_call(fields: tuple[str, ...] = FIELDS) -> Callable[[KubeObject], KubeObject]:
    """A transform written once, made anew at each call."""
    return lambda o: project(o, fields)


async def test_the_same_spec_shares_one_informer_and_any_other_makes_another(api: Any) -> None:
    f = InformerFactory(api, watch_options=FAST)
    pods = f.informer("v1", "pods")
    assert f.informer("v1", "pods") is pods
    assert f.informer_for(InformerSpec(group_version="v1", plural="pods")) is pods
    others = [
        f.informer("v1", "pods", label_selector="app=web"),
        f.informer("v1", "pods", field_selector="spec.nodeName=n1"),
        f.informer("v1", "pods", namespace="default"),
        f.informer("v1", "pods", metadata_only=True),
        f.informer("v1", "configmaps"),
    ]
    assert len({id(i) for i in [pods, *others]}) == 6
    assert f.informers == [pods, *others]


async def test_a_transform_made_anew_per_call_is_the_same_one(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Same code over the same captured objects (a lambda per call, a partial of the same
    function and arguments, the same method): one informer, no warning."""
    f = InformerFactory(api, watch_options=FAST)
    lambdas = [f.informer("v1", "pods", transform=per_call()) for _ in range(3)]
    partials = [
        f.informer("v1", "secrets", transform=functools.partial(project, fields=FIELDS))
        for _ in range(2)
    ]
    named = [f.informer("v1", "configmaps", transform=drop_managed_fields) for _ in range(2)]
    assert lambdas[0] is lambdas[1] is lambdas[2]
    assert partials[0] is partials[1] and named[0] is named[1]
    assert len(f.informers) == 3
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    spec = InformerSpec(group_version="v1", plural="pods", transform=per_call())
    assert spec == InformerSpec(group_version="v1", plural="pods", transform=per_call())
    assert spec != InformerSpec(group_version="v1", plural="pods", transform=per_call(("x",)))


async def test_a_second_informer_of_one_scope_logs_a_warning_naming_the_differences(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    f = InformerFactory(api, watch_options=FAST)
    plain = f.informer("v1", "pods", transform=per_call())
    other = f.informer("v1", "pods", transform=per_call(("status",)))  # other captured data
    assert other is not plain
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert message.startswith("a second informer of pods: it differs from the one")
    assert "in transform," in message and "keeps its own watch and cache" in message
    f.informer("v1", "configmaps")
    f.informer("v1", "configmaps", streaming_list=True, transform=drop_managed_fields)
    message = [r for r in caplog.records if r.levelno == logging.WARNING][-1].getMessage()
    assert "configmaps: it differs" in message and "in streaming_list, transform," in message
    caplog.clear()
    f.informer("v1", "configmaps", namespace="default")  # another scope: nothing to say
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


# -- indexers ------------------------------------------------------------------------------------


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


async def test_index_functions_are_checked_when_registered(api: Any) -> None:
    f = InformerFactory(api, watch_options=FAST)
    with pytest.raises(ConfigError, match=r"must be callable, not 'spec\.nodeName' \(by_field"):
        f.informer("v1", "pods", indexers={"node": "spec.nodeName"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="index names are non-empty strings"):
        f.informer("v1", "pods", indexers={"": by_field("spec.nodeName")})
    assert f.informers == []  # nothing was made of a refused request
    pods = f.informer("v1", "pods")
    with pytest.raises(ConfigError, match="must be callable"):
        f.informer("v1", "pods", indexers={"node": None})  # type: ignore[dict-item]
    assert "node" not in pods.indexers


# -- namespaces and resources --------------------------------------------------------------------


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


async def test_bad_resources_are_refused_at_once(api: Any) -> None:
    f = InformerFactory(api)
    for gv, plural in (("", "pods"), ("v1", ""), ("v1", "pods/status")):
        with pytest.raises(ConfigError, match="bad resource"):
            f.informer(gv, plural)
    assert f.informers == []


async def test_wait_for_sync_timeout_names_the_informer_and_its_last_error(
    sim: KubeSim, api: Any
) -> None:
    async with InformerFactory(api, watch_options=FAST) as f:
        pods = f.informer("v1", "pods")
        podsets = f.informer(PODSETS, "podsets")  # no CRD: the list gets 404
        await pods.wait_for_sync(timeout=30)
        await eventually(lambda: podsets.statistics().last_error != "", "the first failed list")
        with pytest.raises(FreshnessTimeout) as info:
            await f.wait_for_sync(timeout=0.01)
        message = str(info.value)
        assert message.startswith("not synced after 0.01s: podsets.example.aioinformer.dev (")
        assert "HTTP 404" in message and "is the CRD installed?" in message
        assert ";" not in message  # one informer named: the synced one is not
        with pytest.raises(FreshnessTimeout, match=r"informer podsets\.example\.aioinformer\.dev"):
            await podsets.wait_for_sync(timeout=0.01)


# -- watch options -------------------------------------------------------------------------------


async def test_watch_options_reach_every_informer(api: Any) -> None:
    options = WatchOptions(page_size=7, idle_timeout=12.0)
    f = InformerFactory(api, watch_options=options)
    assert f.watch_options is options
    watcher = f.informer("v1", "pods")._watcher
    assert (watcher.page_size, watcher.idle_timeout) == (7, 12.0)
    assert InformerFactory(api).watch_options == WatchOptions()


async def test_an_informer_built_by_hand_runs_on_the_callers_loop(api: Any) -> None:
    """Outside a factory an informer has no pipeline thread unless given one."""
    assert Informer(ListWatch(api, "v1", "pods"), name="pods").pipeline == "loop"


def waits_left() -> list[asyncio.Task[Any]]:
    """Tasks still running an informer's ``wait_for_sync``."""
    return [
        t
        for t in asyncio.all_tasks()
        if not t.done() and "Informer.wait_for_sync" in repr(t.get_coro())
    ]


@contextlib.contextmanager
def loop_reports() -> Iterator[list[str]]:
    """What the loop reports through its exception handler while the block runs (and
    after a gc at its end): "exception was never retrieved", "Task was destroyed"..."""
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(str(context["message"])))
    try:
        yield reports
        gc.collect()
    finally:
        loop.set_exception_handler(previous)


def broken_apply(*args: object, **kwargs: object) -> list[object]:
    raise RuntimeError("store bug")


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_wait_for_sync_fails_at_once_and_leaves_nothing_behind(
    sim: KubeSim, api: Any, pipeline: Any
) -> None:
    """One informer dies during the initial sync (its writer fails) while another never
    syncs (its lists fail): ``wait_for_sync`` raises the ClosedError at once and leaves no
    task waiting for the other, and nothing unretrieved."""
    sim.create("secrets", {"metadata": {"name": "s"}, "data": {}}, "default")
    sim.fail_next(10_000, 500, verbs=["list"], path_contains="configmaps")  # never syncs
    with loop_reports() as reports:
        async with InformerFactory(api, watch_options=FAST, pipeline=pipeline) as factory:
            stuck = factory.informer("v1", "configmaps")
            dead = factory.informer("v1", "secrets")
            dead._writer.apply = broken_apply  # type: ignore[method-assign]
            with pytest.raises(ClosedError, match="secrets"):
                await factory.wait_for_sync(timeout=30)
            assert waits_left() == []
            assert not stuck.has_synced
    assert reports == []


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_a_wait_for_sync_cancelled_as_an_informer_stops_stays_cancelled(
    sim: KubeSim, api: Any, pipeline: Any
) -> None:
    """A SIGTERM during the initial sync cancels the task waiting for it in the very step
    one of the informers stops (it would see a ClosedError): the wait ends cancelled (the
    stop is not turned into an error), leaving no task and no "exception was never
    retrieved" report."""
    sim.create("configmaps", configmap("c"), "default")
    sim.fail_next(10_000, 500, verbs=["list"], path_contains="secrets")  # never syncs
    with loop_reports() as reports:
        async with InformerFactory(api, watch_options=FAST, pipeline=pipeline) as factory:
            cms = factory.informer("v1", "configmaps")
            stuck = factory.informer("v1", "secrets")
            waiting = asyncio.create_task(factory.wait_for_sync())
            await cms.wait_for_sync(timeout=15)
            await eventually(lambda: stuck.statistics().errors_by_code.get(500, 0) >= 1, "500")
            run = factory._tasks[stuck]
            run.add_done_callback(lambda _: waiting.cancel())  # the same step it stops in
            run.cancel()
            await asyncio.wait([waiting])
            assert waiting.cancelled(), waiting
            assert waits_left() == []
    assert reports == []
