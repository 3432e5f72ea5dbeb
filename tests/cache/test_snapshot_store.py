"""The snapshot store's own contract: immutable snapshots, the in-place path while nobody
holds the current one (``SnapshotWriter.in_place_batches``), the threaded writer's in-place
path on the retired snapshot (with a stress test: reader threads re-hashing snapshots while
a writer thread runs flat out), batches that fail before they change anything, readers
across awaits, and add_indexer while it builds. What both stores share: test_store.py."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
from typing import Any

import pytest

from aioinformer._cache.deltas import ChangeType, Evict, ObjectDelta, Replace
from aioinformer._cache.index import by_controller_uid, by_label
from aioinformer._cache.pmap import IN_PLACE
from aioinformer._cache.snapshot_store import snapshot_store
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject
from tests.support import Store, delta, many_pods, pod_object, upsert

needs_refcounts = pytest.mark.skipif(
    not IN_PLACE, reason="the in-place path needs trustworthy reference counts (CPython)"
)

# ---- the in-place path ----------------------------------------------------------------------


@needs_refcounts
async def test_every_batch_goes_in_place_while_nobody_holds_the_snapshot() -> None:
    """The writer's steady state: one publish per batch, each one in place."""
    reader, writer = snapshot_store()
    for i in range(50):
        writer.apply([upsert(pod_object(f"p{i % 7}", rv=i + 1))])
    assert writer.batches == writer.in_place_batches == 50
    assert reader.seq == 50 and len(reader) == 7


@needs_refcounts
async def test_a_held_snapshot_makes_batches_copy_until_it_is_let_go() -> None:
    reader, writer = snapshot_store()
    writer.apply([upsert(pod_object("a", rv=1))])
    assert (writer.batches, writer.in_place_batches) == (1, 1)
    held = reader.snapshot()
    writer.apply([upsert(pod_object("a", rv=2))])  # held is the current one: copies
    assert (writer.batches, writer.in_place_batches) == (2, 1)
    writer.apply([upsert(pod_object("a", rv=3))])  # the new current one is nobody's
    assert (writer.batches, writer.in_place_batches) == (3, 2)
    assert held.get("default/a").rv == 1  # type: ignore[union-attr]
    held = reader.snapshot()
    writer.apply([upsert(pod_object("a", rv=4))])
    assert (writer.batches, writer.in_place_batches) == (4, 2)
    del held
    writer.apply([upsert(pod_object("a", rv=5))])
    assert (writer.batches, writer.in_place_batches) == (5, 3)


@needs_refcounts
async def test_batches_write_in_place_unless_someone_holds_the_snapshot() -> None:
    """Nobody holding the current snapshot, a batch reuses its map's containers (no leaf
    copied); a held snapshot (a reader across awaits, an iterator of it) makes the next
    batch copy what it changes, and what the holder sees never changes."""
    store = Store("snapshot")
    await store.apply([upsert(pod_object(f"p{i}", rv=i + 1)) for i in range(200)])
    in_place = store.writer.in_place_batches

    def containers() -> set[int]:
        objects = store.snapshot()._objects
        return {id(objects._dir)} | {id(leaf) for mid in objects._dir for leaf in mid}

    before = containers()
    await store.apply([upsert(pod_object(f"p{i}", rv=1000 + i)) for i in range(0, 200, 7)])
    assert containers() == before  # every leaf and the directory written in place
    assert store.writer.in_place_batches == in_place + 1

    held = store.snapshot()
    await store.apply([upsert(pod_object("p3", rv=2000)), upsert(pod_object("new", rv=2001))])
    assert held.get("default/p3").rv == 4 and "default/new" not in held and len(held) == 200
    assert store.snapshot().get("default/p3").rv == 2000 and len(store.snapshot()) == 201
    assert containers() != before
    assert store.writer.in_place_batches == in_place + 1  # that batch copied
    del held

    chunks = store.snapshot().iter_chunks(chunk=50)  # an iterator holds the snapshot
    first = [await anext(chunks) for _ in range(60)]
    await store.apply([delta(ChangeType.DELETED, pod_object(f"p{i}")) for i in range(200)])
    rest = [obj async for obj in chunks]
    assert len({o.key for o in first + rest}) == 201  # the whole snapshot, as it was
    assert store.snapshot().keys() == ["default/new"]


# ---- the threaded writer: in place on the retired snapshot -----------------------------------


@needs_refcounts
async def test_the_threaded_writer_writes_the_retired_snapshot_in_place() -> None:
    """With readers on other threads the current snapshot is never written in place: the
    batch writes the one before it (caught up with the batch it missed) once nobody holds
    that one, and copies while someone does."""
    reader, writer = snapshot_store(threaded=True)
    writer.apply([upsert(pod_object(f"p{i}", rv=i + 1)) for i in range(100)])
    assert (writer.batches, writer.in_place_batches) == (1, 0)  # nothing retired yet
    writer.apply([upsert(pod_object("p1", rv=200))])  # the empty store's map, caught up
    assert (writer.batches, writer.in_place_batches) == (2, 1)
    current = reader.snapshot()  # a reader holding the current snapshot does not stop it
    assert writer._retired is not None
    retired_id = id(writer._retired._objects._dir)
    writer.apply([upsert(pod_object("p2", rv=201))])
    assert (writer.batches, writer.in_place_batches) == (3, 2)
    assert id(reader.snapshot()._objects._dir) == retired_id  # the retired map, reused
    assert current.get("default/p2").rv == 3 and current.get("default/p1").rv == 200  # type: ignore[union-attr]
    snap = reader.snapshot()
    assert snap.get("default/p1").rv == 200 and snap.get("default/p2").rv == 201  # type: ignore[union-attr]
    assert len(snap) == 100
    del snap
    # now `current` is the retired one, and still held: the next batch copies
    writer.apply([upsert(pod_object("p3", rv=202))])
    assert (writer.batches, writer.in_place_batches) == (4, 2)
    assert current.get("default/p3").rv == 4  # type: ignore[union-attr]
    del current
    writer.apply([delta(ChangeType.DELETED, pod_object("p4"))])
    writer.apply([upsert(pod_object("p5", rv=204))])
    assert (writer.batches, writer.in_place_batches) == (6, 4)
    final = {o.key: o.rv for o in reader.snapshot().list()}
    expected = {f"default/p{i}": i + 1 for i in range(100) if i != 4}
    expected.update({"default/p1": 200, "default/p2": 201, "default/p3": 202, "default/p5": 204})
    assert final == expected
    assert {o.key for o in reader.snapshot().by_index("namespace", "default")} == set(expected)


@needs_refcounts
async def test_a_relist_leaves_no_retired_snapshot_to_catch_up() -> None:
    reader, writer = snapshot_store(threaded=True)
    writer.apply([upsert(pod_object(f"p{i}", rv=i + 1)) for i in range(10)])
    writer.apply([Replace([pod_object("only", rv=50)], 50, 0.0)])
    assert writer._retired is None
    in_place = writer.in_place_batches
    writer.apply([upsert(pod_object("only", rv=51))])  # copies from the current one
    assert writer.in_place_batches == in_place
    writer.apply([upsert(pod_object("other", rv=52))])  # in place, caught up with rv 51
    assert writer.in_place_batches == in_place + 1
    assert {o.key: o.rv for o in reader.snapshot().list()} == {
        "default/only": 51,
        "default/other": 52,
    }


class _Interrupt(BaseException):
    pass


@needs_refcounts
async def test_an_interrupted_threaded_batch_publishes_nothing() -> None:
    """The threaded writer's in-place batch writes a map nobody can see: interrupted
    half-way, it is dropped, the published state is untouched, and the writer goes on."""
    armed = [False]

    def touchy(obj: KubeObject) -> list[str]:
        if armed[0] and obj.labels.get("app") == "boom":
            raise _Interrupt
        return [obj.labels.get("app", "")]

    reader, writer = snapshot_store({"app": touchy}, threaded=True)
    writer.apply([upsert(pod_object(f"p{i}", rv=i + 1, app="x")) for i in range(5)])
    writer.apply([upsert(pod_object("p0", rv=10, app="x"))])
    before = reader.snapshot()
    state = [(o.key, o.rv) for o in before.list()]
    del before  # (the retired one is free: the next batch goes in place)
    armed[0] = True
    with pytest.raises(_Interrupt):
        writer.apply(
            [upsert(pod_object("p1", rv=11, app="y")), upsert(pod_object("c", rv=12, app="boom"))]
        )
    armed[0] = False
    snap = reader.snapshot()
    assert (
        sorted((o.key, o.rv) for o in snap.list()) == sorted(state) and snap.resource_version == 10
    )
    writer.apply([upsert(pod_object("p1", rv=13, app="y"))])
    writer.apply([upsert(pod_object("p2", rv=14, app="y"))])
    assert {o.key for o in reader.snapshot().by_index("app", "y")} == {"default/p1", "default/p2"}
    assert reader.snapshot().get("default/c") is None


def _digest(snap: Any) -> tuple[int, int, int, int]:
    """Everything a reader can see of a snapshot, hashed."""
    objects = tuple(sorted((o.key, o.rv) for o in snap.list()))
    owners = tuple(sorted(o.key for o in snap.by_index("namespace", "default")))
    return hash(objects), hash(owners), len(snap), snap.resource_version


@needs_refcounts
def test_snapshots_never_change_under_reader_threads_while_a_writer_thread_runs_flat_out() -> None:
    """The stress test of the threaded writer: a writer thread applies random batches
    (updates, deletions, re-additions) as fast as it can while reader threads take
    snapshots at random moments, hash everything they can see of them, hold some for a
    while and hash them again. A thread switch every microsecond makes readers take the
    current snapshot between any two steps of the writer. No snapshot ever changes, the
    in-place path is taken (and the copying one), and the final state is the model's."""
    reader, writer = snapshot_store(threaded=True)
    model = {f"default/p{i}": i + 1 for i in range(300)}
    writer.apply([upsert(pod_object(k.split("/")[1], rv=rv)) for k, rv in model.items()])
    stop = threading.Event()
    failures: list[str] = []
    checks = [0]

    def read(seed: int) -> None:
        try:
            check(seed)
        except Exception as exc:  # a reader that fails is a failure, not a dead thread
            failures.append(repr(exc))

    def check(seed: int) -> None:
        rnd = random.Random(seed)
        held: list[tuple[Any, tuple[int, int, int, int]]] = []
        while not stop.is_set():
            snap = reader.snapshot()
            seen = _digest(snap)
            if _digest(snap) != seen:
                failures.append(f"snapshot seq {snap.seq} changed while hashed twice")
            if rnd.random() < 0.3:
                held.append((snap, seen))
            del snap
            if held and (len(held) > 3 or rnd.random() < 0.3):
                old, digest = held.pop(rnd.randrange(len(held)))
                if _digest(old) != digest:
                    failures.append(f"held snapshot seq {old.seq} changed")
                checks[0] += 1
            checks[0] += 1

    def write() -> None:
        rnd = random.Random(7)
        rv = 1000
        for _ in range(3000):
            batch = []
            for _ in range(rnd.randint(1, 20)):
                rv += 1
                key = f"default/p{rnd.randrange(400)}"
                if key in model and rnd.random() < 0.2:
                    del model[key]
                    batch.append(delta(ChangeType.DELETED, pod_object(key.split("/")[1], rv=rv)))
                else:
                    model[key] = rv
                    batch.append(upsert(pod_object(key.split("/")[1], rv=rv)))
            writer.apply(batch, changes=False)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        readers = [threading.Thread(target=read, args=(i,)) for i in range(3)]
        for t in readers:
            t.start()
        writing = threading.Thread(target=write)
        writing.start()
        writing.join()
        stop.set()
        for t in readers:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[:5]
    assert checks[0] > 100, "the readers hardly ran"
    assert 0 < writer.in_place_batches < writer.batches, (writer.in_place_batches, writer.batches)
    assert {o.key: o.rv for o in reader.snapshot().list()} == model


async def test_a_batch_interrupted_while_writing_in_place_publishes_a_consistent_state() -> None:
    """A BaseException half-way through an in-place batch (KeyboardInterrupt, MemoryError)
    cannot be undone: what the batch changed is published with every index rebuilt from
    the objects, so the store stays consistent, and the exception propagates."""

    class Interrupt(BaseException):
        pass

    interrupts = [2]  # the batch, then the rebuild

    def touchy(obj: KubeObject) -> list[str]:
        if obj.labels.get("app") == "boom" and interrupts[0]:
            interrupts[0] -= 1
            raise Interrupt
        return [obj.labels.get("app", "")]

    store = Store("snapshot", {"app": touchy})
    await store.apply(
        [upsert(pod_object("a", rv=1, app="x")), upsert(pod_object("b", rv=2, app="x"))]
    )
    seq = store.snapshot().seq
    with pytest.raises(Interrupt):
        await store.apply(
            [upsert(pod_object("a", rv=3, app="y")), upsert(pod_object("c", rv=4, app="boom"))]
        )
    snap = store.snapshot()
    assert snap.seq == seq + 1 and snap.resource_version == 2  # the RV is not advanced
    model = {o.key: o for o in snap.list()}
    assert sorted(model) == ["default/a", "default/b", "default/c"] and len(snap) == 3
    assert model["default/a"].rv == 3
    assert {o.key for o in snap.by_index("app", "y")} == {"default/a"}
    assert {o.key for o in snap.by_index("app", "x")} == {"default/b"}
    assert "boom" not in snap.index_values("app") and store.index_errors == 1
    assert sorted(snap.index_values("namespace")) == ["default"]
    assert {o.key for o in snap.by_index("namespace", "default")} == set(model)
    await store.apply([upsert(pod_object("c", rv=5, app="z"))])  # the writer goes on
    assert {o.key for o in store.snapshot().by_index("app", "z")} == {"default/c"}
    assert "boom" not in store.snapshot().index_values("app")


@pytest.mark.parametrize("held", [False, True], ids=["in-place", "copying"])
@pytest.mark.parametrize(
    "bad", [object(), ObjectDelta(ChangeType.ADDED, None, 0.0), Replace([1], 1, 0.0)]
)  # type: ignore[arg-type,list-item]
async def test_a_malformed_item_fails_the_batch_before_it_changes_anything(
    bad: Any, held: bool
) -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod_object("ok", rv=1))])
    holder = [store.snapshot()] if held else []  # not held: the batch would write in place
    seq = store.snapshot().seq
    with pytest.raises(TypeError, match="not a"):
        await store.apply([upsert(pod_object("ok", rv=2)), upsert(pod_object("ok2", rv=3)), bad])
    snap = store.snapshot()
    assert snap.seq == seq and snap.keys() == ["default/ok"] and snap.get("default/ok").rv == 1
    assert all(h is snap for h in holder)


async def test_a_failing_batch_publishes_nothing() -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod_object("ok", rv=1))])
    before = store.snapshot()
    with pytest.raises(TypeError, match="not a store item"):
        await store.apply([upsert(pod_object("ok2", rv=2)), object()])  # type: ignore[list-item]
    assert store.snapshot() is before and before.keys() == ["default/ok"]
    await store.apply([upsert(pod_object("ok2", rv=4))])
    assert sorted(store.snapshot().keys()) == ["default/ok", "default/ok2"]
    assert store.snapshot().seq == before.seq + 1


async def test_snapshot_read_takes_no_lock_and_is_the_snapshot() -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod_object("p"))])
    async with store.read() as reader:
        assert reader is store.snapshot()


# ---- readers across awaits ------------------------------------------------------------------


async def test_iter_chunks_across_awaits_sees_exactly_its_snapshot() -> None:
    store = Store("snapshot")
    await store.apply(
        [
            Replace(
                [pod_object(f"p{i}", "a" if i % 2 else "b", i + 1) for i in range(3000)], 3000, 0.0
            )
        ]
    )
    snap = store.snapshot()
    expected_all = {id(o) for o in snap.list()}
    expected_a = {id(o) for o in snap.list("a")}

    async def writer() -> None:
        for i in range(0, 3000, 7):
            await store.apply(
                [
                    delta(ChangeType.DELETED, pod_object(f"p{i}", "a" if i % 2 else "b", 5000 + i)),
                    upsert(pod_object(f"new{i}", "a", 5000 + i)),
                    upsert(
                        pod_object(
                            f"p{i + 1}", "a" if (i + 1) % 2 else "b", 5000 + i, app="changed"
                        )
                    ),
                ]
            )
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    got_all = [id(o) async for o in snap.iter_chunks(chunk=50)]
    got_a = [id(o) async for o in snap.iter_chunks("a", chunk=50)]
    await task
    assert store.snapshot().seq > snap.seq + 1  # the writer really ran meanwhile
    assert len(got_all) == len(expected_all) and set(got_all) == expected_all
    assert len(got_a) == len(expected_a) and set(got_a) == expected_a
    with pytest.raises(ConfigError):
        [o async for o in snap.iter_chunks(chunk=0)]


# ---- add_indexer ----------------------------------------------------------------------------


async def test_add_indexer_rejects_a_name_being_built() -> None:
    store = Store("snapshot")
    await store.apply([Replace(many_pods(5000), 5000, 0.0)])
    first = asyncio.create_task(store.add_indexer("x", by_label("x"), chunk=10))
    await asyncio.sleep(0)
    with pytest.raises(ConfigError, match="already exists"):
        await store.add_indexer("x", by_label("x"))
    seq = store.snapshot().seq
    await first
    assert store.snapshot().seq == seq + 1
    assert store.snapshot().index_values("x") == []


# ---- Evict (a sharded informer's narrowing) -------------------------------------------------


async def test_an_evict_removes_what_it_refuses_in_one_state_with_no_change() -> None:
    store = Store("snapshot")
    await store.apply([Replace(many_pods(10), 10, 0.0)])
    seq, rv = store.snapshot().seq, store.snapshot().resource_version
    keep = {f"default/p{i}" for i in range(0, 10, 3)}
    changes = await store.apply([Evict(lambda o: o.key in keep, 1.0)])
    snap = store.snapshot()
    assert changes == [], "nothing happened to them in the cluster"
    assert set(snap.keys()) == keep and (snap.seq, snap.resource_version) == (seq + 1, rv)
    assert {o.key for o in snap.by_index("controller", "sts-1")} == keep


async def test_an_index_added_while_an_evict_applies_holds_only_what_is_left() -> None:
    reader, writer = snapshot_store()
    writer.apply([Replace(many_pods(5000), 5000, 0.0)])
    build = asyncio.create_task(writer.add_indexer("owner", by_controller_uid, chunk=10))
    await asyncio.sleep(0)  # (the build is under way)
    writer.apply([Evict(lambda o: o.key.endswith("7"), 1.0)])
    await build
    snap = reader.snapshot()
    assert len(snap) == 500
    assert {o.key for o in snap.by_index("owner", "sts-1")} == set(snap.keys())
