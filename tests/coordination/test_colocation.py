"""Children with their owner, on KubeSim through real HTTP: the client labels what it creates
with an owner (grandchildren with the root's bucket) and apply and update keep the label;
the ShardLabeler labels the children that exist without it (those another client made: a
StatefulSet-shaped owner's pods) and leaves the rest alone; and a replica's label-selected
informer holds exactly the children of the primaries its ShardSelector keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aioinformer import (
    Client,
    InformerFactory,
    KubeObject,
    Manager,
    ShardLabeler,
    TransportError,
    WriteRequest,
    bucket_label,
    bucket_label_selector,
    buckets_selector,
    set_owner,
    shard_buckets,
    uid_bucket,
)
from aioinformer._core.shardbuckets import SHARD_LABEL
from aioinformer.testing import KubeSim, eventually
from tests.support import configmap, pod, watch_options


@pytest.fixture
async def client(api: Any) -> AsyncIterator[Client]:
    yield Client(api, field_manager="tests")


def statefulset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    }


def owned_by(
    body: dict[str, Any], owner: dict[str, Any], controller: bool = True
) -> dict[str, Any]:
    """``body`` with an ownerReference to ``owner`` written by hand (as another client)."""
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": controller,
        }
    ]
    return body


def label(sim: KubeSim, resource: str, name: str) -> str | None:
    labels: dict[str, str] = sim.get(resource, name, "default")["metadata"].get("labels") or {}
    return labels.get(SHARD_LABEL)


def bucket_of_uid(obj: KubeObject | dict[str, Any]) -> str:
    uid = obj.uid if isinstance(obj, KubeObject) else obj["metadata"]["uid"]
    return bucket_label(uid_bucket(uid))


async def test_created_children_carry_the_owners_bucket_and_grandchildren_the_roots(
    sim: KubeSim, client: Client
) -> None:
    root = await client.create({**configmap("root"), "metadata": {"name": "root",
                                                                   "namespace": "default"}})  # fmt: skip
    child = await client.create(statefulset("child"), owner=root)
    assert child.labels[SHARD_LABEL] == bucket_of_uid(root)
    grandchild = await client.create(pod("child-0", app="child"), owner=child)
    assert grandchild.labels == {"app": "child", SHARD_LABEL: bucket_of_uid(root)}
    assert bucket_of_uid(child) != bucket_of_uid(root) or bucket_of_uid(
        grandchild
    ) != bucket_of_uid(root), "the uids' buckets differ somewhere (else the test shows nothing)"
    applied = await client.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {}},
        owner=child,
    )
    assert applied.labels[SHARD_LABEL] == bucket_of_uid(root)
    again = await client.apply(  # a second apply (the same manager) keeps it
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
         "data": {"v": "2"}},
        owner=child,
    )  # fmt: skip
    assert again.labels[SHARD_LABEL] == bucket_of_uid(root)
    body = grandchild.to_dict()
    body["metadata"]["labels"]["app"] = "other"
    updated = await client.update(body)
    assert updated.labels[SHARD_LABEL] == bucket_of_uid(root)
    patched = await client.patch(updated, {"metadata": {"labels": {"app": "x"}}})
    assert patched.labels[SHARD_LABEL] == bucket_of_uid(root)
    made, op = await client.create_or_update(  # controller-runtime's way: set_owner in mutate
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cou",
                                                               "namespace": "default"}},
        lambda b: set_owner(b, child),
    )  # fmt: skip
    assert op == "created" and made.labels[SHARD_LABEL] == bucket_of_uid(root)


async def test_the_labeler_labels_existing_children_and_leaves_the_rest(
    sim: KubeSim, client: Client
) -> None:
    roots = [sim.create("configmaps", configmap(f"root{i}"), "default") for i in range(3)]
    sets = [sim.create("statefulsets", owned_by(statefulset(f"s{i}"), r), "default")
            for i, r in enumerate(roots)]  # fmt: skip
    for i, s in enumerate(sets):  # the pods another controller made, unlabeled
        for j in range(3):
            sim.create("pods", owned_by(pod(f"s{i}-{j}"), s), "default")
    sim.create("pods", pod("loose"), "default")  # no owner at all
    sim.create("pods", owned_by(pod("plain-owner"), roots[0], controller=False), "default")
    labeled = sim.create("pods", owned_by(pod("labeled", **{SHARD_LABEL: "ff"}), roots[0]),
                         "default")  # fmt: skip
    labeler = ShardLabeler(client, [("apps/v1", "statefulsets"), ("v1", "pods")])
    async with labeler:
        late = sim.create("pods", owned_by(pod("late"), sets[1]), "default")

        def done() -> bool:
            return labeler.statistics().labeled == 3 + 9 + 1

        await eventually(done, "every child labeled")
        for i, root in enumerate(roots):
            assert label(sim, "statefulsets", f"s{i}") == bucket_of_uid(root)
            for j in range(3):
                assert label(sim, "pods", f"s{i}-{j}") == bucket_of_uid(root)
        assert label(sim, "pods", "late") == bucket_of_uid(roots[1]) and late
        assert label(sim, "pods", "loose") is None
        assert label(sim, "pods", "plain-owner") is None
        assert label(sim, "pods", "labeled") == "ff" and labeled
        await eventually(lambda: labeler.statistics().without_controller == 2, "counted")
        stats = labeler.statistics()
        assert (stats.owner_gone, stats.unplaced, stats.errors) == (0, 0, 0)
        unlabeled = labeler.informers[1]  # (the labelled ones leave it as their event arrives)
        await eventually(
            lambda: {o.name for o in unlabeled.snapshot().list()} == {"loose", "plain-owner"},
            "only the pods without a controller left unlabeled in the labeler's cache",
        )
    again = ShardLabeler(client, [("apps/v1", "statefulsets"), ("v1", "pods")])
    async with again:  # idempotent: nothing left to do
        await eventually(lambda: again.statistics().without_controller == 2, "looked")
    assert again.statistics().labeled == 0


async def test_the_labeler_leaves_a_child_whose_owner_is_gone() -> None:
    async with KubeSim(controllers=False) as sim, sim.api_client() as api:
        root = sim.create("configmaps", configmap("root"), "default")
        sim.create("pods", owned_by(pod("orphan"), root), "default")
        sim.delete("configmaps", "root", "default")
        sim.create("configmaps", configmap("root"), "default")  # another uid, same name
        labeler = ShardLabeler(Client(api), [("v1", "pods")])
        async with labeler:
            await eventually(lambda: labeler.statistics().owner_gone == 1, "owner gone")
        assert label(sim, "pods", "orphan") is None
        assert labeler.statistics().labeled == 0


async def test_the_manager_runs_a_labeler_and_declares_its_patches(sim: KubeSim, api: Any) -> None:
    root = sim.create("configmaps", configmap("root"), "default")
    sim.create("pods", owned_by(pod("p"), root), "default")
    manager = Manager(api, metrics_port=None, blocked_loop_threshold=None)
    labeler = manager.shard_labeler([("v1", "pods")])
    assert ("", "pods", ("patch",), None) in manager.required_permissions
    async with manager:
        await eventually(lambda: label(sim, "pods", "p") == bucket_of_uid(root), "labeled")
    assert labeler.statistics().labeled == 1 and manager.shard_labelers == [labeler]


@pytest.mark.parametrize("seed", [1, 2])
async def test_a_replicas_label_selected_children_are_those_of_its_primaries(
    sim: KubeSim, api: Any, client: Client, seed: int
) -> None:
    rnd = random.Random(seed)
    n = rnd.randint(2, 4)
    buckets = list(range(256))
    rnd.shuffle(buckets)  # a random partition of the buckets, not runs
    parts = [frozenset(buckets[i::n]) for i in range(n)]
    roots = [
        await client.create({**configmap(f"r{i}"), "metadata": {"name": f"r{i}",
                                                                 "namespace": "default"}})
        for i in range(12)
    ]  # fmt: skip
    family: dict[str, str] = {}  # child uid -> its root's uid
    for i, root in enumerate(roots):
        s = await client.create(statefulset(f"s{i}"), owner=root)
        family[s.uid] = root.uid
        for j in range(2):  # pods "the StatefulSet controller" made: no label until labeled
            p = sim.create("pods", owned_by(pod(f"s{i}-{j}"), s.to_dict()), "default")
            family[p["metadata"]["uid"]] = root.uid
    factories = [InformerFactory(api, watch_options=watch_options(), pipeline="loop")
                 for _ in parts]  # fmt: skip
    replicas = [
        (
            f.informer("v1", "configmaps", namespace="default", shards=buckets_selector(b)),
            f.informer("apps/v1", "statefulsets", namespace="default",
                       label_selector=bucket_label_selector(b)),
            f.informer("v1", "pods", namespace="default", label_selector=bucket_label_selector(b)),
        )
        for f, b in zip(factories, parts, strict=True)
    ]  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        for f in factories:
            await stack.enter_async_context(f)
            await f.wait_for_sync(timeout=10)
        await stack.enter_async_context(ShardLabeler(client, [("v1", "pods")]))

        def children(r: int) -> set[str]:
            return {o.uid for inf in replicas[r][1:] for o in inf.snapshot().list()}

        def placed() -> bool:
            return sum(len(children(r)) for r in range(n)) == len(family)

        await eventually(placed, "every child in a replica")
        for r in range(n):
            primaries = {o.uid for o in replicas[r][0].snapshot().list()}
            assert primaries == {x.uid for x in roots if buckets_selector(parts[r]).matches(
                x.uid)}  # fmt: skip
            assert children(r) == {c for c, root in family.items() if root in primaries}


class FailFirstPatch:
    """A write hook that refuses the first patch as if the connection had failed."""

    def __init__(self) -> None:
        self.refused = 0

    async def before(self, request: WriteRequest) -> object:
        if request.verb == "patch" and not self.refused:
            self.refused += 1
            raise TransportError("connection reset", verb="patch", resource="pods",
                                 namespace=request.namespace)  # fmt: skip
        return None

    def check(self, request: WriteRequest, token: object) -> None:
        pass

    async def after(self, request: WriteRequest, result: KubeObject | None, token: object) -> None:
        pass

    def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
        pass


@pytest.mark.looptime
async def test_a_failed_patch_is_counted_and_retried_after_the_delay(
    sim: KubeSim, api: Any
) -> None:
    root = sim.create("configmaps", configmap("root"), "default")
    sim.create("pods", owned_by(pod("p"), root), "default")
    hook = FailFirstPatch()
    labeler = ShardLabeler(Client(api, hooks=[hook]), [("v1", "pods")], retry_delay=30.0)
    loop = asyncio.get_running_loop()
    async with labeler:
        await eventually(lambda: labeler.statistics().errors == 1, "the refused patch")
        failed_at = loop.time()
        await eventually(
            lambda: labeler.statistics().labeled == 1, "labeled", timeout=60, interval=0.5
        )
        assert loop.time() - failed_at >= 29.0  # (virtual time: the retry waited its delay)
    assert hook.refused == 1 and label(sim, "pods", "p") == bucket_of_uid(root)


async def test_namespace_sharding_puts_children_with_their_owner_without_a_label(
    sim: KubeSim, api: Any, client: Client
) -> None:
    namespaces = ["payments", "search", "billing", "mail", "auth", "media", "docs", "chat"]
    family: dict[str, str] = {}  # child uid -> owner uid
    for ns in namespaces:
        sim.create("namespaces", {"metadata": {"name": ns}})
        owner = await client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o", "namespace": ns}}
        )
        child = await client.create(pod("p"), owner=owner)  # (in the owner's namespace)
        family[child.uid] = owner.uid
    parts = [shard_buckets(i, 2) for i in range(2)]
    factories = [InformerFactory(api, watch_options=watch_options(), pipeline="loop")
                 for _ in parts]  # fmt: skip
    replicas = [
        (
            f.informer("v1", "configmaps", namespace=None, shards=buckets_selector(b, "namespace")),
            f.informer("v1", "pods", namespace=None, shards=buckets_selector(b, "namespace")),
        )
        for f, b in zip(factories, parts, strict=True)
    ]
    async with factories[0], factories[1]:
        for f in factories:
            await f.wait_for_sync(timeout=10)
        held = [
            ({o.uid for o in owners.snapshot().list()}, {o.uid for o in pods.snapshot().list()})
            for owners, pods in replicas
        ]
    assert all(held_owners for held_owners, _ in held), "both replicas hold some namespaces"
    for held_owners, held_pods in held:
        assert held_pods == {c for c, o in family.items() if o in held_owners}
    assert held[0][1] | held[1][1] == set(family) and not held[0][1] & held[1][1]


async def test_a_labeler_labels_only_the_buckets_it_owns_and_the_rest_after_recheck(
    sim: KubeSim, client: Client
) -> None:
    roots = [sim.create("configmaps", configmap(f"root{i}"), "default") for i in range(16)]
    for i, root in enumerate(roots):
        sim.create("pods", owned_by(pod(f"p{i}"), root), "default")
    mine = set(shard_buckets(0, 2))
    owned: set[int] = set(mine)
    labeler = ShardLabeler(client, [("v1", "pods")], owns_bucket=owned.__contains__)
    theirs = [r for r in roots if uid_bucket(r["metadata"]["uid"]) not in mine]
    assert theirs and len(theirs) < len(roots), "both halves have owners"
    async with labeler:
        await eventually(
            lambda: (
                labeler.statistics().labeled == len(roots) - len(theirs)
                and labeler.statistics().others == len(theirs)
            ),
            "its half labeled, the other half counted",
        )
        for i, root in enumerate(roots):
            expected = None if root in theirs else bucket_of_uid(root)
            assert label(sim, "pods", f"p{i}") == expected
        owned.update(range(256))  # it gains the other buckets
        labeler.recheck()
        await eventually(lambda: labeler.statistics().labeled == len(roots), "all labeled")
    assert labeler.statistics().others == 0
    for i, root in enumerate(roots):
        assert label(sim, "pods", f"p{i}") == bucket_of_uid(root)


@pytest.mark.parametrize("how", ["create_or_update", "create_or_patch"])
async def test_a_mutate_that_sets_the_labels_whole_keeps_the_bucket_label(
    sim: KubeSim, client: Client, how: str
) -> None:
    root = await client.create({**configmap("root"), "metadata": {"name": "root",
                                                                   "namespace": "default"}})  # fmt: skip
    await client.create(pod("p"), owner=root)
    other = await client.create({**configmap("other"), "metadata": {"name": "other",
                                                                     "namespace": "default"}})  # fmt: skip

    def relabel(body: dict[str, Any]) -> None:
        body["metadata"]["labels"] = {"app": "new"}

    ref = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    made, op = await getattr(client, how)(ref, relabel)
    assert op == "updated" and made.labels == {"app": "new", SHARD_LABEL: bucket_of_uid(root)}

    def adopt(body: dict[str, Any]) -> None:  # a new controller: its bucket, set_owner's
        body["metadata"]["labels"] = {"app": "adopted"}
        set_owner(body, other)

    adopted, _ = await getattr(client, how)(ref, adopt)
    assert adopted.labels == {"app": "adopted", SHARD_LABEL: bucket_of_uid(other)}
