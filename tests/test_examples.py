"""The example operators (examples/*.py, loaded from their files) against KubeSim over HTTP.

Importing one loads the library only (no KubeSim, testing kit, harness or command line).
Each converges from scratch, after changes and after an apiserver restart, and leaves
nothing behind when its object goes (the garbage collector follows the ownerReferences);
and the incident's bug is reproduced on purpose (watch events delivered 0.3 s late: stale
informers, and a burst of triggers): without the controller's protection the PodSet gets
409 AlreadyExists answers and the NodeAgent puts second pods on nodes; with it, neither
happens.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest

from aioinformer import Client, Manager
from aioinformer._runtime.target import module_from_file
from aioinformer.testing import Example, KubeSim, eventually, install_crd
from tests.support import REPO, pod_object, run_python

EXAMPLES = REPO / "examples"
podset = module_from_file(EXAMPLES / "podset.py")
nodeagent = module_from_file(EXAMPLES / "nodeagent.py")
configmap_mirror = module_from_file(EXAMPLES / "configmap_mirror.py")
GROUP_VERSION = "example.aioinformer.dev/v1"
Progress = tuple[str, bool]

pytestmark = pytest.mark.timeout(60)

NS = "default"
STALE = 0.3  # seconds every watch event is delivered late in the stale-cache tests
Op = TypeVar("Op")


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    """KubeSim with three nodes and the scheduler/kubelet emulation running."""
    async with KubeSim(nodes=3) as sim:
        sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
        yield sim


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    task.cancel()
    await asyncio.wait([task])


@asynccontextmanager
async def operator(
    sim: KubeSim, build: Callable[..., Op], crd: Path | None = None, **options: Any
) -> AsyncIterator[tuple[Op, Client]]:
    """Install ``crd``, then run ``build(manager, **options)`` on its own manager until the
    block ends (entered once its caches synced); yields the operator and a client (for
    progress checks)."""
    async with sim.api_client() as api:
        client = Client(api, field_manager="tests")
        if crd is not None:
            await install_crd(client, crd)
        manager = Manager(api, cache_sync_timeout=10)
        op = build(manager, **options)
        async with manager:
            yield op, client


async def converged(check: Callable[[], Awaitable[Progress]], timeout: float = 20.0) -> str:
    """Wait until ``check()`` says done; fail with its last line after ``timeout``."""
    line = ""
    try:
        async with asyncio.timeout(timeout):
            while True:
                line, done = await check()
                if done:
                    return line
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"not converged after {timeout}s: {line}")


async def touch_many(sim: KubeSim, plural: str, name: str, times: int) -> None:
    """A burst of triggers: annotate the object ``times`` times, 50 ms apart."""
    for i in range(times):
        sim.patch(
            f"{GROUP_VERSION}/{plural}", name, {"metadata": {"annotations": {"touch": str(i)}}}, NS
        )
        await asyncio.sleep(0.05)


def owned_pods(sim: KubeSim, owner_uid: str) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.list("pods", NS)
        if any(r.get("uid") == owner_uid for r in p["metadata"].get("ownerReferences", ()))
    ]


async def gone(sim: KubeSim, owner_uid: str) -> None:
    """Wait until no pod of ``owner_uid`` is left (KubeSim is polled in-process)."""
    await eventually(lambda: not owned_pods(sim, owner_uid), f"the pods of {owner_uid} to go")


# -- PodSet --------------------------------------------------------------------------------------


def create_podset(sim: KubeSim, name: str, replicas: int) -> str:
    created = sim.create(f"{GROUP_VERSION}/podsets", podset.podset_body(name, replicas), NS)
    uid: str = created["metadata"]["uid"]
    return uid


def scale(sim: KubeSim, name: str, replicas: int) -> None:
    sim.patch(f"{GROUP_VERSION}/podsets", name, {"spec": {"replicas": replicas}}, NS)


async def test_podset_converges_scales_and_survives_a_restart(sim: KubeSim) -> None:
    async with operator(sim, podset.build, podset.CRD) as (op, client):
        uid = create_podset(sim, "web", 3)

        def check() -> Awaitable[Progress]:
            return podset.progress(client, NS, "web")

        await converged(check)
        for replicas in (5, 1):
            scale(sim, "web", replicas)
            await converged(check)
        assert [p["metadata"]["name"] for p in owned_pods(sim, uid)] == ["web-0"]
        sim.restart()
        scale(sim, "web", 4)
        await converged(check)
        sim.delete(f"{GROUP_VERSION}/podsets", "web", NS)
        await gone(sim, uid)
        assert op.counters["conflicts"] == 0


async def settle(sim: KubeSim, protect: bool, check: Callable[[], Awaitable[Progress]]) -> None:
    """Wait for convergence after a burst on a stale cache. Protected, the cache stays
    stale: that is the point. Unprotected, the delay is lifted first: a controller acting
    on a stale cache reacts to its own writes with more stale reads, and converges only
    once its cache catches up."""
    if not protect:
        sim.faults.delay_watch_events(0)
    await converged(check)


@pytest.mark.parametrize("protect", [True, False], ids=["protected", "unprotected"])
async def test_podset_on_a_stale_cache(sim: KubeSim, protect: bool) -> None:
    """Scale 0 -> 10 while the PodSet is touched every 50 ms and every watch event comes
    0.3 s late: unprotected, reconciles recreate pods their cache does not show yet (409
    AlreadyExists: the names are fixed); protected, never."""
    crd = podset.CRD
    async with operator(sim, podset.build, crd, protect=protect) as (op, client):
        uid = create_podset(sim, "burst", 0)
        sim.faults.delay_watch_events(STALE)
        scale(sim, "burst", 10)
        await touch_many(sim, "podsets", "burst", 40)
        await settle(sim, protect, lambda: podset.progress(client, NS, "burst"))
        pods = owned_pods(sim, uid)
        print(f"podset protect={protect}: {dict(op.counters)}, {len(pods)} pods")
        assert len(pods) == 10  # fixed names: never an extra pod, only 409s
        if protect:
            assert op.counters["conflicts"] == 0
        else:
            assert op.counters["conflicts"] > 0


def test_podset_decisions() -> None:
    pods = {o: _pod(f"ps-{o}") for o in (0, 1, 3, 4)}
    assert podset.first_missing(pods, 5) == 2
    assert podset.first_missing(pods, 2) is None
    assert [p.name for p in podset.excess(pods, 1)] == ["ps-4", "ps-3", "ps-1"]
    assert podset.ordinal(_pod("ps-12"), "ps") == 12
    assert podset.ordinal(_pod("ps-x"), "ps") == podset.ordinal(_pod("ps2-1"), "ps") == -1


# -- NodeAgent -----------------------------------------------------------------------------------


def create_nodeagent(sim: KubeSim, name: str) -> str:
    created = sim.create(f"{GROUP_VERSION}/nodeagents", nodeagent.nodeagent_body(name), NS)
    uid: str = created["metadata"]["uid"]
    return uid


async def test_nodeagent_follows_node_churn_and_survives_a_restart(sim: KubeSim) -> None:
    async with operator(sim, nodeagent.build, nodeagent.CRD) as (op, client):
        uid = create_nodeagent(sim, "agent")

        def check() -> Awaitable[Progress]:
            return nodeagent.progress(client, NS, "agent")

        await converged(check)
        sim.add_nodes(2)
        await converged(check)
        sim.cluster.remove_node("node-0")
        await converged(check)
        sim.restart()
        sim.add_nodes(1)
        await converged(check)
        nodes = sorted(p["spec"]["nodeName"] for p in owned_pods(sim, uid))
        assert nodes == ["node-1", "node-2", "node-3", "node-4", "node-5"]
        sim.delete(f"{GROUP_VERSION}/nodeagents", "agent", NS)
        await gone(sim, uid)
        assert op.counters["surplus"] == 0


@pytest.mark.parametrize("protect", [True, False], ids=["protected", "unprotected"])
async def test_nodeagent_on_a_stale_cache(sim: KubeSim, protect: bool) -> None:
    """Two nodes join while the NodeAgent is touched every 50 ms and every watch event
    comes 0.3 s late: unprotected, reconciles put second pods on nodes whose pod their
    cache does not show yet (generated names: no 409, silent duplicates); protected, never.
    An observer polling the API server records the most agent pods seen on one node."""
    crd = nodeagent.CRD
    async with operator(sim, nodeagent.build, crd, protect=protect) as (op, client):
        uid = create_nodeagent(sim, "agent")
        await converged(lambda: nodeagent.progress(client, NS, "agent"))
        sim.faults.delay_watch_events(STALE)
        most = 0

        async def observe() -> None:
            nonlocal most
            while True:
                pods = owned_pods(sim, uid)
                live = [p for p in pods if "deletionTimestamp" not in p["metadata"]]
                most = max(most, *Counter(p["spec"]["nodeName"] for p in live).values(), 0)
                await asyncio.sleep(0.01)

        observer = asyncio.create_task(observe())
        try:
            sim.add_nodes(2)
            await touch_many(sim, "nodeagents", "agent", 30)
            await settle(sim, protect, lambda: nodeagent.progress(client, NS, "agent"))
        finally:
            await cancel_and_wait(observer)
        extra = op.counters["creates"] - 5
        print(f"nodeagent protect={protect}: {dict(op.counters)}, most on a node {most}")
        assert len(owned_pods(sim, uid)) == 5  # converged: the extras were deleted
        if protect:
            assert (most, extra, op.counters["surplus"]) == (1, 0, 0)
        else:  # (the operator's own count of surplus pods it found on a node is the proof:
            # the observer's polls may miss a short-lived second pod on a loaded machine)
            assert extra > 0 and op.counters["surplus"] > 0, (dict(op.counters), most)


def test_nodeagent_decisions() -> None:
    a1, a2 = _pod("a-1", node="n1", created="t1"), _pod("a-2", node="n1", created="t2")
    b, c = _pod("a-3", node="n2"), _pod("a-4", node="gone")
    kept, extra, elsewhere, busy = nodeagent.place([a2, b, c, a1], ["n1", "n2", "n3"])
    assert kept == {"n1": a1, "n2": b}
    assert extra == [a2] and elsewhere == [c] and busy == set()
    going = _pod("a-5", node="n3", deleting=True)
    kept, extra, elsewhere, busy = nodeagent.place([a1, going], ["n1", "n3"])
    assert kept == {"n1": a1} and extra == elsewhere == [] and busy == {"n3"}


# -- ConfigMap mirror ----------------------------------------------------------------------------


def label_namespace(sim: KubeSim, name: str, matching: bool) -> None:
    key, _, value = configmap_mirror.TARGET_SELECTOR.partition("=")
    sim.patch("namespaces", name, {"metadata": {"labels": {key: value if matching else None}}})


async def test_configmap_mirror(sim: KubeSim) -> None:
    name = configmap_mirror.SAMPLE_NAME
    async with operator(sim, configmap_mirror.build) as (op, client):
        await Example.from_module(configmap_mirror).install(client)  # its samples

        def check() -> Awaitable[Progress]:
            return configmap_mirror.progress(client, NS, name)

        await converged(check)
        assert sim.get("configmaps", name, NS)["metadata"]["finalizers"] == [
            configmap_mirror.FINALIZER
        ]
        sim.patch("configmaps", name, {"data": {"log-level": "debug", "new": "1"}}, NS)
        await converged(check)
        assert sim.get("configmaps", name, "team-a")["data"]["log-level"] == "debug"
        label_namespace(sim, "team-b", matching=False)
        await converged(check)
        assert not sim.list("configmaps", "team-b")
        sim.restart()
        label_namespace(sim, "team-c", matching=True)
        sim.patch("configmaps", name, {"data": {"region": "edited by hand"}}, "team-a")
        await converged(check)
        sim.delete("configmaps", name, NS)
        await converged(check)  # the copies are gone, then the finalizer, then the source
        assert not sim.list("configmaps", NS, field_selector=f"metadata.name={name}")
        assert op.counters["conflicts"] == 0


# -- what an operator imports -------------------------------------------------------------------

NOT_IN_AN_OPERATOR = (
    "kubesim",
    "aioinformer.testing",
    "aioinformer._harness",
    "aioinformer._cli",
    "aiorwlock",
)
"""What importing the library or a production operator must not load: the embedded server,
the testing kit, the benchmark harness and demo, the command line, the baseline's lock."""


@pytest.mark.parametrize(
    "module", ["aioinformer", "website", "podset", "nodeagent", "configmap_mirror"]
)
def test_importing_an_operator_loads_the_library_only(module: str, tmp_path: Path) -> None:
    """In a fresh interpreter (the examples directory on its path, as ``python
    examples/website.py`` has it): the library is loaded, and nothing of
    :data:`NOT_IN_AN_OPERATOR`."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        f"import {module}; print(json.dumps(sorted(sys.modules)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLES)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    loaded = json.loads(run.stdout)
    assert "aioinformer._runtime.manager" in loaded  # (it did import the library)
    unwanted = [
        name
        for name in loaded
        if any(name == top or name.startswith(f"{top}.") for top in NOT_IN_AN_OPERATOR)
    ]
    assert unwanted == []


# -- as a program --------------------------------------------------------------------------------


async def test_podset_once_as_a_program() -> None:
    result = await run_python(str(EXAMPLES / "podset.py"), "--once", "--timeout", "30")
    assert result.code == 0, result.out + result.err
    assert "podset: converged" in result.out


def _pod(name: str, *, node: str = "", created: str = "", deleting: bool = False) -> Any:
    pod = pod_object(name, "ns", node=node, created=created)
    if deleting:
        meta = msgspec.structs.replace(pod.metadata, deletion_timestamp="2024-01-01T00:00:00Z")
        pod = msgspec.structs.replace(pod, metadata=meta)
    return pod
