"""The store interface: one writer, any number of readers, two implementations.

A store is a ``(reader, writer)`` pair (kube-rs's ``reflector::store()``): :func:`open_store`
makes one. The informer owns the :class:`StoreWriter` and is the only code that changes the
store; everyone else gets the :class:`StoreReader`. Both implementations keep the same
batch semantics (:mod:`~aioinformer._cache.batch`) and the same indexes:

* ``"snapshot"`` (:mod:`~aioinformer._cache.snapshot_store`): immutable snapshots published
  by one reference assignment; readers never take a lock and never slow the writer.
* ``"locked"`` (:mod:`~aioinformer._cache.locked_store`): the baseline, client-go's
  ThreadSafeStore shape, a dict behind a readers-writer lock; kept for the demo and the
  benchmarks, behind the same informer.

The writer's contract, in its signatures: ``async with writer.writing():`` is the only
place it may wait (the baseline waits for its readers there; the snapshot store never
waits), and :meth:`StoreWriter.apply` is synchronous, so nothing can run between applying a
batch, publishing it and dispatching its changes.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol, TypeAlias

from aioinformer._cache.deltas import Change, Item
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.locked_store import locked_store
from aioinformer._cache.snapshot_store import Snapshot, snapshot_store
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject

__all__ = ["STORE_KINDS", "StoreKind", "StoreReader", "StoreView", "StoreWriter", "open_store"]

StoreKind: TypeAlias = Literal["snapshot", "locked"]
"""Which store an informer keeps: immutable snapshots, or the lock-based baseline."""
STORE_KINDS: tuple[StoreKind, ...] = ("snapshot", "locked")


class StoreView(Protocol):
    """The reader API: a :class:`~aioinformer.Snapshot`, or the baseline's view inside
    ``async with reader.read()``."""

    @property
    def resource_version(self) -> int:
        """The resourceVersion of the last item applied to this state."""
        ...

    @property
    def seq(self) -> int:
        """The publish sequence number: 0 for the empty store, +1 per published state."""
        ...

    def get(self, key: str) -> KubeObject | None:
        """The object stored under ``key`` ("ns/name", or "name" if cluster-scoped)."""
        ...

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """Every object, or those in ``namespace`` (a new list, in no particular order)."""
        ...

    def by_index(self, name: str, value: str) -> builtins.list[KubeObject]:
        """The objects index ``name`` files under ``value`` (a new list, no order);
        :class:`~aioinformer.ConfigError` for an unknown index."""
        ...

    def index_values(self, name: str) -> builtins.list[str]:
        """The values index ``name`` holds objects under."""
        ...

    def keys(self) -> builtins.list[str]:
        """Every key."""
        ...

    def __len__(self) -> int: ...
    def __contains__(self, key: object) -> bool: ...

    def iter_chunks(
        self, namespace: str | None = None, chunk: int = 1000
    ) -> AsyncIterator[KubeObject]:
        """``async for obj in view.iter_chunks()``: every object (or ``namespace``'s),
        yielding to the event loop after every ``chunk`` objects, so a long scan does not
        hold up the loop."""
        ...


class StoreReader(Protocol):
    """What everyone but the writer gets.

    ``read()`` works for both stores (the baseline holds its read lock for the body);
    ``snapshot()`` only where ``supports_snapshots`` (the baseline raises
    :class:`~aioinformer.ConfigError`). ``resource_version``, ``seq`` and ``len()`` describe
    the last published state and never wait; ``list_now()`` and ``get_now()`` read its
    objects without waiting.
    """

    @property
    def supports_snapshots(self) -> bool:
        """Whether :meth:`snapshot` works (the snapshot store; not the baseline)."""
        ...

    def snapshot(self) -> Snapshot:
        """The latest published state: O(1), no lock, no await."""
        ...

    def read(self) -> AbstractAsyncContextManager[StoreView]:
        """``async with reader.read() as view``: the latest state with the Snapshot API
        (the baseline holds its read lock for the body)."""
        ...

    def list_now(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """The objects of the last published state (or ``namespace``'s), without
        waiting."""
        ...

    def get_now(self, key: str) -> KubeObject | None:
        """The object under ``key`` in the last published state, without waiting."""
        ...

    @property
    def resource_version(self) -> int:
        """The resourceVersion of the last published state."""
        ...

    @property
    def seq(self) -> int:
        """The sequence number of the last published state."""
        ...

    def __len__(self) -> int: ...

    @property
    def indexers(self) -> builtins.list[str]:
        """The names of the store's indexes."""
        ...

    @property
    def index_errors(self) -> int:
        """Index function calls that raised (the object was left out of that index)."""
        ...


class StoreWriter(Protocol):
    """The one writer: owned by the task (or thread) that applies batches."""

    @property
    def batches(self) -> int: ...
    @property
    def in_place_batches(self) -> int: ...
    def writing(self) -> AbstractAsyncContextManager[None]: ...
    def apply(self, batch: Sequence[Item], *, changes: bool = True) -> builtins.list[Change]: ...
    async def add_indexer(self, name: str, fn: IndexFunc) -> None: ...


def open_store(
    kind: StoreKind = "snapshot",
    indexers: Mapping[str, IndexFunc] | None = None,
    *,
    threaded: bool = False,
) -> tuple[StoreReader, StoreWriter]:
    """A new, empty store of ``kind`` with the default indexes plus ``indexers``: its reader
    and its one writer. ``threaded``: readers may run on other threads than the writer
    (the snapshot store only; the baseline's lock is an asyncio one).
    :class:`~aioinformer.ConfigError` for an unknown kind."""
    if kind == "snapshot":
        return snapshot_store(indexers, threaded=threaded)
    if threaded:
        raise ConfigError(f"store {kind!r} has readers on the writer's event loop only")
    if kind == "locked":
        return locked_store(indexers)
    raise ConfigError(f"store must be one of {', '.join(map(repr, STORE_KINDS))}, not {kind!r}")
