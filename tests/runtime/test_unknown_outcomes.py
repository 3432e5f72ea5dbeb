"""A write whose answer is lost is "maybe done", never "not done": over real HTTP through
a proxy that forwards the write to KubeSim (which applies it) and then cuts the connection
without the answer, with the informers' watches stalled so the caches cannot show what
the write did. A create is not made twice (by generateName, or the PodSet example's
named pods), a delete is not sent again, an update and a finalizer removal are seen by the
next reconcile, and a write cancelled while in flight counts as maybe done too.

On virtual time (looptime): the manager, its informers (on the loop) and KubeSim share the
loop's clock, so backoffs, freshness timeouts and expectation rechecks take their real
values."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from aioinformer import (
    ControllerOptions,
    DecodeError,
    Informer,
    KubeObject,
    Manager,
    NotFound,
    Result,
    ServerError,
    ServerTimeout,
    TransportError,
    finalizer,
)
from aioinformer._runtime.outcomes import outcome_unknown
from aioinformer._runtime.target import module_from_file
from aioinformer.testing import KubeSim, eventually, install_crd
from tests.coordination.proxy import FaultProxy
from tests.support import REPO, configmap, pod

pytestmark = pytest.mark.looptime

NS = "default"
JSON = "application/json"
STALLED = 30.0
"""Virtual seconds the watches stay stalled after the lost answer: many backoffs long."""
podset = module_from_file(REPO / "examples" / "podset.py")


@contextlib.asynccontextmanager
async def through(sim: KubeSim) -> AsyncIterator[tuple[FaultProxy, Manager]]:
    """A manager whose every request goes through a fault proxy (informers on the loop,
    its clock the loop's)."""
    loop = asyncio.get_running_loop()
    async with FaultProxy(sim) as proxy, proxy.api_client() as api:
        yield proxy, Manager(api, pipeline="loop", clock=loop.time, cache_sync_timeout=30)


def owned(inf: Informer, owner: KubeObject) -> list[KubeObject]:
    return [
        o for o in inf.snapshot().list() if o.controller_ref and o.controller_ref.uid == owner.uid
    ]


def owners_and(m: Manager, plural: str) -> tuple[Informer, Informer]:
    """The informers of the owners (ConfigMaps) and of their children (``plural``)."""
    return m.informer("v1", "configmaps", namespace=NS), m.informer("v1", plural, namespace=NS)


def one_child_each(
    m: Manager,
    go: asyncio.Event,
    plural: str,
    child: dict[str, Any],
    options: ControllerOptions | None = None,
) -> tuple[Informer, Informer]:
    """A ReplicaSet-like controller (once ``go`` is set): every ConfigMap owns one object
    of ``plural``, made from ``child`` by generateName. Returns the two informers."""
    owners, children = owners_and(m, plural)

    async def reconcile(key: str) -> Result | None:
        await go.wait()
        owner = owners.snapshot().get(key)
        if owner is not None and not owned(children, owner):
            body = {**child, "metadata": {"generateName": f"{owner.name}-"}}
            await m.client.create(body, owner=owner)
        return None

    m.controller("one-each", reconcile, primary=owners, owns=[children], options=options)
    return owners, children


def server_children(sim: KubeSim, plural: str, owner_uid: str) -> list[str]:
    return sorted(
        o["metadata"]["name"]
        for o in sim.list(plural, NS)
        if any(r.get("uid") == owner_uid for r in o["metadata"].get("ownerReferences", ()))
    )


async def lose_one_answer(
    sim: KubeSim, proxy: FaultProxy, go: asyncio.Event, method: str, path: str, n: int = 1
) -> None:
    """Stall the watches, lose the answer of the next ``n`` ``method`` requests to
    ``path``, let the reconcile go; once the answers are lost and :data:`STALLED` seconds
    passed, let the watches go on."""
    sim.faults.stall_watches()
    proxy.lose_answers(n, method, path)
    go.set()
    await eventually(lambda: len(proxy.lost) == n, "the answer lost", timeout=30)
    await asyncio.sleep(STALLED)
    sim.faults.unstall_watches()


def test_what_is_an_unknown_outcome() -> None:
    about = {"verb": "create", "resource": "pods", "namespace": NS}
    assert outcome_unknown(TransportError("cut", **about))
    assert outcome_unknown(DecodeError("a 201 that is not JSON"))
    assert outcome_unknown(asyncio.CancelledError())
    assert outcome_unknown(ServerTimeout(504, "Timeout", "slow", **about))
    assert outcome_unknown(ServerError(502, "BadGateway", "proxy", **about))
    assert outcome_unknown(ServerError(500, "ServerTimeout", "try again", **about))
    assert not outcome_unknown(ServerError(500, "InternalError", "webhook refused", **about))
    assert not outcome_unknown(NotFound(404, "NotFound", "gone", **about))


OWNERS = 10


async def test_a_create_by_generate_name_whose_answer_was_lost_is_not_made_twice(
    sim: KubeSim,
) -> None:
    """A ReplicaSet-like controller wants one pod per owner and creates it by
    generateName; for each of :data:`OWNERS` owners the create's answer is lost: its
    expectation stays until the owned informer shows the pod, so each owner gets exactly
    one pod (two each, when a lost answer was taken for a failure)."""
    go = asyncio.Event()
    async with through(sim) as (proxy, m):
        _, pods = one_child_each(m, go, "pods", pod(""))
        uids = [
            sim.create("configmaps", configmap(f"rs{i}"), NS)["metadata"]["uid"]
            for i in range(OWNERS)
        ]
        async with m:
            await lose_one_answer(sim, proxy, go, "POST", "/pods", n=OWNERS)
            await eventually(
                lambda: len(pods.snapshot().list()) >= OWNERS, "the pods seen", timeout=60
            )
            await asyncio.sleep(5)  # any further reconcile has run
        per_owner = [len(server_children(sim, "pods", uid)) for uid in uids]
    print(f"lost create answers, generateName: pods per owner {per_owner}")
    assert per_owner == [1] * OWNERS


async def test_the_podset_example_with_a_lost_create_answer(sim: KubeSim) -> None:
    """The PodSet example creates web-0's pod; the answer is lost: no second create of it
    (no 409 AlreadyExists), and the PodSet converges to exactly its 3 pods."""
    async with through(sim) as (proxy, m):
        await install_crd(m.client, podset.CRD)
        op = podset.build(m)
        async with m:
            # the first pod's create loses its answer, and the watches stall as it goes
            proxy.lose_answers(1, "POST", "/pods", before=sim.faults.stall_watches)
            created = sim.create(
                f"{podset.GROUP_VERSION}/podsets", podset.podset_body("web", 3), NS
            )
            await eventually(lambda: len(proxy.lost) == 1, "the answer lost", timeout=30)
            await asyncio.sleep(STALLED)
            sim.faults.unstall_watches()
            uid = created["metadata"]["uid"]
            await eventually(
                lambda: len(server_children(sim, "pods", uid)) == 3, "3 pods", timeout=120
            )
            await asyncio.sleep(5)
        children = server_children(sim, "pods", uid)
    print(f"lost create answer, PodSet: {dict(op.counters)}, pods {children}")
    assert children == ["web-0", "web-1", "web-2"]
    assert op.counters["conflicts"] == 0, op.counters


@pytest.mark.parametrize("lost", [1, 2], ids=["retried-404", "no-answer"])
async def test_a_delete_whose_answer_was_lost_is_not_sent_again(sim: KubeSim, lost: int) -> None:
    """The owner wants no child; its child's delete loses its answer (aiohttp resends an
    idempotent request once: that one gets 404, or loses its answer too). The deletion
    stays expected until the owned informer sees the child go: the reconcile deletes it
    once."""
    go = asyncio.Event()
    deletes: list[str] = []
    async with through(sim) as (proxy, m):
        owners, secrets = owners_and(m, "secrets")

        async def reconcile(key: str) -> Result | None:
            await go.wait()
            owner = owners.snapshot().get(key)
            for child in owned(secrets, owner) if owner is not None else ():
                deletes.append(child.name)
                await m.client.delete(child, missing_ok=True)
            return None

        ctl = m.controller("gc", reconcile, primary=owners, owns=[secrets])
        created = sim.create("configmaps", configmap("owner"), NS)
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
               "uid": created["metadata"]["uid"], "controller": True}  # fmt: skip
        child = {"metadata": {"name": "child", "ownerReferences": [ref]}, "data": {}}
        sim.create("secrets", child, NS)
        async with m:
            await eventually(lambda: secrets.snapshot().get(f"{NS}/child") is not None, "seen")
            await lose_one_answer(sim, proxy, go, "DELETE", "/secrets/child", n=lost)
            await eventually(
                lambda: secrets.snapshot().get(f"{NS}/child") is None, "gone", timeout=60
            )
            await eventually(lambda: ctl.expectations.satisfied(f"{NS}/owner"), "settled")
            await asyncio.sleep(5)
    print(f"lost delete answer ({lost} lost): {len(deletes)} deletes")
    assert deletes == ["child"]


COUNTS: dict[str, tuple[str, str]] = {
    # write: (method, where the count is kept)
    "patch": ("PATCH", "metadata.annotations.n"),
    "update": ("PUT", "metadata.annotations.n"),
    "patch_status": ("PATCH", "status.replicas"),
    "update_status": ("PUT", "status.replicas"),
}


async def _count_up(m: Manager, obj: KubeObject, write: str, n: int) -> None:
    """Write count ``n`` into ``obj`` with the client method ``write``."""
    if write == "patch":
        await m.client.patch(obj, {"metadata": {"annotations": {"n": str(n)}}})
    elif write == "patch_status":
        await m.client.patch_status(obj, {"status": {"replicas": n}})
    else:  # a PUT conditional on the cached resourceVersion
        body = obj.to_dict()
        if write == "update":
            body["metadata"].setdefault("annotations", {})["n"] = str(n)
            await m.client.update(body)
        else:
            body["status"] = {"replicas": n}
            await m.client.update_status(body)


@pytest.mark.parametrize("write", list(COUNTS))
async def test_a_write_whose_answer_was_lost_is_seen_by_the_next_reconcile(
    sim: KubeSim, write: str
) -> None:
    """A reconcile counts up to 3 in a PodSet (an annotation by merge patch or update, or
    its status by the status subresource); the first write's answer is lost (a PATCH is
    not resent; aiohttp resends a PUT once, and the resend is answered 409 Conflict: the
    first one was applied). The next reconcile reads the count the lost write left (1),
    not the stale 0: every count is written once (on a stale cache a patch writes 1 again,
    an update gets 409 Conflicts until the cache catches up)."""
    go = asyncio.Event()
    written: list[int] = []
    method, where = COUNTS[write]
    async with through(sim) as (proxy, m):
        await install_crd(m.client, podset.CRD)
        sets = m.informer(podset.GROUP_VERSION, "podsets", namespace=NS)

        async def reconcile(key: str) -> Result | None:
            await go.wait()
            obj = sets.snapshot().get(key)
            n = int(obj.field(where, 0)) if obj is not None else 3
            if n >= 3:
                return None
            written.append(n + 1)
            await _count_up(m, obj, write, n + 1)
            return Result(requeue_after=0.1)

        m.controller("count", reconcile, primary=sets, options=ControllerOptions())
        sim.create(f"{podset.GROUP_VERSION}/podsets", podset.podset_body("c", 1), NS)
        async with m:
            await sets.wait_for_sync(10)
            await lose_one_answer(sim, proxy, go, method, "/podsets/c")
            await eventually(lambda: written[-1:] == [3], "counted to 3", timeout=120)
            await asyncio.sleep(5)
    print(f"lost {write} answer: counts written {written}")
    assert written == [1, 2, 3]


async def test_a_finalizer_removal_whose_answer_was_lost_runs_the_cleanup_once(
    sim: KubeSim,
) -> None:
    """The object is being deleted; the cleanup ran and the finalizer's removal (which
    lets the object go) loses its answer. The next reconcile waits until the cache no
    longer holds the object, instead of running the cleanup again on the stale copy."""
    go = asyncio.Event()
    cleanups: list[str] = []
    name = "aioinformer.dev/test"
    async with through(sim) as (proxy, m):
        cms = m.informer("v1", "configmaps", namespace=NS)

        async def cleanup(obj: KubeObject) -> None:
            await go.wait()
            cleanups.append(obj.name)

        async def reconcile(key: str) -> Result | None:
            obj = cms.snapshot().get(key)
            if obj is None:
                return None
            return await finalizer(m.client, obj, name, apply=_nothing, cleanup=cleanup)

        m.controller("fin", reconcile, primary=cms)
        sim.create("configmaps", configmap("f"), NS)
        async with m:
            await eventually(lambda: _has(cms, "f", name), "the finalizer added")
            sim.delete("configmaps", "f", NS)
            await eventually(lambda: _deleting(cms, "f"), "the deletion seen")
            await lose_one_answer(sim, proxy, go, "PATCH", "/configmaps/f")
            await eventually(lambda: cms.snapshot().get(f"{NS}/f") is None, "gone", timeout=60)
            await asyncio.sleep(5)
    print(f"lost finalizer removal answer: {len(cleanups)} cleanups")
    assert cleanups == ["f"]


async def test_a_create_cancelled_in_flight_is_maybe_done(sim: KubeSim) -> None:
    """A reconcile times out (``reconcile_timeout``) while its create is in flight; the
    server applied it: the controller does not make a second one."""
    go = asyncio.Event()
    async with through(sim) as (proxy, m):
        secret = {"apiVersion": "v1", "kind": "Secret"}
        timeout = ControllerOptions(reconcile_timeout=1.0)
        owners, secrets = one_child_each(m, go, "secrets", secret, timeout)
        created = sim.create("configmaps", configmap("o"), NS)
        async with m:
            await owners.wait_for_sync(10)
            sim.faults.stall_watches()
            proxy.delay_answers(1, "POST", "/secrets", 3.0)
            go.set()
            await eventually(lambda: len(proxy.delayed) == 1, "the slow answer", timeout=30)
            await asyncio.sleep(STALLED)
            sim.faults.unstall_watches()
            await eventually(lambda: bool(secrets.snapshot().list()), "seen", timeout=60)
            await asyncio.sleep(5)
        children = server_children(sim, "secrets", created["metadata"]["uid"])
    print(f"create cancelled in flight: {len(children)} secrets for one owner")
    assert len(children) == 1, children


BOGUS = orjson.dumps(
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "other", "namespace": NS, "resourceVersion": "999999", "uid": "u"}}
)  # fmt: skip
"""A 200 that is not the object written (a proxy, a misrouted request), the write not
applied."""


async def test_a_create_answered_with_another_object_is_not_taken_as_done(
    sim: KubeSim,
) -> None:
    """A named child's create is answered 200 with another ConfigMap (not applied): its
    expectation is not kept until the ttl (300 s) for a child that was never made; what
    the server holds is read, and the child is created within seconds, once."""
    async with through(sim) as (_, m):
        owners, secrets = owners_and(m, "secrets")

        async def reconcile(key: str) -> Result | None:
            owner = owners.snapshot().get(key)
            if owner is not None and not owned(secrets, owner):
                body = {"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": f"{owner.name}-child"}}  # fmt: skip
                await m.client.create(body, owner=owner)
            return None

        m.controller("named", reconcile, primary=owners, owns=[secrets])
        sim.faults.respond_next(1, BOGUS, content_type=JSON, path_contains="/secrets",
                                verbs=["create"])  # fmt: skip
        created = sim.create("configmaps", configmap("o"), NS)
        uid = created["metadata"]["uid"]
        async with m:
            await eventually(lambda: bool(server_children(sim, "secrets", uid)), "created")
            await asyncio.sleep(5)
        children = server_children(sim, "secrets", uid)
    assert children == ["o-child"]


async def test_a_patch_answered_with_another_object_is_not_taken_as_done(
    sim: KubeSim,
) -> None:
    """A patch is answered 200 with another ConfigMap at a resourceVersion the server
    never reaches (not applied): the key does not wait for the informers to reach it (it
    would stall for good); the object is read, and the count goes on."""
    written: list[int] = []
    async with through(sim) as (_, m):
        cms = m.informer("v1", "configmaps", namespace=NS)

        async def reconcile(key: str) -> Result | None:
            obj = cms.snapshot().get(key)
            n = int(obj.annotations.get("n", "0")) if obj is not None else 3
            if n >= 3:
                return None
            written.append(n + 1)
            await m.client.patch(obj, {"metadata": {"annotations": {"n": str(n + 1)}}})
            return Result(requeue_after=0.1)

        m.controller("count", reconcile, primary=cms)
        sim.faults.respond_next(1, BOGUS, content_type=JSON, path_contains="/configmaps/c",
                                verbs=["patch"])  # fmt: skip
        sim.create("configmaps", configmap("c"), NS)
        async with m:
            await eventually(lambda: written[-1:] == [3], "counted to 3", timeout=60)
    assert written == [1, 1, 2, 3]  # the bogus answer's count was not applied


async def test_a_write_the_server_never_tells_about_is_given_up_after_the_ttl(
    sim: KubeSim,
) -> None:
    """A named create loses its answer and every read of that name loses its answer too:
    the key is held back (counted as ``unsettled``) for ``expectations_ttl`` seconds, then
    reconciled anyway (the cache shows the child by then: no second one)."""
    ttl = 20.0
    loop = asyncio.get_running_loop()
    runs: list[float] = []
    async with through(sim) as (proxy, m):
        owners, secrets = owners_and(m, "secrets")

        async def reconcile(key: str) -> Result | None:
            owner = owners.snapshot().get(key)
            if owner is None:
                return None
            runs.append(loop.time())
            if not owned(secrets, owner):
                body = {"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": f"{owner.name}-child"}}  # fmt: skip
                await m.client.create(body, owner=owner)
            return None

        options = ControllerOptions(expectations_ttl=ttl)
        ctl = m.controller("named", reconcile, primary=owners, owns=[secrets], options=options)
        proxy.lose_answers(1, "POST", "/secrets")
        proxy.lose_answers(10_000, "GET", "/secrets/o-child")
        created = sim.create("configmaps", configmap("o"), NS)
        async with m:
            await eventually(lambda: len(proxy.lost) >= 2, "the create and a read lost")
            lost_at = loop.time()
            await eventually(lambda: len(runs) == 2, "reconciled again", timeout=4 * ttl)
            reads = len(proxy.lost)
            await asyncio.sleep(5)
            assert len(proxy.lost) == reads, "still reading after giving up"
        children = server_children(sim, "secrets", created["metadata"]["uid"])
    print(f"unanswered reads: reconciled again after {runs[1] - lost_at:g}s, {reads} reads")
    assert runs[1] - lost_at >= ttl - 1
    assert ctl.stale_reads_avoided >= 2
    assert children == ["o-child"]


async def _nothing(_obj: KubeObject) -> None:
    return None


def _has(inf: Informer, name: str, fin: str) -> bool:
    obj = inf.snapshot().get(f"{NS}/{name}")
    return obj is not None and fin in obj.finalizers


def _deleting(inf: Informer, name: str) -> bool:
    obj = inf.snapshot().get(f"{NS}/{name}")
    return obj is not None and obj.deletion_timestamp is not None
