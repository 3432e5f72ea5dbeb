"""Cached bytes: the writer's running totals equal a walk over what it published after any
sequence of adds, updates, deletes and relists (plain and compact objects, either store,
threaded or not); the measure against tracemalloc; and ``statistics()`` over real HTTP,
compact mode asked for through the Manager."""

from __future__ import annotations

import gc
import random
import tracemalloc

import msgspec
import orjson
import pytest

from aioinformer import Manager
from aioinformer._cache.deltas import ChangeType, Delta, Replace
from aioinformer._cache.footprint import cached_bytes, plain_bytes, totals
from aioinformer._cache.snapshot_store import snapshot_store
from aioinformer._core.compact import CompactObject, Compactor
from aioinformer._core.objects import KubeObject, decode_object
from aioinformer._harness.locked_store import locked_store
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim
from tests.support import delta, upsert

_compact = Compactor(samples=0)


def version(i: int, rv: int, rng: random.Random) -> KubeObject:
    """Pod ``p{i}`` at ``rv``: a body of random length, managedFields or not, compact or
    plain (a third each way)."""
    pod = realistic_pod("default", "web", i, node="n1", phase="Running")
    pod["metadata"]["name"] = f"p{i}"
    pod["metadata"]["resourceVersion"] = str(rv)
    pod["status"]["message"] = "x" * rng.randrange(0, 400)
    if rng.random() < 0.3:
        pod["metadata"]["managedFields"] = [{"manager": "m", "fieldsV1": {"f": "y" * 50}}]
    obj = decode_object(orjson.dumps(pod))
    return _compact(obj) if rng.random() < 0.3 else obj


def batches(seed: int, steps: int = 60) -> list[list[Delta]]:
    rng = random.Random(seed)
    rv = 1
    out: list[list[Delta]] = []
    for _ in range(steps):
        batch: list[Delta] = []
        for _ in range(rng.randrange(1, 12)):
            rv += 1
            i = rng.randrange(40)
            roll = rng.random()
            if roll < 0.05:  # a relist: a random subset, new versions
                objs = [version(j, rv, rng) for j in range(40) if rng.random() < 0.5]
                batch.append(Replace(objs, rv, 0.0))
            elif roll < 0.3:  # (a key that may not be there: a no-op then)
                batch.append(delta(ChangeType.DELETED, version(i, rv, rng)))
            else:
                batch.append(upsert(version(i, rv, rng)))
        out.append(batch)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threaded", [False, True])
def test_the_snapshot_writer_keeps_the_totals_of_what_it_published(
    seed: int, threaded: bool
) -> None:
    reader, writer = snapshot_store(threaded=threaded)
    held: list[object] = []  # (snapshots held now and then: the copying path too)
    for n, batch in enumerate(batches(seed)):
        writer.apply(batch, changes=n % 2 == 0)
        snap = reader.snapshot()
        if n % 3 == 0:
            held.append(snap)
        assert (reader.cached_bytes, reader.plain_bytes) == totals(snap.list()), n
    assert any(isinstance(o, CompactObject) for o in reader.snapshot().list())
    assert reader.plain_bytes > reader.cached_bytes > 0


async def test_the_locked_store_keeps_the_same_totals() -> None:
    reader, writer = locked_store()
    for n, batch in enumerate(batches(7)):
        async with writer.writing():
            writer.apply(batch)
        assert (reader.cached_bytes, reader.plain_bytes) == totals(reader.list_now()), n


def test_the_measure_of_one_object() -> None:
    rng = random.Random(1)
    obj = version(1, 5, rng)
    while isinstance(obj, CompactObject) or not obj.managed_fields:
        obj = version(1, 5, rng)
    assert cached_bytes(obj) == plain_bytes(obj) == len(obj.body) + len(obj.managed_fields)
    compact = _compact(obj)
    assert isinstance(compact, CompactObject)
    assert cached_bytes(compact) == compact.stored_size + len(obj.managed_fields)
    assert plain_bytes(compact) == cached_bytes(obj)


def test_tracemalloc_counts_the_cached_bytes_plus_at_most_2_kb_per_pod() -> None:
    """The module docstring's bound: the measure is a lower bound of what a pod retains,
    and the rest (typed metadata, headers) is under 2 KB for a pod with a few labels."""
    rng = random.Random(2)
    lines = []
    for i in range(300):
        pod = realistic_pod("default", "web", i, node="n1", phase="Running")
        pod["metadata"]["resourceVersion"] = str(10 + i)
        pod["status"]["message"] = "x" * rng.randrange(0, 400)
        lines.append(orjson.dumps(pod))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        objs = [decode_object(line) for line in lines]
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    held = totals(objs)[0]
    per_pod = (retained - held) / len(objs)
    assert held <= retained, (held, retained)
    assert per_pod < 2048, per_pod


def test_relists_and_deletes_bring_the_totals_back_to_zero() -> None:
    rng = random.Random(3)
    reader, writer = snapshot_store()
    writer.apply([upsert(version(i, 2 + i, rng)) for i in range(20)])
    assert reader.cached_bytes > 0
    writer.apply([Replace([version(i, 100 + i, rng) for i in range(5)], 200, 0.0)])
    assert (reader.cached_bytes, reader.plain_bytes) == totals(reader.snapshot().list())
    writer.apply([delta(ChangeType.DELETED, obj) for obj in reader.snapshot().list()])
    assert (reader.cached_bytes, reader.plain_bytes) == (0, 0)


async def test_statistics_report_the_bytes_and_manager_informers_can_be_compact(
    sim: KubeSim,
) -> None:
    """Over real HTTP: a plain and a compact informer of the same pods, both made through
    ``Manager.informer`` (``compact=True`` is one of its options)."""
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(1050)), "default")
    async with sim.api_client() as api:
        manager = Manager(api, blocked_loop_threshold=None)
        plain = manager.informer("v1", "pods", namespace="default")
        compact = manager.informer("v1", "pods", namespace="default", compact=True)
        assert compact is not plain and compact.compact and not plain.compact
        async with manager:
            made = sim.patch("pods", "web-3", {"metadata": {"labels": {"x": "1"}}}, "default")
            rv = made["metadata"]["resourceVersion"]
            for informer in (plain, compact):
                snap = await informer.wait_for_rv(rv, timeout=10)
                stats = informer.statistics()
                assert (stats.cached_bytes, stats.plain_bytes) == totals(snap.list())
            assert type(compact.snapshot().get("default/web-3")) is CompactObject
            p, c = plain.statistics(), compact.statistics()
            assert p.cached_bytes == p.plain_bytes == c.plain_bytes
            compacted = [o for o in compact.snapshot().list() if isinstance(o, CompactObject)]
            assert len(compacted) >= 50  # (after the 1000 samples the dictionary learns from)
            saved = sum(plain_bytes(o) - cached_bytes(o) for o in compacted)
            assert c.plain_bytes - c.cached_bytes == saved > 50 * 1000
            sim.delete("pods", "web-3", "default", gracePeriodSeconds=0)
            snap = await plain.wait_until(lambda s: "default/web-3" not in s, timeout=10)
            assert plain.statistics().cached_bytes == totals(snap.list())[0] < p.cached_bytes


def test_a_struct_replace_keeps_the_measure_of_the_new_body() -> None:
    """A transform that builds a new object (as ``project`` does) is measured by what it
    kept, not by what it came from."""
    obj = version(1, 5, random.Random(4))
    if isinstance(obj, CompactObject):
        obj = decode_object(orjson.dumps(obj.to_dict()))
    smaller = msgspec.structs.replace(obj, body=b'{"spec":{}}', managed_fields=b"")
    reader, writer = snapshot_store()
    writer.apply([upsert(obj)])
    writer.apply([upsert(msgspec.structs.replace(smaller, rv=6))])
    assert reader.cached_bytes == len(b'{"spec":{}}')
