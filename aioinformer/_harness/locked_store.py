"""The lock-based baseline: a dict plus dict-of-sets indexes behind a readers-writer lock.

This is the shape of client-go's ThreadSafeStore, kept (here, in the harness: it is not
part of the library) so that the demo and the benchmarks compare the snapshot store against
it honestly, behind the same informer (:mod:`~aioinformer._harness.locked_informer`): the
same batch semantics (:mod:`~aioinformer._cache.batch`), the same indexes
updated the same way, the same batch sizes. :func:`locked_store` returns a
``(LockedReader, LockedWriter)`` pair, as :func:`~aioinformer._cache.snapshot_store.snapshot_store`
does. Contract:

* The writer takes the write lock once per batch (``async with writer.writing():``) and
  applies it synchronously (:meth:`LockedWriter.apply`). ``aiorwlock.RWLock`` prefers
  writers: once the writer waits, new readers queue behind it, but it still waits for every
  reader already inside. So a read must not nest another read (or an informer read that
  takes the lock: ``read()``, ``query()``): once the writer waits, the inner read waits
  behind it, and the writer waits for the outer one, for ever. client-go's RWMutex has
  the same rule.
* :meth:`LockedReader.read` is an async context manager that holds the read lock for its
  whole body and yields a :class:`LockedView` with the Snapshot reader API over the live
  dicts. ``list()`` and ``by_index()`` copy out, as client-go's ``List`` does. The view is
  only valid inside the ``async with`` body; ``iter_chunks`` awaits between chunks while
  still holding the lock, which is exactly what blocks the writer.
* There are no snapshots: :meth:`LockedReader.snapshot` returns the live view, valid until
  the next await (what an informer's synchronous reads use: the writer never holds the
  dicts across an await, so they are consistent between two awaits). The resourceVersion,
  sequence number and size of the last applied batch are read without the lock, and so is
  :meth:`LockedReader.list_now` (a copy taken in one go).
* :meth:`LockedWriter.add_indexer` builds the index under the write lock (client-go's
  ``AddIndexers``).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import aiorwlock

from aioinformer._cache.batch import apply_batch, check_batch
from aioinformer._cache.deltas import Change, Delta
from aioinformer._cache.footprint import Tally
from aioinformer._cache.index import (
    IndexFunc,
    IndexGuard,
    IndexPlan,
    index_plan,
    merge_indexers,
    unknown_index,
)
from aioinformer._core import logs
from aioinformer._core.errors import ConfigError

if TYPE_CHECKING:
    from aioinformer._core.objects import KubeObject

__all__ = ["LockedReader", "LockedView", "LockedWriter", "locked_store"]

log = logs.logger("aioinformer.store")


def _index_change(
    index: dict[str, set[str]],
    fn: IndexFunc,
    key: str,
    old: KubeObject | None,
    new: KubeObject | None,
) -> None:
    """client-go's ``updateSingleIndex``: move ``key`` between the value sets."""
    old_values = tuple(fn(old)) if old is not None else ()
    new_values = tuple(fn(new)) if new is not None else ()
    if old_values == new_values:
        return
    for value in old_values:
        if value not in new_values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]
    for value in new_values:
        if value not in old_values:
            keys = index.get(value)
            if keys is None:
                index[value] = {key}
            else:
                keys.add(key)


class _DictState:
    """The :class:`~aioinformer._cache.batch.BatchState` of the baseline: the live dicts,
    mutated in place."""

    __slots__ = ("get", "objects", "same", "updaters")

    def __init__(
        self,
        objects: dict[str, KubeObject],
        indexes: dict[str, dict[str, set[str]]],
        plan: IndexPlan,
    ) -> None:
        self.objects = objects
        self.get = objects.get
        self.updaters = [(indexes[name], fn, reads) for name, fn, reads in plan[0]]
        self.same = plan[1]

    def put(self, key: str, obj: KubeObject) -> KubeObject | None:
        objects = self.objects
        old = objects.get(key)
        objects[key] = obj
        return old

    def put_all(
        self, keys: Sequence[str], objs: Sequence[KubeObject]
    ) -> builtins.list[KubeObject | None]:
        objects = self.objects
        get = objects.get
        olds = []
        for key, obj in zip(keys, objs):  # noqa: B905  (one key per object, by the caller)
            olds.append(get(key))
            objects[key] = obj
        return olds

    def pop(self, key: str) -> KubeObject | None:
        return self.objects.pop(key, None)

    def reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if old is None or new is None:
            for index, fn, _ in self.updaters:
                _index_change(index, fn, key, old, new)
            return
        old_meta, new_meta = old.metadata, new.metadata
        for index, fn, reads in self.updaters:
            if reads is None or reads(old_meta) != reads(new_meta):
                _index_change(index, fn, key, old, new)

    def entries(self) -> Iterable[tuple[str, KubeObject]]:
        return builtins.list(self.objects.items())


class LockedView:
    """The reader API of a :class:`~aioinformer.Snapshot` over the baseline's live dicts.
    Valid only while the read lock is held (inside ``async with reader.read()``)."""

    __slots__ = ("_store",)

    def __init__(self, store: LockedWriter) -> None:
        self._store = store

    @property
    def resource_version(self) -> int:
        """The highest resourceVersion the store has applied."""
        return self._store._rv

    @property
    def seq(self) -> int:
        """The number of batches applied (and index additions)."""
        return self._store._seq

    def get(self, key: str) -> KubeObject | None:
        """The object stored under ``key``."""
        return self._store._objects.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """A copy of every object, or of those in ``namespace`` (via the index)."""
        if namespace is None:
            return builtins.list(self._store._objects.values())
        return self.by_index("namespace", namespace)

    def by_index(self, name: str, value: str) -> builtins.list[KubeObject]:
        """The objects index ``name`` files under ``value`` (ConfigError if unknown)."""
        index = self._store._indexes.get(name)
        if index is None:
            raise unknown_index(name, self._store._indexes)
        objects = self._store._objects
        return [objects[key] for key in index.get(value, ())]

    def index_values(self, name: str) -> builtins.list[str]:
        """The values index ``name`` has at least one object under."""
        index = self._store._indexes.get(name)
        if index is None:
            raise unknown_index(name, self._store._indexes)
        return builtins.list(index)

    def keys(self) -> builtins.list[str]:
        """Every object key."""
        return builtins.list(self._store._objects)

    def __len__(self) -> int:
        """The number of objects."""
        return len(self._store._objects)

    def __contains__(self, key: object) -> bool:
        """Whether an object is stored under ``key``."""
        return key in self._store._objects

    async def iter_chunks(
        self, namespace: str | None = None, chunk: int = 1000
    ) -> AsyncIterator[KubeObject]:
        """Yield every object (or those in ``namespace``) from the live dict, letting the
        loop run after each ``chunk``. Safe only because the read lock keeps the writer
        out; that is also why it stalls the writer for the whole scan."""
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, not {chunk}")
        objects = self._store._objects
        if namespace is None:
            source: Iterable[KubeObject] = objects.values()
        else:
            source = (objects[k] for k in self._store._indexes["namespace"].get(namespace, ()))
        n = 0
        for obj in source:
            yield obj
            n += 1
            if n == chunk:
                n = 0
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        store = self._store
        return f"<LockedView seq={store._seq} rv={store._rv} objects={len(store._objects)}>"


class LockedWriter:
    """The one writer of the baseline store (see the module docstring). Made by
    :func:`locked_store`."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._guard = IndexGuard(log)
        self._funcs = merge_indexers(indexers, self._guard)
        self._plan = index_plan(self._funcs)
        self._objects: dict[str, KubeObject] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._funcs}
        self._rv = 0
        self._seq = 0
        # fast=True: no extra yield after an uncontended acquire (sync.RWMutex doesn't
        # yield either); the baseline pays for contention, not for a courtesy sleep(0).
        self._lock = aiorwlock.RWLock(fast=True)
        self._view = LockedView(self)
        self.batches = 0
        """Batches applied."""
        self.in_place_batches = 0
        """Always 0: the baseline has no copy-on-write to avoid."""
        self.cached_bytes = 0
        """The objects' cached bytes (:mod:`~aioinformer._cache.footprint`)."""
        self.plain_bytes = 0
        """:attr:`cached_bytes` with every body uncompressed."""

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """``async with writer.writing():`` around ``apply``: the write lock, which waits
        for every reader inside ``read()``."""
        async with self._lock.writer_lock:
            yield

    def apply(self, batch: Sequence[Delta], *, changes: bool = True) -> builtins.list[Change]:
        """Apply ``batch`` to the live dicts (call it inside ``writing()``); return the
        changes in order (``[]`` without building any when ``changes`` is false).
        Synchronous. A malformed batch raises TypeError and changes nothing."""
        if not batch:
            return []
        upserts = check_batch(batch)
        state = _DictState(self._objects, self._indexes, self._plan)
        tally = Tally()
        applied, self._rv = apply_batch(
            state, batch, self._rv, changes, upserts=upserts, tally=tally
        )
        self.cached_bytes += tally.held
        self.plain_bytes += tally.held + tally.expanded
        self._seq += 1
        self.batches += 1
        return applied

    async def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Build index ``name`` over every object under the write lock."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"index names are non-empty strings, not {name!r}")
        fn = self._guard.guard(name, fn)
        async with self._lock.writer_lock:
            if name in self._funcs:
                raise ConfigError(f"index {name!r} already exists")
            index: dict[str, set[str]] = {}
            for key, obj in self._objects.items():
                _index_change(index, fn, key, None, obj)
            self._indexes[name] = index
            self._funcs[name] = fn
            self._plan = index_plan(self._funcs)
            self._seq += 1

    def __repr__(self) -> str:
        return f"<LockedWriter {self._view!r} indexes={builtins.list(self._funcs)}>"


class LockedReader:
    """What every reader of the baseline store gets: reads under the read lock."""

    __slots__ = ("_writer",)

    def __init__(self, writer: LockedWriter) -> None:
        self._writer = writer

    def snapshot(self) -> LockedView:
        """The live view, read without the lock: valid until the next await (the writer
        never changes the dicts between two awaits of the loop it shares with readers).
        A read across awaits takes the lock: :meth:`read`."""
        return self._writer._view

    @asynccontextmanager
    async def read(self) -> AsyncIterator[LockedView]:
        """Hold the read lock for the body and yield the live view."""
        async with self._writer._lock.reader_lock:
            yield self._writer._view

    def get_now(self, key: str) -> KubeObject | None:
        """The object under ``key``, read without the lock (see the module docstring)."""
        return self._writer._objects.get(key)

    def list_now(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """A copy of every object (or of those in ``namespace``), taken without the lock
        (see the module docstring)."""
        return self._writer._view.list(namespace)

    @property
    def resource_version(self) -> int:
        """The resourceVersion after the last applied batch."""
        return self._writer._rv

    @property
    def seq(self) -> int:
        """The number of batches applied (and index additions)."""
        return self._writer._seq

    def __len__(self) -> int:
        """The number of objects after the last applied batch."""
        return len(self._writer._objects)

    @property
    def indexers(self) -> builtins.list[str]:
        """The names of the indexes."""
        return builtins.list(self._writer._funcs)

    @property
    def index_errors(self) -> int:
        """Index function calls that raised (each left its object out of that index)."""
        return self._writer._guard.errors

    @property
    def cached_bytes(self) -> int:
        """The objects' cached bytes (:attr:`LockedWriter.cached_bytes`)."""
        return self._writer.cached_bytes

    @property
    def plain_bytes(self) -> int:
        """The objects' plain bytes (:attr:`LockedWriter.plain_bytes`)."""
        return self._writer.plain_bytes

    def __repr__(self) -> str:
        return f"<LockedReader {self._writer._view!r}>"


def locked_store(
    indexers: Mapping[str, IndexFunc] | None = None,
) -> tuple[LockedReader, LockedWriter]:
    """A new, empty baseline store with the default indexes plus ``indexers``: its reader
    and its one writer."""
    writer = LockedWriter(indexers)
    return LockedReader(writer), writer
