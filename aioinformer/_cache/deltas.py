"""What flows through an informer: deltas into the store, changes out of it.

The vocabulary, one word per idea:

* a **watch event** is what the server sends (``ADDED``/``MODIFIED``/``DELETED``/
  ``BOOKMARK``/``ERROR``); it exists only on the wire and in the watcher;
* a **delta** (:data:`Delta`) is what the watcher queues in the FIFO and the writer applies:
  an :class:`ObjectDelta` (one object changed: one watch event), a :class:`Replace` (a
  relist: the complete new state, applied as one atomic swap), a :class:`Bookmark` (a
  resourceVersion with no object change) or an :class:`Evict` (the informer's shard scope
  narrowed: objects leave the cache, nothing happened to them);
* a **change** (:class:`Change`) is what applying a delta did to the store, of a
  :class:`ChangeType` (client-go's ``Added``/``Updated``/``Deleted``): what handlers and
  ``informer.changes()`` receive;
* an **Event** (capital E) is a Kubernetes Event object, written by
  :class:`~aioinformer.EventRecorder`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import msgspec

from aioinformer._core.objects import KubeObject

__all__ = ["Bookmark", "Change", "ChangeType", "Delta", "Evict", "ObjectDelta", "Replace"]


class ChangeType(enum.StrEnum):
    """What happened to one object (an :class:`ObjectDelta`'s and a :class:`Change`'s)."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"


class ObjectDelta(msgspec.Struct, frozen=True, gc=False):
    """One watch event: ``type`` happened to ``obj``.

    ``received`` is the informer clock's time when the watcher read the event. For DELETED,
    ``obj`` is the object's final state as the server sent it. Immutable (a frozen struct
    built in C: one per watch event, so it is kept cheap, and never tracked by the cyclic GC
    since it only refers to an untracked object, a str and a float).
    """

    type: ChangeType
    obj: KubeObject
    received: float


@dataclass(frozen=True, slots=True)
class Replace:
    """An atomic relist: ``objects`` is the complete new state at ``resource_version``.

    The store swaps it in as one published state and reports objects that vanished as
    deletions (tombstones).
    """

    objects: Sequence[KubeObject]
    resource_version: int
    received: float


@dataclass(frozen=True, slots=True)
class Bookmark:
    """The store is current up to ``resource_version``; no object changed."""

    resource_version: int
    received: float


@dataclass(frozen=True, slots=True)
class Evict:
    """The informer's scope narrowed (:meth:`~aioinformer.Informer.rescope`): the objects
    ``keep`` refuses leave the store as one published state, at the store's
    resourceVersion. No change is reported for them: nothing happened to them in the
    cluster, they only left this cache."""

    keep: Callable[[KubeObject], bool]
    received: float


Delta: TypeAlias = ObjectDelta | Replace | Bookmark | Evict
"""One entry of the FIFO: what the writer applies (a batch is a sequence of them)."""


@dataclass(frozen=True, slots=True)
class Change:
    """What one batch item did to the store: what handlers and ``informer.changes()`` receive."""

    type: ChangeType
    """ADDED, UPDATED or DELETED (:class:`~aioinformer.ChangeType`)."""
    obj: KubeObject
    """The object now; for DELETED the last known state: the object of the delete event,
    or for a relist tombstone the object the store held (then ``obj is old``)."""
    old: KubeObject | None
    """What the store held before (None only for ADDED)."""
