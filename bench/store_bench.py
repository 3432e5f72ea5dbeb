"""The snapshot store against the lock-based baseline: publish cost, indexed vs scanned reads,
iteration, memory.

For each store size (default 10k and 200k realistic pods, 1000 per StatefulSet, managed
fields dropped, the contention scenario's shape; ``--per-owner 100`` for owners the size of most
ReplicaSets, whose index buckets are small) and each store kind this measures:

* **publish cost per update**: applying batches (``writer.apply(batch)``, as the informer's
  writer does; the baseline's under its write lock, ``async with writer.writing():``) of
  status-like updates (new
  resourceVersion, same index values) to random existing pods, in batches of 1 and of 100,
  in microseconds per update (CPU time; the best of ``--repeat`` passes). For the snapshot
  store each batch publishes one new immutable Snapshot. Target: at 200k within 2x of 10k,
  taken from ``paired_ratio_large_vs_small``: both sizes loaded together and their passes
  interleaved, ``--pairs`` ratios of two back-to-back passes (the per-size figures are
  measured tens of seconds apart, and this host runs 1.6x slower for seconds at a time).
* **by_index vs full scan**: the 1000 pods of one StatefulSet through the "controller" index,
  against ``list()`` + a filter on the controller uid (what the incident's controllers did);
  by_index also of a random owner per call, as controllers ask (cold memory: the same
  owner again and again stays in the CPU caches).
* **index churn cost per update**: batches of 50 deletions, then 50 re-additions, of
  random pods: every one changes both default indexes (CPU time, best of ``--repeat``).
* **full iteration**: ``list()`` (a copy) and ``async for ... in iter_chunks()``.
* **memory** (tracemalloc) of the store's own structures after loading every pod with one
  Replace (the pods themselves are counted apart), the extra memory an old snapshot retains
  after 1000 later single-update publishes, the GC-tracked objects the store adds, and
  the time of a full ``gc.collect()`` with the store loaded (best of 3; the same with
  nothing loaded is ``full_gc_ms_baseline``), and again after ``gc.freeze()``.

The locked store (the harness's lock-based baseline, ``aioinformer._harness.locked_store``)
is measured with the same indexes, batches and code paths (reads inside
``async with reader.read()``); there are no readers here, so it shows the uncontended cost.

    python bench/store_bench.py --json bench/results/store.json
    python bench/store_bench.py --sizes 10000 --updates 5000      # quick

The snapshot store against a plain dict store without a lock (the costs for which upstream
kept client-go's locked store) is bench/store_vs_dict.py's, with this module's stores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson

from aioinformer._cache.deltas import ChangeType, Delta, ObjectDelta, Replace
from aioinformer._cache.snapshot_store import Snapshot, snapshot_store
from aioinformer._core.objects import KubeObject, decode_object, drop_managed_fields
from aioinformer._harness.locked_store import locked_store
from aioinformer._harness.workload import realistic_pod

PER_OWNER = 1000
StoreKind = Literal["snapshot", "locked", "dict", "threaded"]
"""The library's snapshot store, or the harness's lock-based baseline; for
bench/store_vs_dict.py also ``dict``, the baseline's dicts written without its lock (a plain
dict and dict-of-sets indexes: client-go's threadSafeMap), and ``threaded``, the snapshot
store as the informer's pipeline thread writes it (``snapshot_store(threaded=True)``)."""
KINDS: tuple[StoreKind, ...] = ("snapshot", "locked")


class Store:
    """A store's reader/writer pair, batches applied as the informer applies them (the
    baseline's under its write lock, as LockedInformer does). ``hold``: after each batch a
    reader takes the new snapshot and keeps it until the next batch is applied, so that
    every batch finds its snapshot held (the snapshot store then copies what it changes)."""

    def __init__(self, kind: StoreKind, *, hold: bool = False) -> None:
        self.kind = kind
        self.hold = hold
        self.held: Any = None
        self.reader: Any
        self.writer: Any
        if kind in ("snapshot", "threaded"):
            self.reader, self.writer = snapshot_store(threaded=kind == "threaded")
        else:
            self.reader, self.writer = locked_store()

    async def apply(self, batch: list[Delta]) -> None:
        if self.kind == "locked":
            async with self.writer.writing():
                self.writer.apply(batch)
        else:
            self.writer.apply(batch)
        if self.hold:
            self.held = self.reader.snapshot()

    def snapshot(self) -> Snapshot:
        snap: Snapshot = self.reader.snapshot()
        return snap

    def read(self) -> Any:
        """``async with store.read() as view``: the baseline's read lock, or a snapshot."""
        if self.kind == "locked":
            return self.reader.read()
        return contextlib.nullcontext(self.reader.snapshot())


def build_pods(n: int, per_owner: int = PER_OWNER) -> list[KubeObject]:
    pods = []
    for i in range(n):
        owner, ordinal = divmod(i, per_owner)
        doc = realistic_pod(
            f"ns-{owner % 20}", f"sts-{owner}", ordinal, node=f"node-{i % 50}", phase="Running"
        )
        doc["metadata"].update(
            resourceVersion=str(i + 1), uid=f"pod-uid-{i}", creationTimestamp="2026-01-01T00:00:00Z"
        )
        pods.append(drop_managed_fields(decode_object(orjson.dumps(doc))))
    return pods


def cpu() -> float:
    return time.process_time()


async def best(repeat: int, fn: Callable[[], Awaitable[float]]) -> float:
    return min([await fn() for _ in range(repeat)])


async def load(kind: StoreKind, pods: list[KubeObject], *, hold: bool = False) -> Store:
    store = Store(kind, hold=hold)
    await store.apply([Replace(pods, max(p.rv for p in pods), time.monotonic())])
    return store


_RV = iter(range(10**9, 10**12))  # resourceVersions of the updates, increasing


async def publish_pass(
    store: Store, pods: list[KubeObject], updates: int, batch: int, rng: random.Random
) -> float:
    """Microseconds of CPU per update over one pass of ``updates`` status-like updates
    (new resourceVersion, same index values) to random pods of ``pods``."""
    replace = msgspec.structs.replace
    deltas = [
        ObjectDelta(ChangeType.UPDATED, replace(rng.choice(pods), rv=next(_RV)), 0.0)
        for _ in range(updates)
    ]
    batches = [deltas[i : i + batch] for i in range(0, len(deltas), batch)]
    t0 = cpu()
    for b in batches:
        await store.apply(b)
    return (cpu() - t0) / len(deltas) * 1e6


async def publish_cost(
    store: Store, pods: list[KubeObject], updates: int, batch: int, repeat: int
) -> float:
    """Microseconds of CPU per update, best of ``repeat`` passes."""
    rng = random.Random(42)
    return await best(repeat, lambda: publish_pass(store, pods, updates, batch, rng))


async def paired_publish_ratios(
    kind: StoreKind, sizes: tuple[int, int], per_owner: int, updates: int, pairs: int
) -> dict[str, list[float]]:
    """Publish cost per update at the larger size over that at the smaller one: the
    quartiles of ``pairs`` ratios, each of two passes run back to back (alternating which
    goes first), so that a slow phase of the machine hits both sides of a ratio alike."""
    loaded = []
    for size in sizes:
        pods = build_pods(size, per_owner)
        loaded.append((await load(kind, pods), pods))
    rng = random.Random(7)
    out: dict[str, list[float]] = {}
    for batch in (1, 100):
        ratios = []
        for n in range(pairs):
            costs = {}
            for i in (0, 1) if n % 2 else (1, 0):
                store, pods = loaded[i]
                costs[i] = await publish_pass(store, pods, updates, batch, rng)
            ratios.append(costs[1] / costs[0])
        q = statistics.quantiles(ratios, n=4)
        out[f"batch{batch}"] = [round(q[0], 3), round(statistics.median(ratios), 3), round(q[2], 3)]
    return out


async def churn_cost(store: Store, pods: list[KubeObject], updates: int, repeat: int) -> float:
    """Microseconds of CPU per index-changing update: pods deleted then added back, 50 per
    batch (the store ends as it started), best of ``repeat`` passes."""
    rng = random.Random(43)

    async def one_pass() -> float:
        batches = []
        for _ in range(max(1, updates // 100)):
            chosen = rng.sample(pods, 50)
            batches.append([ObjectDelta(ChangeType.DELETED, p, 0.0) for p in chosen])
            batches.append([ObjectDelta(ChangeType.ADDED, p, 0.0) for p in chosen])
        t0 = cpu()
        for b in batches:
            await store.apply(b)
        return (cpu() - t0) / (50 * len(batches)) * 1e6

    return await best(repeat, one_pass)


def full_gc_ms() -> float:
    """A full ``gc.collect()``, in milliseconds, best of 3."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - t0) * 1e3)
    return min(times)


async def read_costs(store: Store, repeat: int) -> dict[str, float]:
    """Milliseconds (CPU) per call: by_index of one owner, list+filter, list, iter_chunks."""
    target = store.snapshot().list()[0] if store.kind == "snapshot" else None
    async with store.read() as view:
        any_pod = view.get(view.keys()[0]) if target is None else target
    assert any_pod is not None and any_pod.controller_ref is not None
    uid = any_pod.controller_ref.uid

    async def timed(body: Callable[[Any], Awaitable[int]], calls: int) -> float:
        async def one_pass() -> float:
            t0 = cpu()
            for _ in range(calls):
                async with store.read() as view:
                    n = await body(view)
            assert n > 0
            return (cpu() - t0) / calls * 1e3

        return await best(repeat, one_pass)

    async def by_index(view: Any) -> int:
        return len(view.by_index("controller", uid))

    async with store.read() as view:
        uids = view.index_values("controller")
    rng = random.Random(3)

    async def by_index_random(view: Any) -> int:  # a different owner each call: cold memory
        return len(view.by_index("controller", rng.choice(uids)))

    async def scan(view: Any) -> int:
        return len([p for p in view.list() if (r := p.controller_ref) is not None and r.uid == uid])

    async def list_all(view: Any) -> int:
        return len(view.list())

    async def iterate(view: Any) -> int:
        n = 0
        async for _ in view.iter_chunks():
            n += 1
        return n

    return {
        "by_index_owner_ms": await timed(by_index, 200),
        "by_index_random_owner_ms": await timed(by_index_random, 200),
        "scan_owner_ms": await timed(scan, 3),
        "list_ms": await timed(list_all, 3),
        "iter_chunks_ms": await timed(iterate, 3),
    }


async def memory(kind: StoreKind, pods: list[KubeObject]) -> dict[str, float]:
    gc.collect()
    tracked0 = len(gc.get_objects())
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    store = await load(kind, pods)
    gc.collect()
    structures = tracemalloc.get_traced_memory()[0] - base
    tracked = len(gc.get_objects()) - tracked0
    out = {
        "store_bytes": structures,
        "store_bytes_per_object": structures / len(pods),
        "gc_tracked_objects": tracked,
        "full_gc_ms": full_gc_ms(),
    }
    gc.freeze()  # what a long-running process can do once its caches are synced
    out["full_gc_ms_after_freeze"] = full_gc_ms()
    gc.unfreeze()
    if store.kind == "snapshot":
        rng = random.Random(7)
        replace = msgspec.structs.replace
        updates = [replace(rng.choice(pods), rv=10**9 + i) for i in range(1000)]
        old = store.snapshot()
        before = tracemalloc.get_traced_memory()[0]
        for u in updates:
            await store.apply([ObjectDelta(ChangeType.UPDATED, u, 0.0)])
        gc.collect()
        with_old = tracemalloc.get_traced_memory()[0] - before
        del old
        gc.collect()
        without_old = tracemalloc.get_traced_memory()[0] - before
        out["old_snapshot_retained_bytes_after_1000_updates"] = with_old - without_old
    tracemalloc.stop()
    del store
    return out


def object_bytes(n: int) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    pods = build_pods(n)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del pods
    return used / n


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "updates": args.updates,
        "per_owner": args.per_owner,
        "repeat": args.repeat,
        "pod_bytes": object_bytes(2000),
        "full_gc_ms_baseline": full_gc_ms(),
        "sizes": {},
    }
    for size in args.sizes:
        t0 = time.perf_counter()
        pods = build_pods(size, args.per_owner)
        print(f"built {size} pods in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        per_size: dict[str, Any] = {}
        for kind in KINDS:
            t0 = cpu()
            store = await load(kind, pods)
            row: dict[str, Any] = {"load_s": cpu() - t0}
            for batch in (1, 100):
                row[f"publish_us_per_update_batch{batch}"] = await publish_cost(
                    store, pods, args.updates, batch, args.repeat
                )
            row["churn_us_per_update"] = await churn_cost(store, pods, args.updates, args.repeat)
            row.update(await read_costs(store, args.repeat))
            del store
            gc.collect()
            row.update(await memory(kind, pods))
            per_size[kind] = row
            print(f"{size:>7} {kind:<13} {json.dumps(_rounded(row))}", file=sys.stderr)
        results["sizes"][str(size)] = per_size
        del pods
        gc.collect()
    sizes = [str(s) for s in args.sizes]
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        results["ratio_large_vs_small"] = {
            kind: {
                f"batch{b}": results["sizes"][large][kind][f"publish_us_per_update_batch{b}"]
                / results["sizes"][small][kind][f"publish_us_per_update_batch{b}"]
                for b in (1, 100)
            }
            for kind in KINDS
        }
        # the target's figure: the two sizes loaded together, their passes interleaved
        results["paired_ratio_large_vs_small"] = {
            kind: await paired_publish_ratios(
                kind, (args.sizes[0], args.sizes[-1]), args.per_owner, args.updates, args.pairs
            )
            for kind in KINDS
        }
    return results


def _rounded(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, 4 if value < 1 else 1)
    return value


def report(results: dict[str, Any]) -> None:
    print(f"pod object: {results['pod_bytes']:.0f} B (managedFields dropped)")
    print(f"full gc.collect() with no store loaded: {results['full_gc_ms_baseline']:.0f} ms")
    print(
        f"{'size':>7} {'store':<13} {'pub/upd b1':>11} {'pub/upd b100':>13} {'by_index':>9} {'random':>9} {'scan':>9} {'list':>8} {'iter':>8} {'struct B/obj':>12} {'gc objs':>8}"
    )
    for size, kinds in results["sizes"].items():
        for kind, r in kinds.items():
            print(
                f"{size:>7} {kind:<13} {r['publish_us_per_update_batch1']:>9.2f}us {r['publish_us_per_update_batch100']:>11.2f}us "
                f"{r['by_index_owner_ms']:>7.3f}ms {r['by_index_random_owner_ms']:>7.3f}ms {r['scan_owner_ms']:>7.1f}ms {r['list_ms']:>6.1f}ms {r['iter_chunks_ms']:>6.1f}ms "
                f"{r['store_bytes_per_object']:>12.1f} {r['gc_tracked_objects']:>8}"
            )
            print(
                f"{'':>21} index churn {r['churn_us_per_update']:.2f} us/update; "
                f"full gc.collect() {r['full_gc_ms']:.0f} ms with the store loaded, "
                f"{r['full_gc_ms_after_freeze']:.0f} ms after gc.freeze()"
            )
            if "old_snapshot_retained_bytes_after_1000_updates" in r:
                print(
                    f"{'':>21} an old snapshot retains {r['old_snapshot_retained_bytes_after_1000_updates'] / 1024:.0f} KiB after 1000 later publishes"
                )
    for kind, ratio in results.get("ratio_large_vs_small", {}).items():
        print(
            f"{kind}: publish cost per update, largest/smallest size: batch1 {ratio['batch1']:.2f}x, batch100 {ratio['batch100']:.2f}x"
        )
    for kind, paired in results.get("paired_ratio_large_vs_small", {}).items():
        b1, b100 = paired["batch1"], paired["batch100"]
        print(
            f"{kind}: the same, interleaved passes (median, quartiles): "
            f"batch1 {b1[1]:.2f}x ({b1[0]:.2f}-{b1[2]:.2f}), batch100 {b100[1]:.2f}x ({b100[0]:.2f}-{b100[2]:.2f})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 200_000])
    parser.add_argument("--updates", type=int, default=20_000, help="updates per publish-cost pass")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--pairs", type=int, default=9, help="interleaved pass pairs for the paired size ratio"
    )
    parser.add_argument("--per-owner", type=int, default=PER_OWNER, help="pods per StatefulSet")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    res = asyncio.run(main(args))
    report(res)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=2) + "\n")
