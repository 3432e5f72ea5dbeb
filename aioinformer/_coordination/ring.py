"""The shard ring as the server shows it: who holds each shard Lease of a
:class:`~aioinformer.ShardManager` and whether that shard is ready.

Read from the Leases alone (one list of their namespace), so any client with ``list`` on
Leases sees the whole ring, whichever replica it asks about: shard ``i``'s Lease
``NAME-shard-I`` names its holder (empty: released), the holder's readiness
(:data:`~aioinformer._coordination.sharding.READY_ANNOTATION`, trusted only while the
Lease has a holder and has not expired), the label buckets it covers
(:data:`~aioinformer._coordination.sharding.BUCKETS_ANNOTATION`) and when it was last
renewed; each live replica keeps ``NAME-member-IDENTITY``. Ages are measured by this
process's wall clock against the ``renewTime`` the holder wrote (by its own): an estimate,
as ``kubectl get leases`` shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aioinformer._coordination.lease import LeaseRecord
from aioinformer._coordination.sharding import BUCKETS_ANNOTATION, READY_ANNOTATION

__all__ = ["Ring", "RingShard", "read_ring"]


@dataclass(frozen=True, slots=True)
class RingShard:
    """One shard Lease as the server shows it."""

    shard: int
    holder: str
    """Its holder's identity ("" when released; "?" when its Lease is missing)."""
    ready: bool
    """Its holder says the shard is ready (caches synced and caught up, keys reconciled),
    and the Lease has not expired."""
    buckets: str
    """The label buckets it covers (``"00-3f"``; "" when not written)."""
    renewed_ago: float | None
    """Seconds since its holder last renewed it (None: never, or missing)."""
    expired: bool
    """Held, but not renewed for its ``leaseDurationSeconds``."""
    transitions: int
    """How many times it changed hands."""


@dataclass(frozen=True, slots=True)
class Ring:
    """The shard Leases of one :class:`~aioinformer.ShardManager` name, and its members."""

    shards: list[RingShard]
    """One per shard number up to the highest seen, missing Leases included."""
    members: list[str]
    """The identities whose member Lease has not expired."""

    @property
    def ready(self) -> int:
        """How many shards are ready."""
        return sum(s.ready for s in self.shards)


def read_ring(leases: Iterable[dict[str, Any]], name: str, now: datetime) -> Ring:
    """The ring of the ShardManager ``name`` in ``leases`` (one namespace's), at ``now``
    (an aware datetime)."""
    shard_name = re.compile(rf"{re.escape(name)}-shard-(\d+)")
    found: dict[int, RingShard] = {}
    members: list[str] = []
    for lease in leases:
        lease_name = str((lease.get("metadata") or {}).get("name") or "")
        record = LeaseRecord.from_lease(lease)
        ago = _age(record.renew_time, now)
        expired = bool(record.holder) and (ago is None or ago > record.duration_s)
        if lease_name.startswith(f"{name}-member-"):
            if record.holder and not expired:
                members.append(record.holder)
            continue
        match = shard_name.fullmatch(lease_name)
        if match is None:
            continue
        annotations = (lease.get("metadata") or {}).get("annotations") or {}
        ready = annotations.get(READY_ANNOTATION) == "true" and bool(record.holder)
        found[int(match[1])] = RingShard(
            shard=int(match[1]),
            holder=record.holder,
            ready=ready and not expired,
            buckets=str(annotations.get(BUCKETS_ANNOTATION) or ""),
            renewed_ago=ago,
            expired=expired,
            transitions=record.transitions,
        )
    count = max(found, default=-1) + 1
    shards = [found.get(i) or RingShard(i, "?", False, "", None, False, 0) for i in range(count)]
    return Ring(shards, sorted(members))


def _age(stamp: str | None, now: datetime) -> float | None:
    """Seconds from the MicroTime ``stamp`` to ``now`` (None: no stamp, or unreadable)."""
    if not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (now - then).total_seconds())
