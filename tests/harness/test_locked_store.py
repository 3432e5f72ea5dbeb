"""The lock-based baseline (aioinformer._harness, what the demo and the benchmarks compare
the snapshot store against). Its store's own contract: the read lock is held across the
body of ``read()``, the writer (and ``add_indexer``) waits for the readers inside and new
readers queue behind a waiting writer, ``snapshot()`` is the live view (no lock, valid until
the next await), and ``list_now``, ``resource_version``, ``seq`` and ``len`` never wait.
Then LockedInformer over real HTTP: the same informer, whose writer waits for its readers.
What both stores share: tests/cache/test_store.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer._cache.deltas import ChangeType, ObjectDelta, Replace
from aioinformer._cache.index import by_label
from aioinformer._cache.informer import Informer
from aioinformer._cache.pipeline import ThreadHost
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.errors import ConfigError
from aioinformer._harness.locked_informer import LockedFactory, LockedInformer, reading
from aioinformer._harness.locked_store import LockedView, LockedWriter
from aioinformer.testing import KubeSim, eventually
from tests.support import Store, pod, pod_object, upsert, watch_options


def writers_waiting(store: Store) -> int:
    """Tasks waiting for the store's write lock (the writer, add_indexer)."""
    writer = store.writer
    assert isinstance(writer, LockedWriter)
    return len(writer._lock.writer_lock._lock._write_waiters)


class Reader:
    """A task inside ``store.read()`` until :meth:`leave`; records what it saw."""

    def __init__(self, store: Store, name: str, log: list[str]) -> None:
        self.inside = asyncio.Event()
        self._leave = asyncio.Event()
        self.task = asyncio.create_task(self._run(store, name, log))

    async def _run(self, store: Store, name: str, log: list[str]) -> None:
        async with store.read() as view:
            log.append(f"{name} in at seq {view.seq}")
            self.inside.set()
            await self._leave.wait()
            log.append(f"{name} out at seq {view.seq}")

    async def leave(self) -> None:
        self._leave.set()
        await self.task


async def test_the_writer_waits_for_the_readers_inside_and_new_readers_wait_for_it() -> None:
    """client-go's ThreadSafeStore shape with writer preference: while a reader is inside,
    the writer waits; a reader arriving after the writer queues behind it and sees its
    batch."""
    store = Store("locked")
    log: list[str] = []
    first = Reader(store, "first", log)
    await first.inside.wait()

    async def write() -> None:
        await store.apply([upsert(pod_object("p", rv=7))])
        log.append("applied")

    writer = asyncio.create_task(write())
    await eventually(lambda: writers_waiting(store) == 1, "the writer to wait for the lock")
    second = Reader(store, "second", log)
    second_started = asyncio.create_task(second.inside.wait())
    await first.leave()
    await writer
    await second_started
    await second.leave()
    assert log == [
        "first in at seq 0",
        "first out at seq 0",  # the batch waited for the reader inside ...
        "applied",
        "second in at seq 1",  # ... and the later reader waited for the batch
        "second out at seq 1",
    ]
    async with store.read() as view:
        assert isinstance(view, LockedView) and view.get("default/p").rv == 7  # type: ignore[union-attr]


async def test_list_now_and_the_counters_never_wait_for_the_lock() -> None:
    store = Store("locked")
    await store.apply([upsert(pod_object("a", rv=1)), upsert(pod_object("b", "other", rv=2))])
    log: list[str] = []
    reader = Reader(store, "reader", log)
    await reader.inside.wait()
    writer = asyncio.create_task(store.apply([upsert(pod_object("c", rv=3))]))
    await eventually(lambda: writers_waiting(store) == 1, "the writer to wait for the lock")
    # the lock is taken and a writer is queued: these are plain calls, no await
    assert sorted(o.key for o in store.reader.list_now()) == ["default/a", "other/b"]
    assert [o.key for o in store.reader.list_now("other")] == ["other/b"]
    assert (store.reader.resource_version, store.reader.seq, len(store.reader)) == (2, 1, 2)
    await reader.leave()
    await writer
    assert (store.reader.resource_version, store.reader.seq, len(store.reader)) == (3, 2, 3)


async def test_add_indexer_builds_under_the_write_lock() -> None:
    """client-go's AddIndexers: the index is built with the writer excluded and readers
    out; the readers after it see it complete."""
    store = Store("locked")
    await store.apply([upsert(pod_object(f"p{i}", rv=i + 1, app=f"v{i % 2}")) for i in range(6)])
    log: list[str] = []
    reader = Reader(store, "reader", log)
    await reader.inside.wait()
    adding = asyncio.create_task(store.add_indexer("app", by_label("app")))
    await eventually(lambda: writers_waiting(store) == 1, "add_indexer to wait for the lock")
    assert "app" not in store.indexers
    await reader.leave()
    await adding
    assert "app" in store.indexers and store.reader.seq == 2  # an index addition counts
    async with store.read() as view:
        assert sorted(o.name for o in view.by_index("app", "v1")) == ["p1", "p3", "p5"]
    with pytest.raises(ConfigError, match="already exists"):
        await store.add_indexer("app", by_label("app"))


async def test_iter_chunks_holds_the_lock_across_its_awaits() -> None:
    store = Store("locked")
    await store.apply([Replace([pod_object(f"p{i}", rv=i + 1) for i in range(30)], 30, 0.0)])
    seen: list[str] = []
    writer: asyncio.Task[Any] | None = None
    async with store.read() as view:
        async for obj in view.iter_chunks(chunk=10):
            seen.append(obj.key)
            if len(seen) == 11 and writer is None:  # after the first chunk's await
                writer = asyncio.create_task(store.apply([upsert(pod_object("late", rv=99))]))
                await eventually(lambda: writers_waiting(store) == 1, "the writer to wait")
        assert len(seen) == 30 and "default/late" not in view
        assert writers_waiting(store) == 1  # still waiting at the end of the scan
    assert writer is not None
    await writer
    assert store.reader.seq == 2 and len(store.reader) == 31


async def test_snapshot_is_the_live_view_read_without_the_lock() -> None:
    """No snapshots: ``snapshot()`` is the live view, taken without the lock even while a
    reader holds it and a writer waits, and it changes with the next batch (it is valid
    only until the next await)."""
    store = Store("locked")
    await store.apply([upsert(pod_object("a", rv=1))])
    live = store.reader.snapshot()
    log: list[str] = []
    reader = Reader(store, "reader", log)
    await reader.inside.wait()
    writer = asyncio.create_task(store.apply([upsert(pod_object("b", rv=2))]))
    await eventually(lambda: writers_waiting(store) == 1, "the writer to wait for the lock")
    assert store.reader.snapshot() is live and live.keys() == ["default/a"]  # no await
    await reader.leave()
    await writer
    assert (live.seq, sorted(live.keys())) == (2, ["default/a", "default/b"])  # it moved


@pytest.mark.parametrize(
    "bad", [object(), ObjectDelta(ChangeType.ADDED, None, 0.0), Replace([1], 1, 0.0)]
)  # type: ignore[arg-type,list-item]
async def test_a_malformed_item_fails_the_batch_before_it_changes_anything(bad: Any) -> None:
    store = Store("locked")
    await store.apply([upsert(pod_object("ok", rv=1))])
    with pytest.raises(TypeError, match="not a"):
        await store.apply([upsert(pod_object("ok", rv=2)), upsert(pod_object("ok2", rv=3)), bad])
    async with store.read() as view:
        assert view.seq == 1 and view.keys() == ["default/ok"]
        assert view.get("default/ok").rv == 1  # type: ignore[union-attr]
    assert store.writer.in_place_batches == 0 and store.writer.batches == 1


# -- LockedInformer ----------------------------------------------------------------------------


def informer_writer_waiting(informer: LockedInformer) -> bool:
    writer = informer._writer
    assert isinstance(writer, LockedWriter)
    return len(writer._lock.writer_lock._lock._write_waiters) == 1


async def test_a_locked_informer_caches_the_server_and_its_writer_waits_for_its_readers(
    sim: KubeSim, api: Any
) -> None:
    for i in range(3):
        sim.create("pods", pod(f"l{i}"), "default")
    async with LockedFactory(api, watch_options=watch_options(), pipeline="thread") as f:
        assert f.pipeline == "loop"  # its lock is an asyncio one: whatever was asked
        pods = f.informer("v1", "pods")
        assert isinstance(pods, LockedInformer)
        await f.wait_for_sync(timeout=30)
        async with pods.read() as view:
            assert isinstance(view, LockedView)
            assert {o.key: str(o.rv) for o in view.list()} == sim.versions("pods")
            assert len(view.by_index("namespace", "default")) == 3
            seq = view.seq
            made = sim.create("pods", pod("behind"), "default")
            await eventually(
                lambda: informer_writer_waiting(pods), "the writer to wait for the read lock"
            )
            assert view.seq == seq and "default/behind" not in view
            assert pods.snapshot() is view  # the synchronous reads see the live view
        snap = await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=30)
        assert snap.get("default/behind") is not None and snap.seq > seq


async def test_reading_gives_a_view_across_awaits_of_either_informer(api: Any) -> None:
    """The demo reads both kinds one way: under the baseline's read lock, or on a snapshot
    (no lock: the snapshot never changes)."""
    plain = Informer(ListWatch(api, "v1", "pods"), name="pods")
    locked = LockedInformer(ListWatch(api, "v1", "pods"), name="pods")
    async with reading(plain) as view:
        assert view is plain.snapshot()
    async with reading(locked) as view:
        assert isinstance(view, LockedView)
        locked_writer = locked._writer
        assert isinstance(locked_writer, LockedWriter)
        assert locked_writer._lock.reader_lock.locked  # held for the body


async def test_a_locked_informer_refuses_a_pipeline_thread(api: Any) -> None:
    with pytest.raises(ConfigError, match="caller's loop only"):
        LockedInformer(ListWatch(api, "v1", "pods"), name="pods", host=ThreadHost("locked"))
