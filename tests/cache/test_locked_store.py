"""The lock-based baseline's own contract: the read lock is held across the body of
``read()``, the writer (and ``add_indexer``) waits for the readers inside and new readers
queue behind a waiting writer, ``snapshot()`` is refused with a clear message, and
``list_now``, ``resource_version``, ``seq`` and ``len`` never wait. What both stores share:
test_store.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aioinformer._cache.locked_store import LockedView, LockedWriter

from aioinformer._cache.deltas import ChangeType, ObjectDelta, Replace
from aioinformer._cache.index import by_label
from aioinformer._core.errors import ConfigError
from tests.support import Store, eventually, pod_object, upsert


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


async def test_snapshot_is_refused_with_a_clear_message() -> None:
    with pytest.raises(
        ConfigError,
        match=r"store='locked'\) has no snapshots: read it with `async with informer\.read\(\) as view`",
    ):
        Store("locked").snapshot()


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
