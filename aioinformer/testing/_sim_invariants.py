"""The simulation's invariants, checked as the run goes, from the server's write log.

:class:`Invariants` listens to KubeSim's commits (``Mvcc.on_commit``): every write the
server applies, in its order, with the user that made it (each replica has its own user, so
a write is attributed to the replica that sent it even when two replicas share a Lease
identity) and the key it acts on (a primary object's own key, or its controller owner's for
an object it controls). The simulation also reports each reconcile as it starts and ends,
and samples every replica's own view of which Leases it holds. The invariants, each checked
at the moment it could first be broken:

``two-writers``
    Never two replicas acting on one key: a replica writes for a key only while the Lease
    guarding it (the leader Lease, or the key's shard Lease) was last acquired or renewed
    by that replica itself, not by another. (A write while someone who is not a replica
    holds the Lease, or while it is deleted, is no second replica.)
``two-holders``
    Never two replicas holding one Lease at once by their own clocks (``is_leader``, or the
    shard in ``owned_shards()``), sampled every :data:`SAMPLE_PERIOD` virtual seconds: the
    seconds it lasted are the run's ``overlap_seconds``.
``duplicate-child``
    Never more live children (controller ownerReference to the primary's uid, not
    terminating) than the primary ever asked for: checked at every child's commit.
``stale-snapshot``
    No reconcile on a snapshot older than the controller's last write: when a reconcile
    of a key starts on a replica, every informer of that replica that follows an object
    the replica last wrote for the key has seen that write (its snapshot's resourceVersion
    is at least the write's, as the server committed it, whether its answer arrived or not),
    unless the server no longer holds the object written and the snapshot does not either
    (a write whose effect is gone again: a create the garbage collector undid, say, that a
    settlement found absent by a list; the snapshot shows what the server holds of it).
``unreconciled``
    Every object eventually reconciled: once the faults are lifted, every primary's last
    version is reconciled (a reconcile that started on a snapshot holding it, and
    returned), and the workload's ``done`` holds for it, within the settle time.
``crashed``
    No replica's manager ends with an error.
``runaway``
    The run ends: its event loop takes at most ``MAX_STEPS`` iterations (code that runs
    without ever waiting would keep virtual time from moving).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from aioinformer._cache.informer import Informer
from kubesim.registry.context import requester
from kubesim.storage.mvcc import Event

__all__ = ["INVARIANTS", "SAMPLE_PERIOD", "Invariants", "Violation", "Write"]

INVARIANTS = (
    "two-writers", "two-holders", "duplicate-child", "stale-snapshot", "unreconciled", "crashed",
    "runaway",
)  # fmt: skip
"""Every invariant the simulation checks (see the module docstring)."""

SAMPLE_PERIOD = 0.1
"""Virtual seconds between two samples of who holds which Lease."""

LEASES = "leases.coordination.k8s.io"
_DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant."""

    invariant: str
    """Which (:data:`INVARIANTS`)."""
    at: float
    """Virtual seconds since the replicas started."""
    detail: str
    """What happened, with the replicas, keys and resourceVersions involved."""

    def __str__(self) -> str:
        return f"{self.at:9.3f}s {self.invariant}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Write:
    """One write the server applied (an entry of the write log)."""

    rv: int
    at: float
    writer: str
    """The user that made it: a replica's name, or someone else's (``admin``, KubeSim's
    own controllers)."""
    store: str
    """KubeSim's storage name of its resource (``pods``, ``leases.coordination.k8s.io``)."""
    op: str
    """ADDED, MODIFIED or DELETED."""
    key: str
    """The object's key (``namespace/name``)."""
    acts_on: str | None
    """The primary key it acts on (None: not the operator's)."""
    namespace: str
    labels: Mapping[str, str]


@dataclass
class _Term:
    replica: str | None  # who acquired or renewed it last (None: no replica holds it)
    holder: str  # holderIdentity as written


@dataclass
class Invariants:
    """The write log and the invariants over it (see the module docstring).

    Args:
        clock: virtual seconds since the replicas started.
        identities: each replica's name and its Lease identity.
        primary_store: KubeSim's storage name of the primaries' resource.
        primary_kind: their kind (what their children's ownerReferences name).
        primary_group: their API group ("" for the core group).
        child_store: the storage name of their children's resource (None: none checked).
        expected_children: how many children a primary (a dict) asks for.
        guard_of: the name of the Lease that guards a key.
        guard_of_uid: with sharded caches, the name of the Lease that guards an object
            (by its uid, or its controller owner's); None: by key.
        lease_namespace: where the coordination Leases are.
    """

    clock: Callable[[], float]
    identities: Mapping[str, str]
    primary_store: str
    primary_kind: str
    primary_group: str
    child_store: str | None
    expected_children: Callable[[Mapping[str, Any]], int] | None
    guard_of: Callable[[str], str]
    lease_namespace: str
    guard_of_uid: Callable[[str], str] | None = None
    """With sharded caches: the Lease guarding the object of uid ``uid`` (a primary's, or
    a child's controller owner's): ownership is by object, not by name."""
    writes: list[Write] = field(default_factory=list)
    """Every write, in the server's order."""
    violations: list[Violation] = field(default_factory=list)
    overlap_seconds: float = 0.0
    """Seconds during which two replicas held one Lease at once (sampled), summed over
    the Leases."""
    conflicting_writes: int = 0
    """Writes made for a key while another replica held its Lease."""
    duplicate_children: int = 0
    """Live children beyond what their primary ever asked for (each counted once)."""
    stale_reconciles: int = 0
    """Reconciles started on a snapshot older than their replica's last write for the key."""
    _terms: dict[str, _Term] = field(default_factory=dict)
    _last_write: dict[tuple[str, str], Write] = field(default_factory=dict)
    _held: dict[str, set[str]] = field(default_factory=dict)
    """Per store, the keys of the objects the server holds now (from the log)."""
    _live: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _asked: dict[str, int] = field(default_factory=dict)  # primary uid -> most ever asked
    _excess: dict[str, int] = field(default_factory=dict)  # primary uid -> excess reported
    _primary_rv: dict[str, int] = field(default_factory=dict)  # key -> current rv
    _reconciled: dict[str, int] = field(default_factory=dict)  # key -> newest rv reconciled
    _overlapping: set[str] = field(default_factory=set)

    def violate(self, invariant: str, detail: str) -> None:
        self.violations.append(Violation(invariant, round(self.clock(), 6), detail))

    # -- the write log ----------------------------------------------------------------------

    def committed(self, store: str, ev: Event) -> None:
        """KubeSim's ``on_commit`` listener: one applied write."""
        obj = ev.obj
        body: dict[str, Any] = orjson.loads(obj.raw)
        meta = body.get("metadata") or {}
        acts_on = self._acts_on(store, obj.key, obj.namespace, meta)
        write = Write(
            obj.rv,
            round(self.clock(), 6),
            requester().name,
            store,
            ev.type,
            obj.key,
            acts_on,
            obj.namespace,
            dict(obj.labels),
        )
        self.writes.append(write)
        held = self._held.setdefault(store, set())
        if ev.type == "DELETED":
            held.discard(obj.key)
        else:
            held.add(obj.key)
        if store == LEASES and obj.namespace == self.lease_namespace:
            self._lease_written(write, body)
        if store == self.primary_store:
            self._primary_written(write, meta, body)
        if store == self.child_store:
            self._child_written(write, meta)
        if acts_on is not None and write.writer in self.identities:
            self._last_write[(write.writer, acts_on)] = write
            self._check_writer(write, self._guard(store, meta, acts_on))

    def _acts_on(self, store: str, key: str, namespace: str, meta: Mapping[str, Any]) -> str | None:
        if store == self.primary_store:
            return key
        for ref in meta.get("ownerReferences") or ():
            if not ref.get("controller") or ref.get("kind") != self.primary_kind:
                continue
            if str(ref.get("apiVersion", "")).rpartition("/")[0] == self.primary_group:
                return f"{namespace}/{ref.get('name')}" if namespace else str(ref.get("name"))
        return None

    def _lease_written(self, write: Write, body: Mapping[str, Any]) -> None:
        name = write.key.rpartition("/")[2]
        if write.op == _DELETED:
            self._terms[name] = _Term(None, "")
            return
        holder = str((body.get("spec") or {}).get("holderIdentity") or "")
        term = self._terms.get(name)
        if self.identities.get(write.writer) == holder and holder:
            self._terms[name] = _Term(write.writer, holder)
        elif term is not None and term.replica is not None and term.holder == holder:
            pass  # touched by someone else, the holder kept
        else:
            self._terms[name] = _Term(None, holder)

    def _guard(self, store: str, meta: Mapping[str, Any], acts_on: str) -> str:
        """The Lease guarding what a write acts on: by key, or by the object's uid."""
        if self.guard_of_uid is None:
            return self.guard_of(acts_on)
        if store == self.primary_store:
            return self.guard_of_uid(str(meta.get("uid") or ""))
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == self.primary_kind:
                return self.guard_of_uid(str(ref.get("uid") or ""))
        return self.guard_of(acts_on)

    def _check_writer(self, write: Write, lease: str) -> None:
        assert write.acts_on is not None
        term = self._terms.get(lease)
        if term is None or term.replica is None or term.replica == write.writer:
            return
        self.conflicting_writes += 1
        self.violate(
            "two-writers",
            f"{write.writer} wrote {write.store} {write.key} ({write.op}, rv {write.rv}) for "
            f"{write.acts_on} while {term.replica} held Lease {lease}",
        )

    def _primary_written(self, write: Write, meta: Mapping[str, Any], body: Any) -> None:
        if write.op == _DELETED:
            self._primary_rv.pop(write.key, None)
            return
        self._primary_rv[write.key] = write.rv
        if self.expected_children is not None:
            uid = str(meta.get("uid", ""))
            self._asked[uid] = max(self._asked.get(uid, 0), self.expected_children(body))

    def _child_written(self, write: Write, meta: Mapping[str, Any]) -> None:
        owner = next(
            (r.get("uid") for r in meta.get("ownerReferences") or () if r.get("controller")),
            None,
        )
        if owner is None:
            return
        live = self._live[owner]
        if write.op == _DELETED or meta.get("deletionTimestamp"):
            live.discard(write.key)
            return
        live.add(write.key)
        asked = self._asked.get(owner)
        if asked is None:
            return
        excess = len(live) - asked
        if excess > self._excess.get(owner, 0):
            self.duplicate_children += excess - self._excess.get(owner, 0)
            self._excess[owner] = excess
            by = write.writer if write.op == "ADDED" else "?"
            self.violate(
                "duplicate-child",
                f"{write.acts_on or owner}: {len(live)} live children, at most {asked} ever "
                f"asked for ({write.key} created by {by} at rv {write.rv})",
            )

    # -- reconciles ---------------------------------------------------------------------------

    def reconcile_started(
        self, replica: str, key: str, informers: Sequence[Informer], primary_rv: int | None
    ) -> None:
        """A reconcile of ``key`` starts on ``replica``, its informers as they are now
        (``primary_rv``: the primary's resourceVersion in its snapshot, None: absent)."""
        last = self._last_write.get((replica, key))
        if last is None:
            return
        for inf in informers:
            if not _caches(inf, last):
                continue
            snapshot = inf.snapshot()
            have = snapshot.resource_version
            gone = last.key not in self._held.get(last.store, ()) and snapshot.get(last.key) is None
            if have < last.rv and not gone:
                self.stale_reconciles += 1
                self.violate(
                    "stale-snapshot",
                    f"{replica} reconciles {key} on {inf.name} at rv {have}, before its own "
                    f"write of {last.key} ({last.op}, rv {last.rv})",
                )
                return

    def reconcile_ended(self, key: str, primary_rv: int | None, ok: bool) -> None:
        """A reconcile of ``key`` that started with the primary at ``primary_rv`` ended
        (``ok``: returned, whatever it asked for next)."""
        if ok and primary_rv is not None:
            self._reconciled[key] = max(self._reconciled.get(key, 0), primary_rv)

    def unreconciled(self) -> list[str]:
        """The primaries whose last version no reconcile has seen through (key, rvs)."""
        return [
            f"{key} at rv {rv}, last reconciled at rv {self._reconciled.get(key, 'never')}"
            for key, rv in sorted(self._primary_rv.items())
            if self._reconciled.get(key, 0) < rv
        ]

    # -- holders ------------------------------------------------------------------------------

    def sampled(self, holders: Mapping[str, Sequence[str]]) -> None:
        """Who holds each Lease now, by each replica's own clock."""
        for lease, names in holders.items():
            if len(names) < 2:
                self._overlapping.discard(lease)
                continue
            self.overlap_seconds += SAMPLE_PERIOD
            if lease not in self._overlapping:
                self._overlapping.add(lease)
                self.violate("two-holders", f"{' and '.join(names)} both hold Lease {lease}")

    @property
    def overlap(self) -> float:
        """:attr:`overlap_seconds`, rounded to the sample period."""
        return round(self.overlap_seconds, int(-math.log10(SAMPLE_PERIOD)))


def _caches(inf: Informer, write: Write) -> bool:
    """Whether ``inf`` is told about the object ``write`` wrote."""
    plural, _, group = write.store.partition(".")
    if (inf.plural, inf.group) != (plural, group):
        return False
    return inf.follows(write.namespace, write.labels)
