"""The snapshot store: one writer publishes immutable snapshots; readers take no lock.

:func:`snapshot_store` returns a ``(SnapshotReader, SnapshotWriter)`` pair (kube-rs's
``reflector::store()`` shape). The informer owns the writer; everyone else gets the reader.
The objects live in a persistent hash map (:class:`~aioinformer._cache.pmap.FrozenMap`:
dict leaves, copy-on-write, nothing for the cyclic GC to traverse), the indexes in
persistent ``immutables.Map`` s from value to bucket (:mod:`~aioinformer._cache.buckets`).

Contract:

* **One writer.** :meth:`SnapshotWriter.apply` is the only mutator and is synchronous: it
  applies a batch (see :mod:`~aioinformer._cache.batch`) and publishes exactly one new
  :class:`Snapshot` per non-empty batch with a single reference assignment. Nothing can
  run between the apply and the publish, on any thread: the writer may run on the event
  loop or in a thread of its own.
* **Readers never block, never are blocked.** :meth:`SnapshotReader.snapshot` is O(1),
  takes no lock and never awaits. A :class:`Snapshot` never changes after it is published:
  it can be held and iterated across any number of awaits while the writer keeps
  publishing.
* **Freshness.** ``Snapshot.resource_version`` is the resourceVersion of the last item
  the store applied (an event, a relist or a bookmark); ``Snapshot.seq`` counts publishes.
* **Indexes** are updated only when an object's index values change; ``by_index`` costs
  O(answer). :meth:`SnapshotWriter.add_indexer` builds a new index in chunks with awaits
  between, catches up with the batches applied meanwhile (an :class:`Evict` among them,
  whose removals are no changes, makes it build the index again over what is left, at
  once) and publishes; it never blocks readers or the writer.
* **In place when no one looks** (:func:`_unshared`). When nothing but the writer holds
  the current snapshot, a batch changes the object map in place wherever no older
  snapshot still shares it (``FrozenMap.mutate(owned=True)``, Rust's ``Arc::make_mut``):
  no copied leaves, no garbage. A snapshot anyone holds (a reader across awaits, an
  iterator) is never changed: the batch copies what it touches. Whether a batch went in
  place is counted (``SnapshotWriter.in_place_batches``) so that a reference held by
  mistake shows. If an in-place batch is interrupted half-way (MemoryError,
  KeyboardInterrupt), what it changed is published with every index rebuilt, and the
  exception propagates.
* **Readers on other threads** (``threaded=True``: the writer runs on an informer's
  pipeline thread). A reader may then take the current snapshot between any two steps
  of the writer, so the current snapshot is never written in place. The writer keeps
  the snapshot published before it (one batch behind) instead: no reader can take that
  one any more, so once nothing references it (:func:`_retired_unshared`: a count that
  can only go down) the batch replays the batch it missed onto its map in place, then
  applies itself (left-right, two maps taking turns); while anyone still holds it the
  batch copies from the current one as usual. An interrupted in-place batch changed
  only a map nobody can see: it is dropped, and the exception propagates.
* **Size.** :attr:`SnapshotWriter.cached_bytes` and :attr:`~SnapshotWriter.plain_bytes`
  are the totals of :mod:`~aioinformer._cache.footprint` over the current snapshot's
  objects, counted by each batch as it applies (O(1) per delta), updated right after
  the publish.
"""

from __future__ import annotations

import asyncio
import builtins
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

import immutables

from aioinformer._cache.batch import apply_batch, check_batch
from aioinformer._cache.buckets import (
    EMPTY_BUCKET,
    Bucket,
    BucketWriter,
    bucket_writer,
    finish_bucket,
)
from aioinformer._cache.deltas import Change, ChangeType, Delta, Evict, Replace
from aioinformer._cache.footprint import Tally, totals
from aioinformer._cache.index import (
    IndexFunc,
    IndexGuard,
    IndexPlan,
    check_indexers,
    index_plan,
    merge_indexers,
    metadata_reader,
    unknown_index,
)
from aioinformer._cache.pmap import IN_PLACE, FrozenMap, MapWriter
from aioinformer._core import logs
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject

if TYPE_CHECKING:
    from immutables._protocols import MapMutation

    from aioinformer._core.objects import ObjectMeta

__all__ = ["Snapshot", "SnapshotReader", "SnapshotWriter", "snapshot_store"]

log = logs.logger("aioinformer.store")

_Index: TypeAlias = "immutables.Map[str, Bucket]"
_EMPTY_INDEX: immutables.Map[str, Bucket] = immutables.Map()
_refs = sys.getrefcount


class Snapshot:
    """The store's state at one moment: immutable, so safe to hold across awaits.

    ``list()`` and ``by_index()`` return new lists (in no particular order); the objects
    in them are immutable and shared with the store. Get one from
    :meth:`Informer.snapshot <aioinformer.Informer.snapshot>`; the store's writer makes
    them.

    Args:
        objects: the persistent map of key to object.
        indexes: the persistent indexes, index name to (value to keys).
        resource_version: the resourceVersion of the last item applied.
        seq: the publish sequence number.
    """

    __slots__ = ("_indexes", "_objects", "_rv", "_seq")

    def __init__(
        self,
        objects: FrozenMap[str, KubeObject],
        indexes: immutables.Map[str, _Index],
        resource_version: int,
        seq: int,
    ) -> None:
        self._objects = objects
        self._indexes = indexes
        self._rv = resource_version
        self._seq = seq

    @property
    def resource_version(self) -> int:
        """The resourceVersion of the last item applied when this snapshot was published."""
        return self._rv

    @property
    def seq(self) -> int:
        """The publish sequence number: 0 for the empty store, +1 per published snapshot."""
        return self._seq

    def get(self, key: str) -> KubeObject | None:
        """The object stored under ``key`` ("ns/name", or "name" if cluster-scoped)."""
        return self._objects.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """Every object, or those in ``namespace`` (through the "namespace" index; cluster-
        scoped objects are in no namespace, so only in ``list()``)."""
        if namespace is None:
            return builtins.list(self._objects.values())
        return self.by_index("namespace", namespace)

    def by_index(self, name: str, value: str) -> builtins.list[KubeObject]:
        """The objects index ``name`` files under ``value``: O(answer), not O(cache).

        Raises :class:`ConfigError` (naming the known indexes) for an unknown index.
        """
        index = self._indexes.get(name)
        if index is None:
            raise unknown_index(name, self._indexes.keys())
        bucket = index.get(value)
        if bucket is None:
            return []
        return self._objects.get_all(bucket)

    def index_values(self, name: str) -> builtins.list[str]:
        """The values index ``name`` currently has at least one object under."""
        index = self._indexes.get(name)
        if index is None:
            raise unknown_index(name, self._indexes.keys())
        return builtins.list(index.keys())

    def keys(self) -> builtins.list[str]:
        """Every object key."""
        return builtins.list(self._objects.keys())

    def __len__(self) -> int:
        """The number of objects."""
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        """Whether an object is stored under ``key``."""
        return key in self._objects

    def __iter__(self) -> Iterable[KubeObject]:
        """Every object (as :meth:`list`), in no particular order."""
        return iter(self._objects.values())

    async def iter_chunks(
        self, namespace: str | None = None, chunk: int = 1000
    ) -> AsyncIterator[KubeObject]:
        """Yield every object (or those in ``namespace``), letting the loop run after each
        ``chunk`` objects, so a long scan never stalls the writer or other readers."""
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, not {chunk}")
        objects = self._objects
        if namespace is None:
            source: Iterable[KubeObject] = objects.values()
        else:
            bucket = self._indexes["namespace"].get(namespace, EMPTY_BUCKET)
            source = (objects[key] for key in bucket)
        n = 0
        for obj in source:
            yield obj
            n += 1
            if n == chunk:
                n = 0
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"<Snapshot seq={self._seq} rv={self._rv} objects={len(self._objects)}>"


class _IndexMutation:
    """One index being changed by one batch (or built by ``add_indexer``)."""

    __slots__ = ("base", "buckets", "fn", "name", "outer", "reads")

    def __init__(
        self,
        name: str,
        base: _Index,
        fn: IndexFunc,
        reads: Callable[[ObjectMeta], object] | None,
    ) -> None:
        self.name = name
        self.base = base
        self.fn = fn
        self.reads = reads
        self.outer: MapMutation[str, Bucket] | None = None
        self.buckets: dict[str, BucketWriter] = {}

    def change(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        fn, buckets = self.fn, self.buckets
        if old is None:
            if new is not None:
                for value in fn(new):
                    if (bucket := buckets.get(value)) is None:  # (an empty one is falsy)
                        bucket = self._bucket(value)
                    bucket[key] = True
            return
        old_values = tuple(fn(old))
        new_values = tuple(fn(new)) if new is not None else ()
        if old_values == new_values:
            return
        for value in old_values:
            if value not in new_values:
                if (bucket := buckets.get(value)) is None:
                    bucket = self._bucket(value)
                bucket.pop(key, None)
        for value in new_values:
            if value not in old_values:
                if (bucket := buckets.get(value)) is None:
                    bucket = self._bucket(value)
                bucket[key] = True

    def _bucket(self, value: str) -> BucketWriter:
        """Start changing the bucket of ``value`` (the first time this batch does)."""
        if self.outer is None:
            self.outer = self.base.mutate()
        bucket = self.buckets[value] = bucket_writer(self.outer.get(value, EMPTY_BUCKET))
        return bucket

    def finish(self) -> _Index | None:
        """The new index, or None if this batch did not change it."""
        outer = self.outer
        if outer is None:
            return None
        for value, writer in self.buckets.items():
            bucket = finish_bucket(writer)
            if bucket is not None:
                outer[value] = bucket
            else:
                outer.pop(value, None)
        return outer.finish()


class _SnapshotState:
    """The :class:`~aioinformer._cache.batch.BatchState` of one batch: writers over the
    current snapshot's map and indexes."""

    __slots__ = ("get", "indexes", "objects", "pop", "put", "put_all", "same")

    def __init__(
        self,
        snap: Snapshot,
        plan: IndexPlan,
        owned: bool = False,
        objects: MapWriter[str, KubeObject] | None = None,
    ) -> None:
        if objects is None:
            objects = snap._objects.mutate(owned=owned)
        self.objects = objects
        self.get, self.put, self.pop = objects.get, objects.set, objects.pop
        self.put_all = objects.set_many
        indexes = snap._indexes
        self.indexes = [
            _IndexMutation(name, indexes[name], fn, reads) for name, fn, reads in plan[0]
        ]
        self.same = plan[1]

    def reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if old is None or new is None:
            for index in self.indexes:
                index.change(key, old, new)
            return
        old_meta, new_meta = old.metadata, new.metadata
        for index in self.indexes:
            reads = index.reads
            if reads is None or reads(old_meta) != reads(new_meta):
                index.change(key, old, new)

    def entries(self) -> Iterable[tuple[str, KubeObject]]:
        return builtins.list(self.objects.items())

    def publish(self, base: Snapshot, rv: int) -> Snapshot:
        """The next snapshot after ``base``: unchanged indexes are shared as they are."""
        indexes = base._indexes
        mutation: MapMutation[str, _Index] | None = None
        for index in self.indexes:
            new = index.finish()
            if new is not None:
                if mutation is None:
                    mutation = indexes.mutate()
                mutation[index.name] = new
        if mutation is not None:
            indexes = mutation.finish()
        return Snapshot(self.objects.finish(), indexes, rv, base._seq + 1)


class _Replay:
    """A :class:`~aioinformer._cache.batch.BatchState` over a bare map writer: replays a
    batch's object changes with no index (the retired map catching up, see
    :func:`_retired_unshared`)."""

    __slots__ = ("get", "objects", "pop", "put", "put_all")
    same: Callable[[ObjectMeta], object] | None = None

    def __init__(self, objects: MapWriter[str, KubeObject]) -> None:
        self.objects = objects
        self.get, self.put, self.pop = objects.get, objects.set, objects.pop
        self.put_all = objects.set_many

    def reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        pass

    def entries(self) -> Iterable[tuple[str, KubeObject]]:
        return builtins.list(self.objects.items())


def _retired_unshared(writer: SnapshotWriter) -> bool:
    """Whether the retired snapshot (the one published before the current one) and its map
    can be written in place. No reader can take the retired snapshot any more (readers
    take the current one), so its reference counts can only go down: once they show the
    writer as the only holder (the attribute, this local and ``getrefcount``'s argument:
    3; the map: the snapshot's slot and the argument: 2), no thread can reach it again,
    and a check here stays true while the writer works on it."""
    snap = writer._retired
    return IN_PLACE and snap is not None and _refs(snap) == 3 and _refs(snap._objects) == 2


def _unshared(writer: SnapshotWriter) -> bool:
    """Whether the writer's current snapshot and its object map can be changed in place:
    nothing but the writer references them, so no one can reach them again once the
    batch's snapshot replaces them.

    The one place that reads reference counts for the store. Counted here: the snapshot's
    references are the writer's attribute, this function's local and ``getrefcount`` 's
    argument (3); the map's are the snapshot's slot and the argument (2). Anything more is
    a holder (a reader across awaits, an iterator, a local kept by mistake) and the batch
    copies instead. Only where reference counts can be trusted (:data:`IN_PLACE`).
    """
    snap = writer._current
    return IN_PLACE and _refs(snap) == 3 and _refs(snap._objects) == 2


class SnapshotWriter:
    """The one writer of a snapshot store (see the module docstring). Made by
    :func:`snapshot_store`; owned by the task (or thread) that applies batches."""

    def __init__(
        self, indexers: Mapping[str, IndexFunc] | None = None, *, threaded: bool = False
    ) -> None:
        self.threaded = threaded
        """Whether readers may run on other threads than the writer (see the module
        docstring)."""
        self._retired: Snapshot | None = None  # threaded: the snapshot before _current
        self._missed: Sequence[Delta] = ()  # threaded: the batch _retired lacks
        self._guard = IndexGuard(log)
        self._funcs = merge_indexers(indexers, self._guard)
        self._plan = index_plan(self._funcs)
        self._current = Snapshot(
            FrozenMap(),
            immutables.Map({name: _EMPTY_INDEX for name in self._funcs}),
            0,
            0,
        )
        self._building: dict[str, builtins.list[Change]] = {}
        self.batches = 0
        """Batches applied."""
        self.in_place_batches = 0
        """Batches that changed the current map in place (see :func:`_unshared`)."""
        self.cached_bytes = 0
        """The current snapshot's objects' cached bytes (:mod:`~aioinformer._cache.footprint`:
        bodies as held, compressed when compact, plus managedFields)."""
        self.plain_bytes = 0
        """:attr:`cached_bytes` with every body uncompressed (equal without compact mode)."""
        self._tally = Tally()  # (one per writer, reset per batch)
        self._evictions = 0  # batches with an Evict (whose removals are no changes)

    def apply(self, batch: Sequence[Delta], *, changes: bool = True) -> builtins.list[Change]:
        """Apply ``batch`` and publish one snapshot (none for an empty batch); return the
        changes in order (``[]`` without building any when ``changes`` is false: for a
        writer nobody listens to). Synchronous. A malformed batch raises TypeError and
        publishes nothing."""
        if not batch:
            return []
        if self.threaded:
            return self._apply_threaded(batch, changes)
        owned = _unshared(self)
        upserts = check_batch(batch)
        if not upserts and any(type(item) is Evict for item in batch):
            self._evictions += 1
        base = self._current
        state = _SnapshotState(base, self._plan, owned)
        building = self._building
        tally = self._tally
        tally.held = tally.expanded = 0
        try:
            applied, rv = apply_batch(
                state, batch, base._rv, changes or bool(building), upserts=upserts, tally=tally
            )
        except BaseException:
            if owned:  # interrupted half-way (MemoryError, KeyboardInterrupt): what changed
                self._current = self._reindexed(state.objects.finish(), base)  # stays
                self.cached_bytes, self.plain_bytes = totals(self._current._objects.values())
            raise
        self._current = state.publish(base, rv)
        return self._applied(applied, owned, changes, tally)

    def _apply_threaded(self, batch: Sequence[Delta], changes: bool) -> builtins.list[Change]:
        """:meth:`apply` with readers on other threads: in place only on the retired map
        (see the module docstring)."""
        owned = _retired_unshared(self)
        upserts = check_batch(batch)
        if not upserts and any(type(item) is Evict for item in batch):
            self._evictions += 1
        base = self._current
        objects: MapWriter[str, KubeObject] | None = None
        if owned:
            assert self._retired is not None
            objects = self._retired._objects.mutate(owned=True)
            self._retired = None  # (its map is ours now; nothing else refers to it)
            apply_batch(_Replay(objects), self._missed, base._rv, False)
        state = _SnapshotState(base, self._plan, objects=objects)
        building = self._building
        tally = self._tally
        tally.held = tally.expanded = 0
        try:
            applied, rv = apply_batch(
                state, batch, base._rv, changes or bool(building), upserts=upserts, tally=tally
            )
        except BaseException:
            self._retired = None  # (an in-place map half-written: nobody can see it)
            raise
        self._current = state.publish(base, rv)
        # the retired snapshot misses this batch; after a relist it would miss everything
        relist = not upserts and any(type(item) is Replace for item in batch)
        self._retired, self._missed = (None, ()) if relist else (base, batch)
        return self._applied(applied, owned, changes, tally)

    @property
    def snapshot_now(self) -> Snapshot:
        """The latest published snapshot (what the next batch is applied to)."""
        return self._current

    def changes_of(self, base: Snapshot, batch: Sequence[Delta]) -> builtins.list[Change]:
        """The changes ``batch`` made when it was applied to ``base`` (what :meth:`apply`
        would have returned), worked out again from ``base``: for a batch applied without
        building them, when a subscriber turns out to need them. ``base`` must be the
        snapshot the batch was applied to, held by the caller since (a held snapshot is
        never written in place, so it is still that state). Any thread; the store is not
        changed."""
        replay = _Replay(base._objects.mutate())
        changes, _ = apply_batch(replay, batch, base._rv, True, upserts=check_batch(batch))
        return changes

    def _applied(
        self, applied: builtins.list[Change], owned: bool, changes: bool, tally: Tally
    ) -> builtins.list[Change]:
        self.cached_bytes += tally.held
        self.plain_bytes += tally.held + tally.expanded
        self.batches += 1
        self.in_place_batches += owned
        for pending in self._building.values():
            pending.extend(applied)
        return applied if changes else []

    async def add_indexer(self, name: str, fn: IndexFunc, *, chunk: int = 2000) -> None:
        """Add index ``name`` while the store runs, then publish a snapshot that has it.

        Builds over the current snapshot ``chunk`` objects at a time, yielding to the loop
        between chunks, then applies the changes published meanwhile and publishes, with
        no await between the catch-up and the publish. Raises :class:`ConfigError` if the
        index exists or is being added.
        """
        check_indexers({name: fn})
        if name in self._funcs or name in self._building:
            raise ConfigError(f"index {name!r} already exists")
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, not {chunk}")
        fn = self._guard.guard(name, fn)
        pending: builtins.list[Change] = []
        self._building[name] = pending
        evictions = self._evictions
        try:
            index = _IndexMutation(name, _EMPTY_INDEX, fn, metadata_reader(fn))
            n = 0
            for key, obj in self._current._objects.items():
                index.change(key, None, obj)
                n += 1
                if n == chunk:
                    n = 0
                    await asyncio.sleep(0)
            for change in pending:
                new = None if change.type == ChangeType.DELETED else change.obj
                index.change(change.obj.key, change.old, new)
            if self._evictions != evictions:
                # a narrowing's removals are no changes: build it again over what is left
                index = _IndexMutation(name, _EMPTY_INDEX, fn, metadata_reader(fn))
                for key, obj in self._current._objects.items():
                    index.change(key, None, obj)
        finally:
            del self._building[name]
        built = index.finish()
        base = self._current
        self._funcs[name] = fn
        self._plan = index_plan(self._funcs)
        indexes = base._indexes.set(name, _EMPTY_INDEX if built is None else built)
        self._current = Snapshot(base._objects, indexes, base._rv, base._seq + 1)

    def _reindexed(self, objects: FrozenMap[str, KubeObject], base: Snapshot) -> Snapshot:
        """The snapshot after ``base`` with ``objects`` and every index built anew from
        them: consistent after an in-place batch was interrupted half-way. An index
        function interrupted again leaves that object out of that index (counted)."""
        indexes = base._indexes
        for name, fn, reads in self._plan[0]:
            index = _IndexMutation(name, _EMPTY_INDEX, fn, reads)
            for key, obj in objects.items():
                try:
                    index.change(key, None, obj)
                except BaseException:  # (the interrupt being handled propagates after)
                    self._guard.errors += 1
            indexes = indexes.set(name, index.finish() or _EMPTY_INDEX)
        return Snapshot(objects, indexes, base._rv, base._seq + 1)

    def __repr__(self) -> str:
        return f"<SnapshotWriter {self._current!r} indexes={builtins.list(self._funcs)}>"


class SnapshotReader:
    """What every reader of a snapshot store gets: the latest snapshot, no lock."""

    __slots__ = ("_writer",)

    def __init__(self, writer: SnapshotWriter) -> None:
        self._writer = writer

    def snapshot(self) -> Snapshot:
        """The latest published snapshot: O(1), no lock, no await."""
        return self._writer._current

    def get_now(self, key: str) -> KubeObject | None:
        """The object under ``key`` in the latest snapshot."""
        return self._writer._current.get(key)

    def list_now(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """Every object (or those in ``namespace``) of the latest snapshot."""
        return self._writer._current.list(namespace)

    @property
    def resource_version(self) -> int:
        """The resourceVersion of the latest published state."""
        return self._writer._current._rv

    @property
    def seq(self) -> int:
        """The sequence number of the latest published state."""
        return self._writer._current._seq

    def __len__(self) -> int:
        """The number of objects in the latest published state."""
        return len(self._writer._current._objects)

    @property
    def indexers(self) -> builtins.list[str]:
        """The names of the published indexes."""
        return builtins.list(self._writer._funcs)

    @property
    def index_errors(self) -> int:
        """Index function calls that raised (each left its object out of that index)."""
        return self._writer._guard.errors

    @property
    def cached_bytes(self) -> int:
        """The latest published objects' cached bytes (:attr:`SnapshotWriter.cached_bytes`)."""
        return self._writer.cached_bytes

    @property
    def plain_bytes(self) -> int:
        """The latest published objects' plain bytes (:attr:`SnapshotWriter.plain_bytes`)."""
        return self._writer.plain_bytes

    def __repr__(self) -> str:
        return f"<SnapshotReader {self._writer._current!r}>"


def snapshot_store(
    indexers: Mapping[str, IndexFunc] | None = None, *, threaded: bool = False
) -> tuple[SnapshotReader, SnapshotWriter]:
    """A new, empty snapshot store with the default indexes plus ``indexers``: its reader
    (for everyone) and its one writer (for the informer). ``threaded``: readers may run
    on other threads than the writer's (see the module docstring)."""
    writer = SnapshotWriter(indexers, threaded=threaded)
    return SnapshotReader(writer), writer
