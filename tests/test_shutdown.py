"""Shutdown and cancellation (issue #6) over real HTTP against KubeSim.

Cancelling the task that runs a factory or a manager stops every child task (watchers,
writers, handler tasks, controller workers) and the factory's one pipeline thread, closes
every HTTP response (the server sees its watch count return to 0) and leaves no "Task was
destroyed but it is pending" report and no unclosed-resource warning, even when it comes
the moment the caches sync; a factory runs once; an informer that fails (a transform
raising on everything, a resource that is not served, a writer that dies) never stops the
others.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from aioinformer import ControllerOptions, InformerFactory, KubeObject
from aioinformer._cache.pipeline import THREAD_PREFIX
from aioinformer._core.errors import ClosedError, ConfigError
from aioinformer._runtime.manager import LeaderElection, Manager
from aioinformer.testing import KubeSim, eventually
from tests.support import pod, released_lease
from tests.support import watch_options as options

OURS = ("informer-", "-watcher", "-worker-", "controller:", "manager", "leader-elector")


def cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": "1"}}


def explode(obj: KubeObject) -> KubeObject:
    raise ValueError(f"transform cannot handle {obj.key}")


def leftover(before: set[asyncio.Task[Any]], names: tuple[str, ...] = ()) -> list[str]:
    """Live tasks started since ``before`` that belong to aioinformer (by name or code)."""
    out = []
    for t in asyncio.all_tasks() - before:
        if t.done() or t is asyncio.current_task():
            continue
        code = getattr(t.get_coro(), "cr_code", None)
        where = getattr(code, "co_filename", "")
        name = t.get_name()
        if "aioinformer/_" in where or any(n in name for n in (*OURS, *names)):
            out.append(f"{name} ({where})")
    return out


def pipeline_threads(before: set[threading.Thread]) -> list[str]:
    """The pipeline threads started since ``before`` and still alive."""
    return [
        t.name
        for t in set(threading.enumerate()) - before
        if t.name.startswith(THREAD_PREFIX) and t.is_alive()
    ]


@contextlib.contextmanager
def no_pending_task_reports() -> Iterator[list[str]]:
    """Collect what the loop reports about destroyed pending tasks, and resource warnings;
    the test asserts the list is empty after a gc at the end."""
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    previous = loop.get_exception_handler()

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        reports.append(str(context.get("message")))

    loop.set_exception_handler(handler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        try:
            yield reports
            gc.collect()
        finally:
            loop.set_exception_handler(previous)
            reports.extend(str(w.message) for w in caught if w.category is ResourceWarning)


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_cancelling_the_factory_runner_stops_every_task_and_response(
    caplog: pytest.LogCaptureFixture, pipeline: Any
) -> None:
    """Every task and, with the pipeline thread, the thread is gone once the cancellation
    of the runner completes; the factory does not run again."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sim.create("configmaps", cm("c"), "default")
        before, threads = asyncio.all_tasks(), set(threading.enumerate())
        factory = InformerFactory(api, watch_options=options(), pipeline=pipeline)
        slow_started = asyncio.Event()

        async def slow(obj: KubeObject) -> None:  # a handler busy when the cancel comes
            slow_started.set()
            await asyncio.sleep(3600)

        gc.collect()  # (what earlier tests left is reported now, not during this test)
        with no_pending_task_reports() as reports:

            async def runner() -> None:
                async with factory:
                    pods = factory.informer("v1", "pods")
                    factory.informer("v1", "configmaps", transform=explode)
                    factory.informer("example.aioinformer.dev/v1", "podsets")  # 404
                    pods.add_handler(on_add=slow)
                    pods.add_handler(on_add=lambda obj: None, coalesce=True)
                    await pods.wait_for_sync(timeout=15)
                    await asyncio.Event().wait()

            task = asyncio.create_task(runner(), name="user-runner")
            await eventually(lambda: sim.open_watches == 2, "pods and configmaps watches")
            await asyncio.wait_for(slow_started.wait(), 15)
            if pipeline == "loop":  # the factory + 3 informers x (run+writer, watcher) + handlers
                assert len(leftover(before)) >= 9
                assert pipeline_threads(threads) == []
            else:  # the factory, 3 informers' runs and handlers here; the rest on one thread
                assert len(leftover(before)) >= 6
                assert pipeline_threads(threads) == [f"{THREAD_PREFIX}{id(factory):x}"]
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert leftover(before) == []  # gone when the runner's cancellation completes
            assert pipeline_threads(threads) == []
            await eventually(lambda: sim.open_watches == 0, "the server to see every close")
            with pytest.raises(ConfigError, match="has run already"):
                async with factory:
                    pass
            with pytest.raises(ConfigError, match="closed"):
                factory.informer("v1", "secrets")
        assert reports == []
    assert "stopped:" not in caplog.text  # no informer died: they were cancelled


async def test_cancelling_the_manager_run_stops_controllers_informers_and_responses() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(5):
            sim.create("configmaps", cm(f"c{i}"), "default")
        before, threads = asyncio.all_tasks(), set(threading.enumerate())
        reconciling = asyncio.Event()

        async def reconcile(key: str) -> None:
            reconciling.set()
            await asyncio.sleep(0.05)

        gc.collect()  # (what earlier tests left is reported now, not during this test)
        with no_pending_task_reports() as reports:
            manager = Manager(api, metrics_port=0, watch_options=options())
            cms = manager.informer("v1", "configmaps", namespace="default")
            manager.informer("v1", "pods")
            ctl = manager.controller(
                "cm",
                reconcile,
                primary=cms,
                primary_kind="ConfigMap",
                options=ControllerOptions(concurrency=3),
            )
            task = asyncio.create_task(manager.run(), name="user-manager")
            await asyncio.wait_for(reconciling.wait(), 15)
            await eventually(lambda: sim.open_watches == 2, "the watches")
            port = manager.bound_metrics_port
            assert sum("-worker-" in n for n in leftover(before)) == 3
            assert len(pipeline_threads(threads)) == 1  # one for both informers
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert leftover(before) == [] and pipeline_threads(threads) == []
            assert not ctl.running
            await eventually(lambda: sim.open_watches == 0, "the server to see every close")
            async with aiohttp.ClientSession() as http:  # the metrics endpoint is closed
                with pytest.raises(aiohttp.ClientConnectionError):
                    await http.get(f"http://127.0.0.1:{port}/metrics")
        assert reports == []


SIXTEEN = [  # (group_version, plural, namespace): 8 resources, each in all and in one namespace
    (gv, plural, ns)
    for gv, plural in [
        ("v1", "pods"),
        ("v1", "configmaps"),
        ("v1", "secrets"),
        ("v1", "services"),
        ("v1", "serviceaccounts"),
        ("v1", "persistentvolumeclaims"),
        ("apps/v1", "deployments"),
        ("coordination.k8s.io/v1", "leases"),
    ]
    for ns in (None, "default")
]


async def test_a_manager_with_sixteen_informers_runs_one_pipeline_thread() -> None:
    """Sixteen informers on one manager: one pipeline thread (named after its factory)
    carries all their watches while ``async with manager:`` runs, and none is left once
    the block has exited."""
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("configmaps", cm("c"), "default")
        threads = set(threading.enumerate())
        manager = Manager(api, watch_options=options())
        informers = [manager.informer(gv, plural, namespace=ns) for gv, plural, ns in SIXTEEN]
        assert len(set(informers)) == 16
        assert pipeline_threads(threads) == []  # none before it runs
        async with manager:
            assert all(inf.has_synced for inf in informers)
            assert informers[2].snapshot().keys() == ["default/c"]
            assert pipeline_threads(threads) == [f"{THREAD_PREFIX}{id(manager.factory):x}"]
            await eventually(lambda: sim.open_watches == 16, "every informer's watch")
            assert len(pipeline_threads(threads)) == 1
        assert pipeline_threads(threads) == []  # ended with the block
        await eventually(lambda: sim.open_watches == 0, "the server to see every close")


@pytest.mark.parametrize("runs", ["manager", "factory"])
async def test_a_cancellation_as_the_caches_sync_still_stops_the_run(runs: str) -> None:
    """The runner is cancelled in the same instant the caller sees the caches synced (the
    runner's own wait for the sync completing then too): the cancellation is not lost, the
    run ends."""
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("configmaps", cm("c"), "default")
        if runs == "manager":
            manager = Manager(api, watch_options=options())
            manager.informer("v1", "configmaps")
            factory = manager.factory
            task = asyncio.create_task(manager.run())
        else:
            factory = InformerFactory(api, watch_options=options())
            factory.informer("v1", "configmaps")

            async def runner() -> None:
                async with factory:
                    await factory.wait_for_sync(timeout=15)
                    await asyncio.Event().wait()

            task = asyncio.create_task(runner())
        await factory.wait_for_sync(timeout=15)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=15)
        assert done, "the run went on after its cancellation"
        assert task.cancelled()


async def test_manager_stop_lets_reconciles_finish_then_cancels_stuck_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In-flight reconciles finish while their informers still run; one that outlives the
    controller's shutdown_timeout is cancelled, with a warning."""
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("configmaps", cm("quick"), "default")
        sim.create("configmaps", cm("stuck"), "default")
        started: set[str] = set()
        finished: list[tuple[str, bool]] = []
        cancelled: list[str] = []

        async def reconcile(key: str) -> None:
            started.add(key)
            try:
                await asyncio.sleep(0.3 if key.endswith("quick") else 3600)
            except asyncio.CancelledError:
                cancelled.append(key)
                raise
            try:
                await cms.wait_fresh(1, timeout=1.0)  # ClosedError once the informer stopped
                finished.append((key, True))
            except ClosedError:
                finished.append((key, False))

        manager = Manager(api, watch_options=options())
        cms = manager.informer("v1", "configmaps", namespace="default")
        manager.controller(
            "cm",
            reconcile,
            primary=cms,
            primary_kind="ConfigMap",
            options=ControllerOptions(concurrency=2, shutdown_timeout=1.0),
        )
        task = asyncio.create_task(manager.run())
        await eventually(lambda: len(started) == 2, "both reconciles to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert finished == [("default/quick", True)]  # it finished, its informer still running
    assert cancelled == ["default/stuck"]
    assert "cm: cancelling 1 running reconciles (stopping, shutdown_timeout 1s)" in caplog.text


async def test_shutdown_is_bounded_whatever_a_reconciles_cleanup_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``shutdown_timeout=1`` and a reconcile whose cancellation cleanup never ends by itself
    (it waits for the test): the manager's run still ends, with the cleanup running, the
    reconcile abandoned (logged) and the leader Lease released; a write the abandoned
    reconcile makes afterwards through the manager's client is refused."""
    release = asyncio.Event()
    cleanup_started = asyncio.Event()
    late_write: list[BaseException] = []
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("configmaps", cm("a"), "default")
        sim.create("leases", released_lease("op", "default"), "default")  # (taken at once)
        manager = Manager(
            api,
            watch_options=options(),
            leader_election=LeaderElection("op", "default", "replica-a", 15.0, 10.0, 0.2),
        )
        cms = manager.informer("v1", "configmaps", namespace="default")
        running = asyncio.Event()
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default"},
        }

        async def reconcile(key: str) -> None:
            running.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cleanup_started.set()
                await release.wait()  # a cleanup that takes as long as it likes
                try:
                    await manager.client.patch(ref, {"data": {"v": "2"}})
                except Exception as exc:
                    late_write.append(exc)
                raise

        manager.controller(
            "cm", reconcile, primary=cms, options=ControllerOptions(shutdown_timeout=1.0)
        )
        task = asyncio.create_task(manager.run())
        try:
            await asyncio.wait_for(running.wait(), 30)
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=60)
            assert done, "the manager's shutdown waited for the reconcile's cleanup"
            assert cleanup_started.is_set() and not release.is_set()
            assert "abandoned 1 reconciles still running" in caplog.text
            lease = sim.get("coordination.k8s.io/v1/leases", "op", "default")
            assert not lease["spec"].get("holderIdentity"), lease["spec"]
        finally:
            release.set()
            await eventually(lambda: bool(late_write), "the abandoned reconcile's late write")
        assert type(late_write[0]).__name__ in {"NotOwner", "ClosedError"}, late_write
        assert sim.get("configmaps", "a", "default")["data"] == {"v": "1"}


async def test_one_failing_informer_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A transform that raises on every object, an index function that raises on every
    object, a publish listener that raises, a resource that is not served (404) and an
    informer whose writer dies (its store raising, as a bug would): each is contained,
    logged and counted, and the healthy informer keeps following the server."""
    caplog.set_level(logging.INFO, logger="aioinformer")

    def bad_index(obj: KubeObject) -> list[str]:
        raise RuntimeError("index function bug")

    def bad_listener(seq: int, rv: int) -> None:
        raise RuntimeError("publish listener bug")

    def broken_apply(*args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("store bug")

    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("configmaps", cm("c"), "default")
        sim.create("secrets", {"metadata": {"name": "s"}, "data": {}}, "default")
        sim.create("serviceaccounts", {"metadata": {"name": "sa"}}, "default")
        async with InformerFactory(api, watch_options=options()) as factory:
            pods = factory.informer("v1", "pods")
            cms = factory.informer("v1", "configmaps", transform=explode)
            podsets = factory.informer("example.aioinformer.dev/v1", "podsets")
            indexed = factory.informer("v1", "secrets", indexers={"bad": bad_index})
            pods.on_publish(bad_listener)
            secrets = factory.informer("v1", "serviceaccounts")
            secrets._writer.apply = broken_apply  # type: ignore[method-assign]
            await pods.wait_for_sync(timeout=15)
            await eventually(
                lambda: "informer serviceaccounts stopped" in caplog.text, "the dead one"
            )
            await eventually(lambda: podsets.statistics().errors_by_code.get(404, 0) >= 2, "404s")
            for i in range(3):
                sim.create("pods", pod(f"p{i}"), "default")
                sim.create("configmaps", cm(f"c{i}"), "default")
            want = sim.versions("pods")
            await eventually(
                lambda: {o.key: str(o.rv) for o in pods.snapshot().list()} == want, "pods"
            )
            await eventually(lambda: cms.statistics().transform_errors >= 4, "transform errors")
            assert cms.has_synced and cms.snapshot().list() == []  # every object skipped
            assert (
                not podsets.has_synced
                and "is the CRD installed?" in podsets.statistics().last_error
            )
            assert indexed.has_synced and indexed.snapshot().keys() == ["default/s"]
            assert (
                indexed.statistics().index_errors >= 1
                and indexed.snapshot().index_values("bad") == []
            )
            assert secrets.snapshot().keys() == []  # its writer died before the first batch
    dead = [r for r in caplog.records if "informer serviceaccounts stopped" in r.getMessage()]
    assert len(dead) == 1 and dead[0].levelno == logging.ERROR  # logged once, when it died
    assert "publish listener bug" in caplog.text and "index function bug" in caplog.text
    assert "store bug" in caplog.text
    assert "the transform raised on default/c" in caplog.text
