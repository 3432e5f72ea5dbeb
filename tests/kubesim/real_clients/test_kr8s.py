"""kr8s (async API) against ``python -m aioinformer sim`` through the sim's kubeconfig:
get, list, create, patch, delete and watch of built-in objects, read back from the
server."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from tests.kubesim.real_clients.simproc import SimProcess

kr8s = pytest.importorskip("kr8s", reason="kr8s is not installed (test extra)")
from kr8s.asyncio.objects import ConfigMap, Namespace, Pod  # noqa: E402

NS = "kr8s"
#: kr8s caches its API objects per process: every test shares one event loop with them.
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def connect(cli_sim: SimProcess) -> Any:
    """kr8s's API for the sim's kubeconfig, with the test namespace (made once)."""
    api = await kr8s.asyncio.api(kubeconfig=str(cli_sim.kubeconfig))
    if not await (await Namespace({"metadata": {"name": NS}}, api=api)).exists():
        await (await Namespace({"metadata": {"name": NS}}, api=api)).create()
    return api


async def test_version_and_api_resources(cli_sim: SimProcess) -> None:
    api = await connect(cli_sim)
    version = await api.version()
    assert version["gitVersion"] == "v1.28.0"
    resources = await api.api_resources()
    assert any(r["name"] == "pods" and r["version"] == "v1" for r in resources)


async def test_create_get_patch_delete(cli_sim: SimProcess) -> None:
    api = await connect(cli_sim)
    cm = await ConfigMap({"metadata": {"name": "k1", "namespace": NS}, "data": {"a": "1"}}, api=api)
    await cm.create()
    assert cm.metadata.uid
    got = await ConfigMap.get("k1", namespace=NS, api=api)
    assert got.raw["data"] == {"a": "1"}
    await got.patch({"data": {"b": "2"}})
    assert cli_sim.get(f"/api/v1/namespaces/{NS}/configmaps/k1")["data"] == {"a": "1", "b": "2"}
    await got.label({"tier": "x"})
    assert cli_sim.get(f"/api/v1/namespaces/{NS}/configmaps/k1")["metadata"]["labels"] == {
        "tier": "x"
    }
    listed = [c.name async for c in api.get("configmaps", namespace=NS, label_selector="tier=x")]
    assert listed == ["k1"]
    await got.delete()
    assert not cli_sim.exists(f"/api/v1/namespaces/{NS}/configmaps/k1")


async def test_pod_ready(cli_sim: SimProcess) -> None:
    """A pod created through kr8s gets Running and Ready on the sim's node; kr8s's
    wait() sees the condition."""
    api = await connect(cli_sim)
    pod = await Pod(
        {
            "metadata": {"name": "kp", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
        api=api,
    )
    await pod.create()
    await asyncio.wait_for(pod.wait("condition=Ready"), 30)
    await pod.refresh()
    assert pod.status.phase == "Running"


async def test_watch(cli_sim: SimProcess) -> None:
    """watch() since a resourceVersion sees the ADDED and DELETED of an object written
    after it, in order: the server replays them from its watch history however late
    kr8s's watch request arrives."""
    api = await connect(cli_sim)
    before = await ConfigMap({"metadata": {"name": "kw-before", "namespace": NS}}, api=api)
    await before.create()
    since = before.raw["metadata"]["resourceVersion"]
    cm = await ConfigMap({"metadata": {"name": "kw", "namespace": NS}}, api=api)
    await cm.create()
    await cm.delete()
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        events = api.watch(
            "configmaps", namespace=NS, field_selector="metadata.name=kw", since=since
        )
        async with contextlib.aclosing(events):  # closes kr8s's stream when done
            async for event, obj in events:
                seen.append((event, obj.name))
                if event == "DELETED":
                    return

    await asyncio.wait_for(consume(), 30)
    assert seen == [("ADDED", "kw"), ("DELETED", "kw")]
