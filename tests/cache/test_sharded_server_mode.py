"""Sharded informers against KubeSim with the ShardedListAndWatch gate on (KEP-5866, as
v1.36 serves it): the server filters, the informer runs in server mode (the list echoes
its selector), and the client and the server agree on every object's shard, by uid and by
namespace, through lists, watches and a rescope; a custom resource's list carries no echo
(as v1.36 serves it), so its informer filters itself and keeps the same objects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aioinformer import Client, Informer, InformerFactory, ShardSelector, shard_hash
from aioinformer.testing import KubeSim, eventually, install_crd
from tests.support import pod, watch_options

QUARTERS = [ShardSelector.of_buckets([b], 4) for b in range(4)]
NAMESPACES = [f"team-{i}" for i in range(12)]


@pytest.fixture
async def gated() -> AsyncIterator[KubeSim]:
    async with KubeSim(feature_gates={"ShardedListAndWatch": True}) as sim:
        yield sim


def cached(inf: Informer) -> set[str]:
    return {o.key for o in inf.snapshot().list()}


def keys(sim: KubeSim, sel: ShardSelector, namespaces: list[str]) -> set[str]:
    """The pods' keys ``sel`` selects, by the client's hash of their uid or namespace."""
    out = set()
    for ns in namespaces:
        for p in sim.list("pods", ns):
            meta = p["metadata"]
            value = meta["uid"] if sel.field == "uid" else meta["namespace"]
            if sel.contains(shard_hash(value)):
                out.add(f"{ns}/{meta['name']}")
    return out


@pytest.mark.parametrize("field", ["uid", "namespace"])
async def test_the_server_filters_and_client_and_server_agree_on_every_shard(
    gated: KubeSim, field: str
) -> None:
    for ns in NAMESPACES:
        gated.create("namespaces", {"metadata": {"name": ns}})
        for i in range(6):
            gated.create("pods", pod(f"p{i}"), ns)
    selectors = [ShardSelector.of_buckets([b], 4, field) for b in range(4)]  # type: ignore[arg-type]
    async with gated.api_client() as api:
        factories = [InformerFactory(api, watch_options=watch_options()) for _ in selectors]
        infs = [
            f.informer("v1", "pods", shards=sel)
            for f, sel in zip(factories, selectors, strict=True)
        ]
        async with factories[0], factories[1], factories[2], factories[3]:
            for f in factories:
                await f.wait_for_sync(timeout=10)
            for ns in NAMESPACES[:4]:  # watch events: new pods, a deletion, an update
                gated.create("pods", pod("late"), ns)
                gated.delete("pods", "p0", ns)
                gated.patch("pods", "p1", {"metadata": {"labels": {"x": "y"}}}, ns)
            for inf, sel in zip(infs, selectors, strict=True):
                await eventually(
                    lambda i=inf, s=sel: cached(i) == keys(gated, s, NAMESPACES),  # type: ignore[misc]
                    f"the informer of {sel.text} holds what the client's hash selects",
                )
                stats = inf.statistics()
                assert stats.shard_mode == "server", stats
                assert stats.objects_dropped == 0, stats  # (the server sent only its own)
            every = set().union(*(cached(i) for i in infs))
            assert every == keys(gated, ShardSelector.of_buckets(range(4), 4), NAMESPACES)
            assert sum(len(cached(i)) for i in infs) == len(every)  # (each in one shard)


async def test_a_rescope_in_server_mode_relists_with_the_new_selector(gated: KubeSim) -> None:
    for i in range(40):
        gated.create("pods", pod(f"p{i}"), "default")
    async with gated.api_client() as api:
        factory = InformerFactory(api, watch_options=watch_options())
        inf = factory.informer("v1", "pods", namespace="default", shards=QUARTERS[0])
        async with factory:
            await factory.wait_for_sync(timeout=10)
            wider = ShardSelector.of_buckets([0, 1, 2], 4)
            await inf.rescope(wider, timeout=10)
            assert cached(inf) == keys(gated, wider, ["default"])
            assert inf.statistics().shard_mode == "server"
            await inf.rescope(QUARTERS[2], timeout=10)
            assert cached(inf) == keys(gated, QUARTERS[2], ["default"])


PODSETS = Path(__file__).resolve().parents[2] / "examples" / "crds" / "podset.yaml"
"""The examples' PodSet CRD (a custom resource: v1.36 lists carry no shardInfo for it)."""


async def test_a_custom_resource_has_no_echo_so_its_informer_filters_itself(
    gated: KubeSim,
) -> None:
    async with gated.api_client() as api:
        await install_crd(Client(api), PODSETS)
        for i in range(30):
            podset = {
                "apiVersion": "example.aioinformer.dev/v1",
                "kind": "PodSet",
                "metadata": {"name": f"ps{i}"},
                "spec": {"replicas": 0, "template": {}},
            }
            gated.create("podsets", podset, "default")
        factory = InformerFactory(api, watch_options=watch_options())
        inf = factory.informer(
            "example.aioinformer.dev/v1", "podsets", namespace="default", shards=QUARTERS[1]
        )
        async with factory:
            await factory.wait_for_sync(timeout=10)
            want = {
                f"default/{w['metadata']['name']}"
                for w in gated.list("podsets", "default")
                if QUARTERS[1].contains(shard_hash(w["metadata"]["uid"]))
            }
            assert cached(inf) == want and want
            stats = inf.statistics()
            # no echo: client mode; the server filtered all the same, so nothing to drop
            assert stats.shard_mode == "client" and stats.objects_dropped == 0, stats
