"""The batch semantics every store shares: what a FIFO batch does to objects and indexes.

A store hands :func:`apply_batch` a :class:`BatchState` (its object map and indexes, being
changed for this one batch) and gets back the :class:`~aioinformer._cache.deltas.Change` s
and the new resourceVersion. Per item:

* a :class:`ObjectDelta` ADDED/UPDATED upserts, DELETED removes (deleting an unknown key is a
  no-op, reported as nothing);
* a :class:`Replace` makes the store equal to its objects: ADDED and UPDATED (the
  resourceVersion changed) for what it brings, DELETED tombstones for the keys that vanished;
* a :class:`Bookmark` changes no object;
* an :class:`Evict` removes the objects its ``keep`` refuses, reporting no change (they left
  the informer's scope; nothing happened to them) and keeping the resourceVersion.

The batch's resourceVersion is the resourceVersion of its **last** item (a Replace's list RV,
a Bookmark's, a ObjectDelta's object's): the store then reflects the server's state as of that
item, even when the server's revisions went backwards (an etcd restore, a new server on the
same address), which only a Replace can bring about. Within a watch, RVs only grow.

The batch also counts what it changed in the store's size (:mod:`~aioinformer._cache.footprint`)
into a :class:`~aioinformer._cache.footprint.Tally`: O(1) per item, inline for plain objects.

:func:`check_batch` rejects a malformed batch (an item that is not a ObjectDelta of a KubeObject, a
Replace of KubeObjects or a Bookmark) with ``TypeError`` before a store changes anything.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from aioinformer._cache.deltas import (
    Bookmark,
    Change,
    ChangeType,
    Delta,
    Evict,
    ObjectDelta,
    Replace,
)
from aioinformer._cache.footprint import Tally
from aioinformer._core.objects import KubeObject

if TYPE_CHECKING:
    from aioinformer._core.objects import ObjectMeta

__all__ = ["BatchState", "apply_batch", "check_batch"]

_ADDED, _UPDATED, _DELETED = ChangeType.ADDED, ChangeType.UPDATED, ChangeType.DELETED
_KubeObject = KubeObject


class BatchState(Protocol):
    """A store's state for the length of one batch (what :func:`apply_batch` needs).

    ``put`` and ``pop`` change the object map only and return what the key held before
    (None if nothing), ``put_all`` puts many objects in order and returns those, in order;
    ``reindex(key, old, new)`` then brings every index in step (``old`` or ``new`` None for
    an addition or a removal). ``same`` reads, from an object's metadata, everything the
    indexes depend on (None: they read more than the metadata): an update whose ``same`` is
    unchanged changes no index, so it is not reindexed. The split keeps the per-event path
    to one call into the state: most updates change no index value."""

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
    state: BatchState,
    batch: Sequence[Delta],
    rv: int,
    collect: bool = True,
    *,
    upserts: bool = False,
    tally: Tally | None = None,
) -> tuple[builtins.list[Change], int]:
    """Apply ``batch`` to ``state``; return the changes (none built unless ``collect``) and
    the resourceVersion after it (see the module docstring; ``rv`` if the batch is empty).
    ``upserts``: every item is a ObjectDelta that adds or updates (:func:`check_batch` tells),
    and the batch takes the bulk path. ``tally`` receives the change in bytes once the
    whole batch is applied (nothing if it raises)."""
    if tally is None:
        tally = Tally()
    if upserts and len(batch) > 1:  # (for one item the lists cost more than they save)
        return _apply_upserts(state, cast("Sequence[ObjectDelta]", batch), collect, tally)
    changes: list[Change] = []
    append = changes.append if collect else None
    get, put, pop, reindex, same = state.get, state.put, state.pop, state.reindex, state.same
    other, kube = tally.other, _KubeObject
    held = 0  # (the sizes inline: a call per object costs twice as much)
    for item in batch:
        if type(item) is ObjectDelta:
            obj = item.obj
            rv = obj.rv
            key = obj.key
            if item.type == _DELETED:
                old = pop(key)
                if old is not None:
                    held -= (
                        len(old.body) + len(old.managed_fields)
                        if type(old) is kube
                        else other(old, -1)
                    )
                    reindex(key, old, None)
                    if append is not None:
                        append(Change(_DELETED, obj, old))
                continue
            old = put(key, obj)
            held += len(obj.body) + len(obj.managed_fields) if type(obj) is kube else other(obj, 1)
            if old is None:
                reindex(key, None, obj)
            else:
                held -= (
                    len(old.body) + len(old.managed_fields) if type(old) is kube else other(old, -1)
                )
                if same is None or same(old.metadata) != same(obj.metadata):
                    reindex(key, old, obj)
            if append is not None:
                append(Change(_ADDED if old is None else _UPDATED, obj, old))
        elif type(item) is Replace:
            rv = item.resource_version
            fresh = {obj.key: obj for obj in item.objects}
            vanished = [key for key, _ in state.entries() if key not in fresh]
            for key, obj in fresh.items():
                old = get(key)
                if old is None or old.rv != obj.rv:
                    put(key, obj)
                    held += other(obj, 1) - (0 if old is None else other(old, -1))
                    reindex(key, old, obj)
                    if append is not None:
                        append(Change(_ADDED if old is None else _UPDATED, obj, old))
            for key in vanished:
                old = pop(key)
                if old is not None:
                    held -= other(old, -1)
                    reindex(key, old, None)
                    if append is not None:
                        append(Change(_DELETED, old, old))
        elif type(item) is Evict:
            keep = item.keep
            for key in [key for key, obj in state.entries() if not keep(obj)]:
                old = pop(key)
                if old is not None:
                    held -= other(old, -1)
                    reindex(key, old, None)
        else:
            rv = cast("Bookmark", item).resource_version
    tally.held += held
    return changes, rv


def _apply_upserts(
    state: BatchState, batch: Sequence[ObjectDelta], collect: bool, tally: Tally
) -> tuple[builtins.list[Change], int]:
    """:func:`apply_batch` for a batch of Deltas that all add or update (the usual batch
    of a watch): the map takes them in one call, then the indexes follow in order."""
    objs = [delta.obj for delta in batch]
    keys = [obj.key for obj in objs]
    olds = state.put_all(keys, objs)
    same, reindex = state.same, state.reindex
    changes: list[Change] = []
    append = changes.append if collect else None
    other, kube = tally.other, _KubeObject
    held = 0
    # (one entry per item in each list; zip(strict=True) parses its keyword at every
    # call, a cost small batches notice)
    for key, obj, old in zip(keys, objs, olds):  # noqa: B905
        held += len(obj.body) + len(obj.managed_fields) if type(obj) is kube else other(obj, 1)
        if old is None:
            reindex(key, None, obj)
        else:
            held -= len(old.body) + len(old.managed_fields) if type(old) is kube else other(old, -1)
            if same is None or same(old.metadata) != same(obj.metadata):
                reindex(key, old, obj)
        if append is not None:
            append(Change(_ADDED if old is None else _UPDATED, obj, old))
    tally.held += held
    return changes, objs[-1].rv


def check_batch(batch: Iterable[object]) -> bool:
    """Raise TypeError for an item that is not a ObjectDelta (with a KubeObject), a Replace or a
    Bookmark, before anything is applied. Return whether every item is a ObjectDelta that adds
    or updates (``apply_batch(..., upserts=True)``)."""
    upserts = True
    for item in batch:
        cls = type(item)
        if cls is ObjectDelta:
            delta = cast("ObjectDelta", item)
            if not isinstance(delta.obj, KubeObject):
                raise TypeError(f"ObjectDelta of a {type(delta.obj).__name__}, not a KubeObject")
            if delta.type == _DELETED:
                upserts = False
            continue
        upserts = False
        if cls is Replace:
            for one in cast("Replace", item).objects:
                if not isinstance(one, KubeObject):
                    raise TypeError(f"Replace of a {type(one).__name__}, not a KubeObject")
        elif cls is not Bookmark and cls is not Evict:
            raise TypeError(
                f"not a store item (ObjectDelta, Replace, Bookmark or Evict): {cls.__name__}"
            )
    return upserts
