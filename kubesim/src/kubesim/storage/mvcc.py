"""KubeSim's storage: etcd-like MVCC with one global revision, plus a watch cache.

Vocabulary:

* A *revision* (``rv``) is one global integer shared by every resource type, exactly
  like etcd's; the wire shows it as a decimal string. Every committed write takes the next
  revision, so one type sees gaps.
* A :class:`Stored` is one object at one revision, kept encoded (``raw`` JSON bytes) so
  200k pods cost little memory; the labels and the field-selector values are kept decoded
  beside it because selectors read them on every event.
* A :class:`TypeStore` holds the objects of one resource type, their keys sorted as etcd
  sorts them (``"namespace/name"``, or ``"name"`` for cluster-scoped types), and the
  type's *history*: the recent :class:`Event` s, which is both the watch cache (watches
  start from it) and the MVCC log (lists at an older revision roll the current state back
  through it).

Contracts:

* All methods are synchronous and never await: a commit is atomic with respect to the
  event loop, so readers (lists, watch streams) always see a consistent state.
* The history is bounded by ``history_size`` events and, optionally, ``history_max_age``
  seconds. Once it has evicted anything, a watch from an RV older than the oldest cached
  event minus one is "too old" (410), as the apiserver's watch cache answers.
* ``compacted_rv`` plays etcd's compaction: lists at an older exact revision, and continue
  tokens minted before it, are expired.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec

from kubesim.encoding import deepjson

__all__ = ["Event", "Mvcc", "Stored", "TypeStore", "exact_bytes"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


def exact_bytes(data: bytes) -> bytes:
    """``data`` in a bytes object of exactly its size. orjson's output keeps its growth
    buffer (measured: 8.1 KB held for a 3.5 KB pod), so anything stored long-term is
    copied once through this."""
    return memoryview(data).tobytes()


class Stored(msgspec.Struct, gc=False):
    """One object at one revision. Immutable by convention: writes make a new one.

    Like :class:`Event`, a ``gc=False`` struct: it refers only to strings, bytes and
    str->str dicts, so the cyclic GC never walks it. A sim under load makes one per write;
    as tracked objects they made the server's full collections take 0.3-0.5 s at 200k
    pods, stalling every watch stream."""

    key: str
    namespace: str
    rv: int
    raw: bytes
    uid: str
    labels: Mapping[str, str]
    fields: Mapping[str, str]

    def decode(self) -> dict[str, Any]:
        """A fresh, mutable copy of the object."""
        obj: dict[str, Any] = deepjson.loads(self.raw)
        return obj

    def with_rv(self, rv: int) -> Stored:
        """The same content re-stamped with revision ``rv`` (what a DELETED event carries)."""
        obj = self.decode()
        obj["metadata"]["resourceVersion"] = str(rv)
        raw = exact_bytes(deepjson.dumps(obj))
        return Stored(self.key, self.namespace, rv, raw, self.uid, self.labels, self.fields)


class Event(msgspec.Struct, gc=False):
    """A committed change of one object; ``prev`` is the state it replaced. ``Event(type,
    obj, prev, t)``: ``rv`` and ``key`` are the object's. Untracked by the GC (it refers
    only to :class:`Stored` s, which refer to nothing that could lead back to it)."""

    type: str
    obj: Stored
    prev: Stored | None
    t: float
    rv: int = 0
    key: str = ""
    deleted_obj: Stored | None = None

    def __post_init__(self) -> None:
        self.rv = self.obj.rv
        self.key = self.obj.key

    def left_selector(self) -> Stored:
        """The old content with this event's revision: what a watcher whose selector the
        object just left receives as DELETED."""
        if self.deleted_obj is None:
            assert self.prev is not None
            self.deleted_obj = self.prev.with_rv(self.rv)
        return self.deleted_obj


class TypeStore:
    """The objects and the history of one resource type (see the module docstring).

    ``objects`` maps each key to its current :class:`Stored`, ``keys`` holds the same keys
    in etcd's order, ``history`` the recent :class:`Event` s. Made by
    :meth:`Mvcc.type_store` (``sim.api.store(rt)`` in KubeSim); read it, never write it:
    writes go through the API, which commits them here.

    Args:
        mvcc: the storage this type belongs to (its revision counter and limits).
        name: the storage's name, ``plural[.group]``.
        start_rv: the revision the type starts at: a watch from an older one is too old.
    """

    def __init__(self, mvcc: Mvcc, name: str, start_rv: int) -> None:
        self._mvcc = mvcc
        self.name = name
        self.objects: dict[str, Stored] = {}
        self.keys: list[str] = []
        self.history: deque[Event] = deque()
        self.first_seq = 0  # sequence number of history[0]
        self.floor_rv = start_rv  # RVs below this are too old for a watch
        self.evicted = False
        self._waiters: list[asyncio.Future[None]] = []

    # -- reads ---------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """Sequence number the next event will get."""
        return self.first_seq + len(self.history)

    def get(self, key: str) -> Stored | None:
        """The current object at ``key`` (``namespace/name`` or ``name``), or None."""
        return self.objects.get(key)

    def key_range(self, namespace: str | None) -> tuple[int, int]:
        """Index range in ``keys`` of one namespace (or everything)."""
        if not namespace:
            return 0, len(self.keys)
        lo = bisect.bisect_left(self.keys, namespace + "/")
        hi = bisect.bisect_left(self.keys, namespace + "0")  # "0" sorts right after "/"
        return lo, hi

    def events_since(self, seq: int) -> list[Event] | None:
        """Events from sequence number ``seq`` on, or None if they were evicted."""
        if seq < self.first_seq:
            return None
        start = seq - self.first_seq
        if start >= len(self.history):
            return []
        return [self.history[i] for i in range(start, len(self.history))]

    def seq_after_rv(self, rv: int) -> int | None:
        """Sequence number of the first event with a revision greater than ``rv``; None if
        ``rv`` is older than the watch cache holds."""
        if rv < self.floor_rv:
            return None
        lo, hi = 0, len(self.history)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.history[mid].rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return self.first_seq + lo

    def state_at(self, rv: int) -> dict[str, Stored | None]:
        """Overrides that roll the current state back to revision ``rv``: for each key
        changed after ``rv``, its state at ``rv`` (None if it did not exist)."""
        overrides: dict[str, Stored | None] = {}
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            overrides[ev.key] = ev.prev  # the earliest change after rv wins (iterating back)
        return overrides

    def count_after(self, namespace: str | None, key: str, at_rv: int | None = None) -> int:
        """How many objects (of ``namespace``, or all) sort after ``key``, now or as of
        revision ``at_rv``: O(log n + changes since at_rv), not a walk over the rest."""
        _, hi = self.key_range(namespace)
        count = max(0, hi - bisect.bisect_right(self.keys, key))
        if at_rv is None or at_rv >= self._mvcc.rv:
            return count
        prefix = namespace + "/" if namespace else ""
        for k, old in self.state_at(at_rv).items():
            if k <= key or not k.startswith(prefix):
                continue
            exists_now = k in self.objects
            if old is None and exists_now:
                count -= 1  # created after at_rv
            elif old is not None and not exists_now:
                count += 1  # deleted after at_rv
        return count

    def iter_sorted(
        self, namespace: str | None, start_after: str | None, at_rv: int | None
    ) -> Iterator[Stored]:
        """Objects in key order, optionally after a key and as of an older revision."""
        lo, hi = self.key_range(namespace)
        if start_after is not None:
            lo = max(lo, bisect.bisect_right(self.keys, start_after))
        if at_rv is None or at_rv >= self._mvcc.rv:
            for i in range(lo, hi):
                yield self.objects[self.keys[i]]
            return
        overrides = self.state_at(at_rv)
        prefix = namespace + "/" if namespace else ""
        extra = sorted(
            k
            for k, v in overrides.items()
            if v is not None
            and k not in self.objects
            and k.startswith(prefix)
            and (start_after is None or k > start_after)
        )
        ei = 0
        for i in range(lo, hi):
            key = self.keys[i]
            while ei < len(extra) and extra[ei] < key:
                old = overrides[extra[ei]]
                assert old is not None
                yield old
                ei += 1
            if key in overrides:
                old = overrides[key]
                if old is not None:
                    yield old
            else:
                yield self.objects[key]
        for k in extra[ei:]:
            old = overrides[k]
            assert old is not None
            yield old

    # -- writes --------------------------------------------------------------------------

    def commit(self, key: str, new: Stored | None, event_type: str | None = None) -> Event:
        """Apply one change; ``new`` None deletes. The caller has stamped ``new.rv``
        (from :meth:`Mvcc.next_rv`); a deletion gets a fresh revision here."""
        prev = self.objects.get(key)
        now = self._mvcc.clock()
        if new is None:
            assert prev is not None
            del self.objects[key]
            i = bisect.bisect_left(self.keys, key)
            del self.keys[i]
            ev = Event(DELETED, prev.with_rv(self._mvcc.next_rv()), prev, now)
        else:
            if prev is None:
                bisect.insort(self.keys, key)
            self.objects[key] = new
            ev = Event(event_type or (ADDED if prev is None else MODIFIED), new, prev, now)
        self.history.append(ev)
        self._evict(now)
        self.wake()
        for listener in self._mvcc.on_commit:
            listener(self.name, ev)
        return ev

    def _evict(self, now: float) -> None:
        mvcc = self._mvcc
        max_age = mvcc.history_max_age
        evicted = False
        while self.history and (
            len(self.history) > mvcc.history_size
            or (max_age is not None and now - self.history[0].t > max_age)
        ):
            self.history.popleft()
            self.first_seq += 1
            evicted = True
        if evicted:
            self.evicted = True
            self.floor_rv = self.history[0].rv - 1 if self.history else mvcc.rv
            mvcc.compacted_rv = max(mvcc.compacted_rv, self.floor_rv)

    def expire(self, floor_rv: int) -> None:
        """Forget every event; watches from an RV below ``floor_rv`` become too old."""
        self.first_seq += len(self.history)
        self.history.clear()
        self.floor_rv = floor_rv
        self.evicted = True

    # -- waiting -------------------------------------------------------------------------

    def wake(self) -> None:
        """Wake every watch stream waiting on this type."""
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def changed(self) -> asyncio.Future[None]:
        """A future that completes at the next commit to this type (or :meth:`wake`)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut


class Mvcc:
    """The global revision, the compaction point and the per-type stores.

    Args:
        history_size: events each type's history keeps at most.
        history_max_age: seconds an event stays in a history (None: no age limit).
        clock: the time events are stamped with and aged by (``time.monotonic``).
    """

    def __init__(
        self,
        history_size: int = 10_000,
        history_max_age: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.rv = 1
        self.compacted_rv = 0
        self.history_size = history_size
        self.history_max_age = history_max_age
        self.types: dict[str, TypeStore] = {}
        #: Called with (type name, event) after every commit, synchronously: a listener
        #: records what it must do and acts later (it must not commit from inside).
        self.on_commit: list[Callable[[str, Event], None]] = []

    def next_rv(self) -> int:
        """Take the next revision (every write, including a deletion, takes one)."""
        self.rv += 1
        return self.rv

    def type_store(self, name: str) -> TypeStore:
        """The store of one resource type, created empty on first use."""
        ts = self.types.get(name)
        if ts is None:
            ts = self.types[name] = TypeStore(self, name, self.rv)
        return ts

    def drop_type(self, name: str) -> TypeStore | None:
        return self.types.pop(name, None)

    def compact(self, rv: int | None = None) -> int:
        """etcd compaction at ``rv`` (default: the current revision). Exact lists and
        continue tokens older than it expire; watches are unaffected (the watch cache
        still holds its window)."""
        target = self.rv if rv is None else min(rv, self.rv)
        self.compacted_rv = max(self.compacted_rv, target)
        return self.compacted_rv

    def expire_watch_caches(self) -> None:
        """What an apiserver restart does to the watch caches: every RV below the current
        revision is too old from now on."""
        for ts in self.types.values():
            ts.expire(self.rv)
