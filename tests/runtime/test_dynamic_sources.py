"""Dynamic informers at the Manager and Controller level, over real HTTP against KubeSim:
an informer acquired while the manager runs shows in ``/readyz`` and ``/metrics`` until
its release, which closes its watch; a running controller starts and stops following a
watched and an owned kind; a reconcile waiting for a released informer to see its write
goes on, and so does a replica catching up with a Lease."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from aioinformer import (
    Controller,
    ControllerOptions,
    InformerFactory,
    KubeObject,
    Manager,
    Result,
)
from aioinformer._client.discovery import ApiResource
from aioinformer._runtime.catchup import catch_up
from aioinformer.testing import KubeSim, eventually
from tests.support import configmap


def secret(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}}


class Recorder:
    """A reconciler that records the keys it was called with."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def __call__(self, key: str) -> Result | None:
        self.keys.append(key)
        return None


def manager(api: Any, reconcile: Recorder, **options: Any) -> tuple[Manager, Controller]:
    m = Manager(api, namespace="default", metrics_port=0, blocked_loop_threshold=None)
    cms = m.informer("v1", "configmaps")
    ctl = m.controller("cm", reconcile, primary=cms, primary_kind="ConfigMap", **options)
    return m, ctl


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


async def test_readyz_and_metrics_follow_the_informers_the_manager_runs_now(
    sim: KubeSim,
) -> None:
    async with sim.api_client() as api:
        m, _ = manager(api, Recorder())
        async with m, aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{m.bound_metrics_port}"
            assert (await get(session, f"{base}/readyz"))[0] == 200
            widgets = m.acquire("example.invalid/v1", "widgets")  # not served: never syncs
            secrets = m.acquire("v1", "secrets")
            await secrets.informer.wait_for_sync(timeout=10)
            await eventually(lambda: sim.open_watches == 2, "the configmaps and secrets watches")
            status, text = await get(session, f"{base}/readyz?verbose")
            assert status == 503 and "not synced: widgets.example.invalid[default]" in text
            _, metrics = await get(session, f"{base}/metrics")
            assert 'informer="secrets[default]"' in metrics
            assert 'informer="widgets.example.invalid[default]"' in metrics
            await widgets.release()
            await secrets.release()
            assert await get(session, f"{base}/readyz") == (200, "ok")
            _, metrics = await get(session, f"{base}/metrics")
            assert 'informer="configmaps[default]"' in metrics
            assert "secrets" not in metrics and "widgets" not in metrics
            await eventually(lambda: sim.open_watches == 1, "the server to see the watch close")


async def test_a_manager_starts_once_an_informer_that_cannot_sync_is_released(
    sim: KubeSim,
) -> None:
    """The manager's start waits for the informers it runs: one released meanwhile (its
    lists keep failing) no longer holds it back."""
    sim.fail_next(10**6, 500, path_contains="/secrets", verbs=["list"])
    async with sim.api_client() as api:
        m, ctl = manager(api, Recorder())
        secrets = m.acquire("v1", "secrets")
        running = asyncio.create_task(m.run())
        try:
            await eventually(lambda: secrets.informer.statistics().errors_by_code, "a failed list")
            # The controllers' own informers sync meanwhile (a loaded machine may be slower).
            await eventually(
                lambda: m.health.readiness["informers"]() == "not synced: secrets[default]",
                "only the secrets informer left unsynced",
            )
            assert not ctl.running
            await secrets.release()
            await eventually(lambda: ctl.running, "the controllers started")
            assert m.health.readiness["informers"]() is None
        finally:
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running


async def test_a_running_controller_starts_and_stops_watching_a_kind(sim: KubeSim) -> None:
    reconcile = Recorder()
    mapped: list[str] = []

    def to_configmap(obj: KubeObject) -> list[str]:
        mapped.append(obj.name)
        return [f"default/{obj.labels['cm']}"]

    sim.create("configmaps", configmap("c1"), "default")
    async with sim.api_client() as api:
        m, ctl = manager(api, reconcile)
        async with m:
            await eventually(lambda: "default/c1" in reconcile.keys, "c1 reconciled at start")
            secrets = m.acquire("v1", "secrets")
            ctl.add_watches(secrets, to_configmap)
            assert ctl.watches == [secrets.informer]
            before = reconcile.keys.count("default/c1")
            sim.create("secrets", secret("s1", cm="c1"), "default")
            await eventually(
                lambda: reconcile.keys.count("default/c1") > before, "c1 reconciled for s1"
            )
            assert mapped == ["s1"]
            assert ctl.remove_source(secrets) and not ctl.remove_source(secrets)
            assert ctl.watches == []
            await secrets.release()
            assert secrets.informer.closed
            await eventually(lambda: sim.open_watches == 1, "the server to see it close")


async def test_owned_informers_come_and_go_with_their_handle(sim: KubeSim) -> None:
    """A handle given to the controller carries the controller's subscription: releasing
    the handle ends it, and the informer leaves ``owns`` (no creation of its objects is
    expected any more)."""
    pods_resource = ApiResource(
        group="", version="v1", plural="pods", kind="Pod", namespaced=True, verbs=()
    )
    async with sim.api_client() as api:
        m = Manager(api, namespace="default", blocked_loop_threshold=None)
        pods = m.acquire("v1", "pods")
        cms = m.informer("v1", "configmaps")
        ctl = m.controller("cm", Recorder(), primary=cms, primary_kind="ConfigMap", owns=[pods])
        async with m:
            assert ctl.owns == [pods.informer]
            assert ctl.owns_resource(pods_resource, "default")
            await pods.release()
            assert ctl.owns == [] and not ctl.owns_resource(pods_resource, "default")
            again = m.acquire("v1", "pods")
            ctl.add_owns(again)
            assert ctl.owns == [again.informer]
            await again.release()


async def test_a_reconcile_waiting_for_a_released_informer_goes_on(sim: KubeSim) -> None:
    """A write recorded against an informer makes the key's next reconcile wait for it to
    see the write; if the informer stops first, there is nothing left to wait for: the key
    is reconciled (it used to fail on the informer's ClosedError, and be retried forever)."""
    reconcile = Recorder()
    async with sim.api_client() as api:
        options = ControllerOptions(freshness_timeout=3600.0)
        m, ctl = manager(api, reconcile, options=options)
        async with m:
            secrets = m.acquire("v1", "secrets")
            ctl.add_owns(secrets)
            await secrets.informer.wait_for_sync(timeout=10)
            ctl.record_write("default/late", secrets.informer, 10**9)  # never seen
            sim.create("configmaps", configmap("late"), "default")
            await eventually(lambda: ctl.statistics().in_flight == 1, "its reconcile waiting")
            assert "default/late" not in reconcile.keys
            await secrets.release()
            await eventually(lambda: "default/late" in reconcile.keys, "the key reconciled")
            assert ctl.errors == 0


async def test_catching_up_counts_an_informer_stopped_meanwhile_as_caught_up(
    sim: KubeSim,
) -> None:
    """A replica that takes a Lease waits for its informers to reach the Lease's write;
    one released meanwhile reads nothing any more: it used to fail the catch-up with its
    ClosedError (leaving a shard's keys waiting for good)."""
    async with sim.api_client() as api:
        f = InformerFactory(api, namespace="default")
        async with f:
            handle = f.acquire("v1", "secrets")
            await handle.informer.wait_for_sync(timeout=10)
            rv = handle.informer.snapshot().resource_version + 10**6
            catching = asyncio.create_task(
                catch_up([handle.informer], rv, f.rest, what="a test", timeout=3600)
            )
            await asyncio.sleep(0)  # (waiting now)
            await handle.release()
            assert await catching == []
