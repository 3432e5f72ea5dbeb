"""bench/scaleout.py's judges, on hand-made journals: a replica's write to a key whose shard
Lease another replica holds counts, two replicas' writes to one key in flight at once
count, a create answered 409 counts; the shards are "stable" only once each holder that
took a shard logged it ready after taking it, with fair shares; the targets are held or
missed by the ratios the docs state."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import scaleout

KEY = "ps-0/set-0"


def lease(t: float, shard: int, holder: str) -> list[Any]:
    """A 200 write of shard ``shard``'s Lease naming ``holder``, ended at ``t``."""
    return [t - 0.01, t, holder or "x", "PUT", "leases", "default", f"d-shard-{shard}", "", 200,
            holder]  # fmt: skip


def write(t0: float, t1: float, user: str, status: int = 200, method: str = "PATCH") -> list[Any]:
    return [t0, t1, user, method, "podsets", "ps-0", "set-0", "status", status, None]


def cluster(shards: int = 2) -> Any:
    return SimpleNamespace(shard_of_podset={KEY: 0}, shards=shards)


def test_a_write_without_the_lease_and_two_writes_at_once_are_counted() -> None:
    journal = [
        lease(1.0, 0, "a"),
        write(2.0, 2.1, "a"),  # a holds shard 0: fine
        lease(3.0, 0, ""),  # released
        lease(4.0, 0, "b"),
        write(4.5, 4.8, "b"),  # b holds it: fine
        write(4.6, 4.7, "a"),  # a without the Lease, in flight with b's write
        write(6.0, 6.1, "b", status=409, method="POST"),  # a create that found the pod
        write(7.0, 7.1, "writer"),  # not a replica: not judged
    ]
    found = scaleout.analyse(journal, cluster(), "d", ["a", "b"])
    assert found["replica_writes"] == 3
    assert found["writes_without_the_lease"] == 1
    assert found["overlapping_writes_by_two_replicas"] == 1
    assert found["creates_409"] == 1
    assert "a PATCH podsets/status ps-0/set-0" in found["examples"][0]


def test_clean_hand_offs_count_nothing() -> None:
    journal = [lease(1.0, 0, "a"), write(2.0, 2.1, "a"), lease(3.0, 0, "b"), write(3.5, 3.6, "b")]
    found = scaleout.analyse(journal, cluster(), "d", ["a", "b"])
    assert found["writes_without_the_lease"] == found["overlapping_writes_by_two_replicas"] == 0
    assert found["closest_handoff_seconds"] == 1.4


def replica(identity: str, ready: dict[int, float]) -> Any:
    return SimpleNamespace(identity=identity, ready=ready, alive=True)


def test_stable_needs_a_ready_log_after_the_take_and_fair_shares() -> None:
    judge = scaleout.Cluster.phase
    journal = [lease(1.0, 0, "a"), lease(1.0, 1, "b")]
    a, b = replica("a", {0: 2.0}), replica("b", {1: 0.5})  # b's log predates its take
    assert judge(cluster(), journal, "d", [a, b]) == "owned"  # type: ignore[arg-type]
    b.ready[1] = 1.5
    assert judge(cluster(), journal, "d", [a, b]) == "stable"  # type: ignore[arg-type]
    b.alive = False
    assert judge(cluster(), journal, "d", [a, b]) == "moving"  # type: ignore[arg-type]
    journal.append(lease(5.0, 1, "a"))
    a.ready[1] = 6.0
    assert judge(cluster(), journal, "d", [a, b]) == "stable"  # type: ignore[arg-type]
    c = replica("c", {})
    assert judge(cluster(), journal, "d", [a, c]) == "owned", "c holds none: not fair"  # type: ignore[arg-type]


def row(identity: str, rss: int, objects: int, received: int, cpu: float) -> dict[str, Any]:
    return {"identity": identity, "rss_bytes": rss, "podsets": 0, "pods": objects,
            "bytes_received": received, "cpu_seconds": cpu}  # fmt: skip


def test_targets_are_ratios_within_the_run() -> None:
    runs = [
        {"mode": "server", "replicas": 1, "per_replica": [row("r0", 1000, 100, 1000, 10.0)]},
        {"mode": "server", "replicas": 2, "per_replica": [
            row("r0", 600, 60, 600, 6.0), row("r1", 700, 61, 500, 5.0)]},
    ]  # fmt: skip
    verdicts = {t["target"]: t["held"] for t in scaleout.targets(runs, overhead_rss=50)}
    # RSS 700 > 1.2 * 1000 / 2 + 50 = 650; objects 61 <= 60? no; bytes 600 <= 600; CPU 6 < 10
    assert verdicts == {"rss": False, "objects": False, "bytes_received": True, "cpu_falls": True}
