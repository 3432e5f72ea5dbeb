"""The snapshot store against a plain dict store holding the same pods: the costs for which
upstream turned persistent stores down.

    python bench/store_vs_dict.py --pods 200000 --json bench/results/store_vs_dict.json

kubernetes#130767 (informer read-lock contention) asked whether client-go's store should
become persistent so that readers take no lock; its proof of concept (kubernetes#133241)
measured persistent maps against the threadSafeMap and found writes 2x-14x slower, 6x-100x
the memory and 1x-4x the allocations, reads comparable, and kept the lock (see
:data:`UPSTREAM`). This script measures the same trade on this library's store, the same
updates applied to each of four shapes of store holding the same ``--pods`` realistic pods
(managedFields dropped, 1000 per StatefulSet, the default indexes):

* ``dict``: a plain dict and dict-of-sets indexes (client-go's threadSafeMap shape: the
  harness's lock-based baseline written without its lock, so with the same batch code);
* ``snapshot``: the snapshot store, no reader holding a snapshot (each batch goes in
  place where nothing shares what it changes);
* ``snapshot_threaded``: the snapshot store as the informer's pipeline thread writes it
  (``threaded=True``: never the current snapshot in place; the one before it, once no one
  holds it);
* ``snapshot_held``: the snapshot store with a reader taking every snapshot published and
  holding it until the next batch: every batch copies the paths it changes (the persistent
  map's full cost: each write a new version, as a persistent map without in-place writes
  always pays).

Figures per shape (one process; the shapes loaded together, their passes interleaved, so
that a slow phase of this shared machine hits them alike):

* **ns per write**: status-like updates (new resourceVersion, same index values) to random
  pods, in batches of 1 (a publish per write) and of 100 (a publish per batch, as the
  informer's writer under load), CPU time, the best of ``--repeat`` interleaved passes;
* **bytes allocated per write**: batches of 1, the traced memory's peak during the write
  above what was traced before it (tracemalloc; the mean over ``--alloc-writes`` writes):
  close to Go's B/op (the bytes one operation allocates) where a write frees little of
  what it allocates before it ends, less where it does;
* **bytes per object**: the store's own structures (the pods counted apart), traced from
  an empty store through one Replace of every pod (``bytes_per_object_loaded``) and
  ``--settle`` single-update writes more (``bytes_per_object``: the steady state, with
  the threaded store's second map and a held snapshot's copies);
* **reads**, a reader taking its view each time (a snapshot; the dict store's live view,
  without the lock a reader of it would take): ``get`` of a random key, ``by_index`` of a
  random owner's 1000 pods, ``list`` of every pod;
* **a retained read view after K writes**: what a reader holding the view it took K
  single-update writes ago keeps alive that the store no longer does (the old snapshot's
  unshared paths), for K = ``--retain``; the dict store's reader has no view that outlives
  a write but a copy: a shallow copy of its objects dict, and of the dict with its indexes
  (the copy's bytes and milliseconds), against a snapshot taken in O(1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shlex
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from aioinformer._cache.deltas import ChangeType, ObjectDelta
from aioinformer._core.objects import KubeObject
from aioinformer._harness.procstats import machine_info

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
import store_bench
from store_bench import Store, StoreKind, build_pods, load, publish_pass

#: Each shape: the store's kind, and whether a reader holds every snapshot published.
SHAPES: dict[str, tuple[StoreKind, bool]] = {
    "dict": ("dict", False),
    "snapshot": ("snapshot", False),
    "snapshot_threaded": ("threaded", False),
    "snapshot_held": ("snapshot", True),
}

#: What upstream measured (kubernetes#130767, a comment of 2025-08-01 on the benchmarks of
#: the proof of concept kubernetes#133241: Go maps behind client-go's store against
#: persistent maps: an immutable radix tree, google/btree's Clone, benbjohnson/immutable's
#: HAMT).
UPSTREAM = {
    "source": "kubernetes/kubernetes#130767 (a comment of 2025-08-01 on the benchmarks of "
    "its proof of concept, kubernetes/kubernetes#133241)",
    "write_latency": "2x-14x",
    "memory": "6x-100x",
    "allocations": "1x-4x",
    "reads": "about the same",
}


def updates(pods: list[KubeObject], n: int, rng: random.Random) -> list[ObjectDelta]:
    """``n`` status-like updates (a new resourceVersion, the same index values) of random
    pods of ``pods``."""
    replace = msgspec.structs.replace
    return [
        ObjectDelta(ChangeType.UPDATED, replace(rng.choice(pods), rv=next(store_bench._RV)), 0.0)
        for _ in range(n)
    ]


async def write_costs(
    stores: dict[str, Store], pods: list[KubeObject], n: int, repeat: int
) -> dict[str, dict[str, float]]:
    """ns of CPU per write of each shape, batches of 1 and of 100: the best of ``repeat``
    passes of ``n`` updates, the shapes' passes interleaved."""
    rng = random.Random(42)
    out: dict[str, dict[str, float]] = {name: {} for name in stores}
    for batch in (1, 100):
        best: dict[str, float] = {}
        for r in range(repeat):
            order = list(stores) if r % 2 == 0 else list(reversed(stores))
            for name in order:
                us = await publish_pass(stores[name], pods, n, batch, rng)
                best[name] = min(best.get(name, us), us)
        for name, us in best.items():
            out[name][f"ns_per_write_batch{batch}"] = round(us * 1000, 1)
    return out


def read_costs(stores: dict[str, Store], repeat: int) -> dict[str, dict[str, float]]:
    """Each shape's reads, a reader taking its view each time (a snapshot; the dict store's
    live view, no lock): ``get`` of a random key (ns), ``by_index`` of a random owner's pods
    (us), ``list`` of every object (ms); CPU time, the best of ``repeat`` interleaved
    passes."""
    any_store = next(iter(stores.values()))
    keys = any_store.reader.snapshot().keys()
    owners = any_store.reader.snapshot().index_values("controller")
    rng = random.Random(11)
    some_keys = [rng.choice(keys) for _ in range(20_000)]
    some_owners = [rng.choice(owners) for _ in range(500)]

    def gets(store: Store) -> float:
        take = store.reader.snapshot
        t0 = store_bench.cpu()
        for key in some_keys:
            take().get(key)
        return (store_bench.cpu() - t0) / len(some_keys) * 1e9

    def by_index(store: Store) -> float:
        take = store.reader.snapshot
        t0 = store_bench.cpu()
        for owner in some_owners:
            take().by_index("controller", owner)
        return (store_bench.cpu() - t0) / len(some_owners) * 1e6

    def lists(store: Store) -> float:
        t0 = store_bench.cpu()
        for _ in range(3):
            store.reader.snapshot().list()
        return (store_bench.cpu() - t0) / 3 * 1e3

    out: dict[str, dict[str, float]] = {name: {} for name in stores}
    for key, fn in (("get_ns", gets), ("by_index_us", by_index), ("list_ms", lists)):
        for r in range(repeat):
            for name in list(stores) if r % 2 == 0 else list(reversed(stores)):
                value = fn(stores[name])
                out[name][key] = round(min(out[name].get(key, value), value), 3)
    return out


async def allocated_per_write(store: Store, pods: list[KubeObject], n: int) -> float:
    """Mean bytes the traced memory peaks at during one single-update write, above what was
    traced before it, over ``n`` writes."""
    deltas = updates(pods, n, random.Random(5))
    gc.collect()
    tracemalloc.start()
    total = 0
    for d in deltas:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        await store.apply([d])
        total += tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return total / n


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def memory(
    kind: StoreKind, hold: bool, pods: list[KubeObject], settle: int, retain: list[int]
) -> dict[str, Any]:
    """The store's structures per object, right after the Replace of every pod and after
    ``settle`` single-update writes more (the threaded store's second map, a held
    snapshot's copies), and what a reader's view taken K writes ago retains (a snapshot;
    for the dict store, copies), traced from an empty store on."""
    settling = updates(pods, settle, random.Random(8))  # (made untraced: pods, not structures)
    tracemalloc.start()
    base = traced()
    store = await load(kind, pods, hold=hold)
    out: dict[str, Any] = {"bytes_per_object_loaded": round((traced() - base) / len(pods), 1)}
    for d in settling:
        await store.apply([d])
    out["bytes_per_object"] = round((traced() - base) / len(pods), 1)
    if kind == "dict":
        for name, copy in dict_copies(store).items():
            before = traced()
            view = copy()
            out[f"{name}_bytes"] = traced() - before
            del view
    elif kind == "snapshot" and not hold:  # (the threaded store keeps the last one anyway)
        rng = random.Random(9)
        retained = {}
        for k in retain:
            deltas = updates(pods, k, rng)
            old = store.snapshot()
            for d in deltas:
                await store.apply([d])
            with_old = traced()
            del old
            retained[str(k)] = with_old - traced()
            del deltas
        out["retained_bytes_after_k_writes"] = retained
    tracemalloc.stop()
    # the times without tracemalloc, which slows every allocation
    if kind == "dict":
        for name, copy in dict_copies(store).items():
            t0 = time.perf_counter()
            view = copy()
            out[f"{name}_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
            del view
    elif not hold:
        t0 = time.perf_counter()
        for _ in range(10_000):
            store.snapshot()
        out["snapshot_take_ns"] = round((time.perf_counter() - t0) / 10_000 * 1e9, 1)
    return out


def dict_copies(store: Store) -> dict[str, Callable[[], object]]:
    """How a reader of the dict store keeps a view across writes: a shallow copy of its
    objects dict (``objects_copy``), or of the dict with its indexes (``full_copy``)."""
    objects = store.writer._objects
    indexes = store.writer._indexes

    def full() -> object:
        copied = {name: {v: set(keys) for v, keys in idx.items()} for name, idx in indexes.items()}
        return dict(objects), copied

    return {"objects_copy": lambda: dict(objects), "full_copy": full}


def ratios(shapes: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each snapshot shape's figures over the dict store's."""
    base = shapes["dict"]
    out: dict[str, dict[str, float | None]] = {}
    for name, row in shapes.items():
        if name == "dict":
            continue
        out[name] = {
            key: (round(row[key] / base[key], 2) if base[key] else None)
            for key in (
                "ns_per_write_batch1",
                "ns_per_write_batch100",
                "allocated_bytes_per_write",
                "bytes_per_object",
                "get_ns",
                "by_index_us",
                "list_ms",
            )
        }
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    pods = build_pods(args.pods, args.per_owner)
    print(f"built {args.pods} pods in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    load_1m = os.getloadavg()[0]
    stores = {name: await load(kind, pods, hold=hold) for name, (kind, hold) in SHAPES.items()}
    shapes = await write_costs(stores, pods, args.updates, args.repeat)
    for name, reads in read_costs(stores, args.repeat).items():
        shapes[name].update(reads)
    for name, store in stores.items():
        shapes[name]["allocated_bytes_per_write"] = round(
            await allocated_per_write(store, pods, args.alloc_writes), 1
        )
        print(f"{name}: {shapes[name]}", file=sys.stderr)
    del stores, store
    gc.collect()
    for name, (kind, hold) in SHAPES.items():
        shapes[name].update(await memory(kind, hold, pods, args.settle, args.retain))
        gc.collect()
    return {
        "command": "python bench/store_vs_dict.py " + shlex.join(args.argv),
        "machine": machine_info(),
        "load_1m": round(load_1m, 2),
        "load_1m_end": round(os.getloadavg()[0], 2),
        "pods": args.pods,
        "per_owner": args.per_owner,
        "updates": args.updates,
        "repeat": args.repeat,
        "alloc_writes": args.alloc_writes,
        "settle": args.settle,
        "pod_bytes": round(store_bench.object_bytes(min(2000, args.pods))),
        "upstream": UPSTREAM,
        "shapes": shapes,
        "ratios": ratios(shapes),
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", type=int, default=200_000)
    p.add_argument("--per-owner", type=int, default=store_bench.PER_OWNER)
    p.add_argument("--updates", type=int, default=20_000, help="updates per write-cost pass")
    p.add_argument("--repeat", type=int, default=5, help="interleaved passes per shape")
    p.add_argument(
        "--alloc-writes", type=int, default=2000, help="writes traced for the bytes per write"
    )
    p.add_argument(
        "--settle",
        type=int,
        default=50_000,
        help="single-update writes after the load before the bytes per object are taken",
    )
    p.add_argument(
        "--retain",
        default="1,100,1000,10000,100000",
        help="comma-separated K: what a view taken K writes ago retains",
    )
    p.add_argument("--json", type=Path, help="write the results here")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    args.argv = list(argv)
    args.retain = [int(k) for k in args.retain.split(",") if k.strip()]
    result = asyncio.run(main_async(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
