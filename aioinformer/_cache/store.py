"""The store: one writer applies FIFO batches; readers get immutable snapshots, no lock.

:class:`SnapshotStore` keeps the objects in a persistent hash map (:class:`._pmap.FrozenMap`:
dict leaves, copy-on-write, nothing for the cyclic GC to traverse; measured cheaper per update
than ``immutables.Map``, whose GC-tracked HAMT nodes each update clones) and the indexes in
persistent ``immutables.Map`` s from value to bucket (:mod:`._buckets`: small ones dicts the
GC never scans, large ones HAMTs; changed only when index values change). Contract:

* **One writer.** :meth:`SnapshotStore.apply` is the only mutator. It applies a batch
  without awaiting (so nothing can interleave with it), then publishes exactly one new
  :class:`Snapshot` per non-empty batch with a single reference assignment, and returns
  the :class:`Change` list of the batch, in order.
* **Readers never block, never are blocked.** :meth:`SnapshotStore.snapshot` is O(1), takes
  no lock and never awaits. A :class:`Snapshot` never changes after it is published: it
  can be held and iterated across any number of awaits while the writer keeps publishing.
* **Freshness.** ``Snapshot.resource_version`` is the highest resourceVersion the store
  has applied (objects, relists, bookmarks); it never goes backwards. ``Snapshot.seq``
  counts publishes (+1 per snapshot).
* **Indexes** (see :mod:`._index`) are updated only when an object's index values change;
  ``by_index`` costs O(answer). :meth:`SnapshotStore.add_indexer` builds a new index in
  chunks with awaits between, catches up with the batches applied meanwhile and publishes;
  it never blocks readers or the writer.
* Batch semantics: a Delta ADDED/UPDATED upserts, a DELETED removes (deleting an unknown
  key is ignored); a Replace makes the store equal to its objects in the same swap,
  reporting ADDED, UPDATED (resourceVersion changed) and DELETED (vanished keys:
  tombstones) changes; a Bookmark only advances ``resource_version``. An index function
  that raises (or returns anything but strings) leaves that object out of that index,
  counted in ``index_errors`` and logged (:class:`._index.IndexGuard`): the writer goes on.
  A batch with an item that is not a Delta of a KubeObject, a Replace of KubeObjects or a
  Bookmark raises TypeError and publishes nothing: the previous snapshot stays current.
* **In place when no one looks.** When nobody but the store holds the current snapshot,
  a batch changes the object map in place wherever no older snapshot still shares it
  (``FrozenMap.mutate(owned=True)``, Rust's ``Arc::make_mut``): no copied leaves, no
  garbage. A snapshot anyone holds (a reader across awaits, an iterator) never changes.
  If such a batch is interrupted half-way (MemoryError, KeyboardInterrupt), what it
  changed is published with every index rebuilt, and the exception propagates.

:class:`LockedStore` (in :mod:`._locked_store`, re-exported here) is the baseline the
benchmarks compare against: dicts behind a readers-writer lock, client-go's ThreadSafeStore.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, cast

import immutables

from aioinformer._cache.buckets import (
    EMPTY_BUCKET,
    Bucket,
    BucketWriter,
    bucket_writer,
    finish_bucket,
)
from aioinformer._cache.index import (
    DEFAULT_INDEXERS,
    IndexFunc,
    IndexGuard,
    metadata_reader,
    metadata_readers,
)
from aioinformer._cache.pmap import IN_PLACE, FrozenMap
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject

if TYPE_CHECKING:
    from immutables._protocols import MapMutation

    from aioinformer._core.objects import ObjectMeta

__all__ = [
    "BookmarkLike",
    "Change",
    "DeltaLike",
    "LockedStore",
    "ReplaceLike",
    "Snapshot",
    "SnapshotStore",
    "StoreItem",
    "StoreView",
]

log = logging.getLogger("aioinformer.store")

ChangeType: TypeAlias = Literal["ADDED", "UPDATED", "DELETED"]


@dataclass(frozen=True, slots=True)
class Change:
    """What one batch item did to the store.

    ``old`` is what the store held before (None only for ADDED). For DELETED, ``obj`` is
    the last known state: the object of the delete event, or for a relist tombstone the
    object the store held (then ``obj is old``).
    """

    type: ChangeType
    obj: KubeObject
    old: KubeObject | None


# What the store consumes from the FIFO, declared here so that _store does not import
# _fifo: aioinformer._cache.fifo.Delta / Replace / Bookmark satisfy these structurally.
class DeltaLike(Protocol):
    """One watch event (``type`` is "Added", "Updated" or "Deleted")."""

    @property
    def type(self) -> str: ...
    @property
    def obj(self) -> KubeObject: ...


class ReplaceLike(Protocol):
    """A relist: the complete new state."""

    @property
    def objects(self) -> Sequence[KubeObject]: ...
    @property
    def resource_version(self) -> int: ...


class BookmarkLike(Protocol):
    """A resourceVersion with no object change."""

    @property
    def resource_version(self) -> int: ...


StoreItem: TypeAlias = DeltaLike | ReplaceLike | BookmarkLike
"""An item a store applies (``aioinformer._cache.fifo.Item`` conforms)."""

_DELTA, _REPLACE, _BOOKMARK = 1, 2, 3
_refs = sys.getrefcount
_kinds: dict[type, int] = {}


def _classify(item: object) -> int:
    cls = type(item)
    if hasattr(item, "obj") and hasattr(item, "type"):
        kind = _DELTA
    elif hasattr(item, "objects") and hasattr(item, "resource_version"):
        kind = _REPLACE
    elif hasattr(item, "resource_version"):
        kind = _BOOKMARK
    else:
        raise TypeError(f"not a store item (Delta, Replace or Bookmark): {cls.__name__}")
    _kinds[cls] = kind
    return kind


class _State(Protocol):
    """A store's state for the length of one batch (what :func:`apply_batch` needs).

    ``put`` and ``pop`` change the object map only and return what the key held before
    (None if nothing), ``put_all`` puts many objects in order and returns those, in order;
    ``reindex(key, old, new)`` then brings every index in step (``old``
    or ``new`` None for an addition or a removal). ``same`` reads, from an object's
    metadata, everything the indexes depend on (None: they read more than the metadata):
    an update whose ``same`` is unchanged changes no index, so it is not reindexed. The
    split keeps the per-event path to one call into the state: most updates change no
    index value."""

    same: Callable[[ObjectMeta], object] | None

    def get(self, key: str) -> KubeObject | None: ...
    def put(self, key: str, obj: KubeObject) -> KubeObject | None: ...
    def put_all(
        self, keys: Sequence[str], objs: Sequence[KubeObject]
    ) -> builtins.list[KubeObject | None]: ...
    def pop(self, key: str) -> KubeObject | None: ...
    def reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None: ...
    def entries(self) -> Iterable[tuple[str, KubeObject]]: ...


def apply_batch(
    state: _State,
    batch: Sequence[StoreItem],
    rv: int,
    collect: bool = True,
    *,
    upserts: bool = False,
) -> tuple[builtins.list[Change], int]:
    """Apply ``batch`` to ``state``; return the changes (none built unless ``collect``)
    and max(rv, every rv seen). ``upserts``: every item is a Delta that adds or updates
    (:func:`check_batch` tells), and the batch takes the bulk path."""
    if upserts and len(batch) > 1:  # (for one item the lists cost more than they save)
        return _apply_upserts(state, cast("Sequence[DeltaLike]", batch), rv, collect)
    changes: list[Change] = []
    append = changes.append if collect else None
    get, put, pop, reindex, same = state.get, state.put, state.pop, state.reindex, state.same
    kinds = _kinds
    for item in batch:
        kind = kinds.get(type(item)) or _classify(item)
        if kind == _DELTA:
            delta: DeltaLike = item  # type: ignore[assignment]  # (cast() is a call)
            obj = delta.obj
            if obj.rv > rv:
                rv = obj.rv
            key = obj.key
            if delta.type == "Deleted":
                old = pop(key)
                if old is not None:
                    reindex(key, old, None)
                    if append is not None:
                        append(Change("DELETED", obj, old))
                continue
            old = put(key, obj)
            if old is None:
                reindex(key, None, obj)
            elif same is None or same(old.metadata) != same(obj.metadata):
                reindex(key, old, obj)
            if append is not None:
                append(Change("ADDED" if old is None else "UPDATED", obj, old))
        elif kind == _REPLACE:
            replace = cast("ReplaceLike", item)
            rv = max(rv, replace.resource_version)
            fresh = {obj.key: obj for obj in replace.objects}
            vanished = [key for key, _ in state.entries() if key not in fresh]
            for key, obj in fresh.items():
                if obj.rv > rv:
                    rv = obj.rv
                old = get(key)
                if old is None or old.rv != obj.rv:
                    put(key, obj)
                    reindex(key, old, obj)
                    if append is not None:
                        append(Change("ADDED" if old is None else "UPDATED", obj, old))
            for key in vanished:
                old = pop(key)
                if old is not None:
                    reindex(key, old, None)
                    if append is not None:
                        append(Change("DELETED", old, old))
        else:
            rv = max(rv, cast("BookmarkLike", item).resource_version)
    return changes, rv


def _apply_upserts(
    state: _State, batch: Sequence[DeltaLike], rv: int, collect: bool
) -> tuple[builtins.list[Change], int]:
    """:func:`apply_batch` for a batch of Deltas that all add or update (the usual batch
    of a watch): the map takes them in one call, then the indexes follow in order."""
    objs = [delta.obj for delta in batch]
    keys = [obj.key for obj in objs]
    olds = state.put_all(keys, objs)
    same, reindex = state.same, state.reindex
    changes: list[Change] = []
    append = changes.append if collect else None
    # (one entry per item in each list; zip(strict=True) parses its keyword at every
    # call, a cost small batches notice)
    for key, obj, old in zip(keys, objs, olds):  # noqa: B905
        if obj.rv > rv:
            rv = obj.rv
        if old is None:
            reindex(key, None, obj)
        elif same is None or same(old.metadata) != same(obj.metadata):
            reindex(key, old, obj)
        if append is not None:
            append(Change("ADDED" if old is None else "UPDATED", obj, old))
    return changes, rv


def check_batch(batch: Iterable[StoreItem]) -> bool:
    """Raise TypeError for an item that is not a Delta (with a KubeObject), a Replace or a
    Bookmark, before anything is applied. Return whether every item is a Delta that adds
    or updates (``apply_batch(..., upserts=True)``)."""
    upserts = True
    for item in batch:
        kind = _kinds.get(type(item)) or _classify(item)
        held: Iterable[object] = ()
        if kind == _DELTA:
            obj: object = item.obj  # type: ignore[union-attr]
            if not isinstance(obj, KubeObject):
                held = (obj,)
            elif item.type == "Deleted":  # type: ignore[union-attr]
                upserts = False
        else:
            upserts = False
            if kind == _REPLACE:
                held = item.objects  # type: ignore[union-attr]
        for one in held:
            if not isinstance(one, KubeObject):
                raise TypeError(
                    f"{type(item).__name__} of a {type(one).__name__}, not a KubeObject"
                )
    return upserts


def merge_indexers(
    indexers: Mapping[str, IndexFunc] | None, guard: IndexGuard
) -> dict[str, IndexFunc]:
    """DEFAULT_INDEXERS plus ``indexers``, each made safe by ``guard``; redefining a
    default index is a ConfigError."""
    merged = dict(DEFAULT_INDEXERS)
    for name, fn in (indexers or {}).items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"index names are non-empty strings, not {name!r}")
        if name in merged and merged[name] is not fn:
            raise ConfigError(f"index {name!r} is built in and cannot be redefined")
        merged[name] = fn
    return {name: guard.guard(name, fn) for name, fn in merged.items()}


def unknown_index(name: str, known: Iterable[str]) -> ConfigError:
    """The error for a query on an index that does not exist."""
    return ConfigError(f"no index {name!r}; known indexes: {', '.join(sorted(known))}")


class StoreView(Protocol):
    """The reader API shared by :class:`Snapshot` and ``LockedStore``'s view."""

    @property
    def resource_version(self) -> int: ...
    @property
    def seq(self) -> int: ...
    def get(self, key: str) -> KubeObject | None: ...
    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]: ...
    def by_index(self, name: str, value: str) -> builtins.list[KubeObject]: ...
    def index_values(self, name: str) -> builtins.list[str]: ...
    def keys(self) -> builtins.list[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object) -> bool: ...
    def iter_chunks(
        self, namespace: str | None = None, chunk: int = 1000
    ) -> AsyncIterator[KubeObject]: ...


_Index: TypeAlias = "immutables.Map[str, Bucket]"
_EMPTY_INDEX: immutables.Map[str, Bucket] = immutables.Map()


class Snapshot:
    """The store's state at one moment: immutable, so safe to hold across awaits.

    ``list()`` and ``by_index()`` return new lists (in no particular order); the objects
    in them are immutable and shared with the store.
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
        """The highest resourceVersion applied when this snapshot was published."""
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


IndexPlan: TypeAlias = tuple[
    builtins.list[tuple[str, IndexFunc, "Callable[[ObjectMeta], object] | None"]],
    "Callable[[ObjectMeta], object] | None",
]
"""Per index (name, function, metadata reader), and the reader of all of them at once:
worked out when the indexes change, not per batch."""


def index_plan(funcs: Mapping[str, IndexFunc]) -> IndexPlan:
    return (
        [(name, fn, metadata_reader(fn)) for name, fn in funcs.items()],
        metadata_readers(funcs.values()),
    )


class _SnapshotState:
    """The :class:`_State` of one SnapshotStore batch: writers over the last snapshot."""

    __slots__ = ("get", "indexes", "objects", "pop", "put", "put_all", "same")

    def __init__(self, snap: Snapshot, plan: IndexPlan, owned: bool = False) -> None:
        self.objects = objects = snap._objects.mutate(owned=owned)
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


class _SnapshotReader:
    """``async with store.read() as snap``: the current snapshot, no lock."""

    __slots__ = ("_store",)

    def __init__(self, store: SnapshotStore) -> None:
        self._store = store

    async def __aenter__(self) -> Snapshot:
        return self._store._snapshot

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class SnapshotStore:
    """The lock-free store: one writer publishing immutable :class:`Snapshot` s.

    Example::

        store = SnapshotStore({"node": by_field("spec.nodeName")})
        changes = await store.apply(await fifo.pop_batch())
        snap = store.snapshot()
        pods = snap.by_index("node", "node-1")
    """

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._guard = IndexGuard(log)
        self._funcs = merge_indexers(indexers, self._guard)
        self._plan = index_plan(self._funcs)
        self._snapshot = Snapshot(
            FrozenMap(),
            immutables.Map({name: _EMPTY_INDEX for name in self._funcs}),
            0,
            0,
        )
        self._building: dict[str, builtins.list[Change]] = {}
        self.on_publish: builtins.list[Callable[[Snapshot], None]] = []
        """Called with each newly published snapshot, in order (e.g. to wake freshness
        waiters). Must not raise (errors are logged) and must not block."""

    def snapshot(self) -> Snapshot:
        """The latest published snapshot: O(1), no lock, no await."""
        return self._snapshot

    def read(self) -> _SnapshotReader:
        """``async with store.read() as snap``: the current snapshot (takes no lock)."""
        return _SnapshotReader(self)

    @property
    def indexers(self) -> builtins.list[str]:
        """The names of the published indexes."""
        return builtins.list(self._funcs)

    @property
    def index_errors(self) -> int:
        """Index function calls that raised (each left its object out of that index)."""
        return self._guard.errors

    async def apply(
        self, batch: Sequence[StoreItem], *, changes: bool | Callable[[], bool] = True
    ) -> builtins.list[Change]:
        """Apply ``batch`` and publish one snapshot (none for an empty batch).

        Runs to completion without awaiting. Returns the changes in order. With
        ``changes`` false (or a callable returning false, asked as the batch is applied)
        it builds no Change objects and returns ``[]``: for a writer nobody listens to.
        """
        if not batch:
            return []
        if callable(changes):
            changes = changes()
        base = self._snapshot
        objects = base._objects
        # Nobody else holds the current snapshot (its three references: the attribute,
        # ``base`` and the argument) nor its map (the snapshot's, ``objects``, the
        # argument): the writer may update in place what no older snapshot shares, since
        # no one can see ``base`` again. A malformed item fails before any change.
        owned = IN_PLACE and _refs(base) == 3 and _refs(objects) == 3
        del objects
        upserts = check_batch(batch)
        state = _SnapshotState(base, self._plan, owned)
        building = self._building
        try:
            applied, rv = apply_batch(
                state, batch, base._rv, changes or bool(building), upserts=upserts
            )
        except BaseException:
            if owned:  # interrupted half-way (MemoryError, KeyboardInterrupt): what changed
                self._publish(self._reindexed(state.objects.finish(), base))  # stays
            raise
        self._publish(state.publish(base, rv))
        for pending in building.values():
            pending.extend(applied)
        return applied if changes else []

    async def add_indexer(self, name: str, fn: IndexFunc, *, chunk: int = 2000) -> None:
        """Add index ``name`` while the store runs, then publish a snapshot that has it.

        Builds over the current snapshot ``chunk`` objects at a time, yielding to the loop
        between chunks, then applies the changes published meanwhile and publishes, with
        no await between the catch-up and the publish. Raises :class:`ConfigError` if the
        index exists or is being added.
        """
        if not isinstance(name, str) or not name:
            raise ConfigError(f"index names are non-empty strings, not {name!r}")
        if name in self._funcs or name in self._building:
            raise ConfigError(f"index {name!r} already exists")
        if chunk < 1:
            raise ConfigError(f"chunk must be at least 1, not {chunk}")
        fn = self._guard.guard(name, fn)
        pending: builtins.list[Change] = []
        self._building[name] = pending
        try:
            index = _IndexMutation(name, _EMPTY_INDEX, fn, metadata_reader(fn))
            n = 0
            for key, obj in self._snapshot._objects.items():
                index.change(key, None, obj)
                n += 1
                if n == chunk:
                    n = 0
                    await asyncio.sleep(0)
            for change in pending:
                new = None if change.type == "DELETED" else change.obj
                index.change(change.obj.key, change.old, new)
        finally:
            del self._building[name]
        built = index.finish()
        base = self._snapshot
        self._funcs[name] = fn
        self._plan = index_plan(self._funcs)
        indexes = base._indexes.set(name, _EMPTY_INDEX if built is None else built)
        self._publish(Snapshot(base._objects, indexes, base._rv, base._seq + 1))

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

    def _publish(self, snap: Snapshot) -> None:
        self._snapshot = snap
        for hook in tuple(self.on_publish):
            try:
                hook(snap)
            except Exception:
                log.exception("on_publish hook %r failed", hook)

    def __repr__(self) -> str:
        return f"<SnapshotStore {self._snapshot!r} indexes={self.indexers}>"


from aioinformer._cache.locked_store import LockedStore  # noqa: E402  (re-export; it imports this module)
