"""What flows through an informer: Deltas into the store, Changes out of it.

The watcher turns the server's events into FIFO :data:`Item` s: a :class:`Delta` (one watch
event), a :class:`Replace` (a relist: the complete new state, applied as one atomic swap)
or a :class:`Bookmark` (a resourceVersion with no object change). The store applies them
and reports each effect as a :class:`Change`, which the handlers fan out. One vocabulary
names what happened to an object everywhere: :class:`DeltaType` (client-go's
``Added``/``Updated``/``Deleted``); the server's ``ADDED``/``MODIFIED``/``DELETED`` only
appear on the wire.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import msgspec

from aioinformer._core.objects import KubeObject

__all__ = ["Bookmark", "Change", "ChangeType", "Delta", "DeltaType", "Item", "Replace"]


class DeltaType(enum.StrEnum):
    """What happened to one object."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"


ChangeType: TypeAlias = DeltaType
"""The type of a :class:`Change` (the same vocabulary as a Delta's)."""


class Delta(msgspec.Struct, frozen=True, gc=False):
    """One watch event: ``type`` happened to ``obj``.

    ``received`` is the informer clock's time when the watcher read the event. For DELETED,
    ``obj`` is the object's final state as the server sent it. Immutable (a frozen struct
    built in C: one per watch event, so it is kept cheap, and never tracked by the cyclic GC
    since it only refers to an untracked object, a str and a float).
    """

    type: DeltaType
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


Item: TypeAlias = Delta | Replace | Bookmark
"""One entry of the FIFO, one item of a store batch."""


@dataclass(frozen=True, slots=True)
class Change:
    """What one batch item did to the store: what handlers and ``events()`` receive."""

    type: DeltaType
    """ADDED, UPDATED or DELETED (:class:`~aioinformer.ChangeType`)."""
    obj: KubeObject
    """The object now; for DELETED the last known state: the object of the delete event,
    or for a relist tombstone the object the store held (then ``obj is old``)."""
    old: KubeObject | None
    """What the store held before (None only for ADDED)."""
