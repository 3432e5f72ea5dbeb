"""Expectations: a controller never acts twice on the same missing (or extra) object.

client-go's ControllerExpectations, for asyncio. Before a reconcile creates ``n`` objects
for an owner it records ``expect_creations(owner, n)``; the owned-object informer calls
``creation_observed(owner)`` for each one it sees. Until every expected creation (and
deletion) has been observed — or ``ttl`` seconds have passed, in case an event was lost —
the owner's expectations are unsatisfied and the controller does not reconcile it: its
cache may not show the objects it just created, and acting on that cache is exactly how
the contention scenario's StatefulSet controller created duplicate pods.

A failed create must be un-expected with ``creation_observed`` (the informer will never
see it), as client-go's controllers do. So must a created object that was deleted before
any owned informer saw it (created and deleted between two states it published, e.g.
across a relist): the informer will never see it either. Passing the object's ``uid``
makes each object count once, whoever reports it first (the informer's ADD, or the writer
that found it gone once the informer had caught up with its creation): a uid reported
again is ignored for ``ttl`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Expectations"]


@dataclass
class _Pending:
    adds: int
    deletes: set[str]
    since: float


class Expectations:
    """Per-owner counts of creations and deletions not yet observed in the cache.

    Args:
        ttl: seconds after which unmet expectations are treated as satisfied (client-go:
            5 minutes), so a lost event delays a controller instead of stopping it.
        clock: measures the ``ttl`` (default ``time.monotonic``).
    """

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._counted: dict[str, dict[str, float]] = {}  # owner -> uid -> when, oldest first

    def expect_creations(self, owner: str, count: int) -> None:
        """Record that ``count`` objects are about to be created for ``owner``."""
        if count <= 0:
            return
        p = self._pending.get(owner)
        if p is None or self._expired(p):
            self._pending[owner] = _Pending(count, set(), self._clock())
        else:
            p.adds += count
            p.since = self._clock()  # a new expectation restarts the clock, as client-go

    def expect_deletions(self, owner: str, keys: set[str] | list[str]) -> None:
        """Record that the objects ``keys`` ("ns/name") are about to be deleted."""
        if not keys:
            return
        p = self._pending.get(owner)
        if p is None or self._expired(p):
            self._pending[owner] = _Pending(0, set(keys), self._clock())
        else:
            p.deletes.update(keys)
            p.since = self._clock()

    def creation_observed(self, owner: str, uid: str | None = None) -> None:
        """One expected creation was seen in the cache (or failed, or was deleted unseen, and
        will never be). With ``uid``, the object's: a second report of it is ignored."""
        if uid and not self._count_once(owner, uid):
            return
        p = self._pending.get(owner)
        if p is not None and p.adds > 0:
            p.adds -= 1
            self._gc(owner, p)

    def _count_once(self, owner: str, uid: str) -> bool:
        """Whether ``uid`` is reported for the first time within ``ttl`` (and remember it)."""
        now = self._clock()
        counted = self._counted.setdefault(owner, {})
        while counted:  # oldest first: drop what is older than the ttl
            oldest = next(iter(counted))
            if now - counted[oldest] <= self.ttl:
                break
            del counted[oldest]
        if uid in counted:
            return False
        counted[uid] = now
        return True

    def deletion_observed(self, owner: str, key: str) -> None:
        """The deletion of ``key`` was seen in the cache (or failed)."""
        p = self._pending.get(owner)
        if p is not None:
            p.deletes.discard(key)
            self._gc(owner, p)

    def satisfied(self, owner: str) -> bool:
        """Whether ``owner`` may be reconciled: nothing pending, or pending too long."""
        p = self._pending.get(owner)
        if p is None:
            return True
        if self._expired(p):
            del self._pending[owner]
            return True
        return p.adds <= 0 and not p.deletes

    def pending(self, owner: str) -> tuple[int, int]:
        """(creations, deletions) still expected for ``owner``."""
        p = self._pending.get(owner)
        return (0, 0) if p is None else (max(p.adds, 0), len(p.deletes))

    def owners(self) -> list[str]:
        """The owners with expectations pending (met or expired ones may be among them
        until :meth:`satisfied` is asked)."""
        return list(self._pending)

    def forget(self, owner: str) -> None:
        """Drop ``owner``'s expectations (e.g. when the owner itself is deleted)."""
        self._pending.pop(owner, None)
        self._counted.pop(owner, None)

    def _expired(self, p: _Pending) -> bool:
        return self._clock() - p.since > self.ttl

    def _gc(self, owner: str, p: _Pending) -> None:
        if p.adds <= 0 and not p.deletes:
            del self._pending[owner]
