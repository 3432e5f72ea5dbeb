"""Memory per cached pod, plain, compact and projected, from one run; and what a projection
costs per object.

    python bench/projection_memory.py --pods 50000 --json bench/results/projection_memory.json

KubeSim runs in its own process with ``--pods`` StatefulSet-shaped pods (1000 per owner,
bound to nodes, Running: bench's ``realistic_pod``, about 3 KB of body each). For each mode
a fresh informer process syncs one pods informer over HTTP and reports its RSS after the
sync (after a gc and the heap trimmed) minus before it, and ``InformerStatistics``'
``cached_bytes`` and ``plain_bytes`` (see aioinformer/_cache/footprint.py), each per pod.
Modes: ``as sent`` (no transform), ``plain`` (managedFields dropped, the usual setting),
``compact`` (managedFields dropped, compact mode), ``projected`` (``project(--paths)``),
``projected+compact`` and ``projected+labels`` (``project(--paths, labels=--labels)``: only
the labels named kept).

The cost: ``decode_event`` per watch event line, then ``drop_managed_fields`` and the
projection per decoded object, in this process, the best of 5 passes over 20,000 pods.

Where a projected pod's bytes go (``breakdown``): ``--pods`` pods projected and stored in
this process, each part's bytes per pod (:func:`object_bytes`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from aioinformer._cache.deltas import Replace
from aioinformer._cache.pmap import FrozenMap
from aioinformer._cache.snapshot_store import snapshot_store
from aioinformer._core.objects import KubeObject, decode_event, decode_list, drop_managed_fields
from aioinformer._core.projection import project
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, asker, spawn_python
from aioinformer._harness.workload import realistic_pod
from bench._projectionchild import TOKEN_ENV

HERE = Path(__file__).resolve().parent
MODES: dict[str, dict[str, Any]] = {
    "as sent": {"compact": False, "project": False, "drop_managed_fields": False},
    "plain": {"compact": False, "project": False, "drop_managed_fields": True},
    "compact": {"compact": True, "project": False, "drop_managed_fields": True},
    "projected": {"compact": False, "project": True, "drop_managed_fields": False},
    "projected+compact": {"compact": True, "project": True, "drop_managed_fields": False},
    "projected+labels": {
        "compact": False,
        "project": True,
        "drop_managed_fields": False,
        "labels": True,
    },
}


def _python_path() -> str:
    """The child's PYTHONPATH: this checkout (and its kubesim) first, then the caller's."""
    root = str(HERE.parent)
    parts = (root, os.path.join(root, "kubesim", "src"), os.environ.get("PYTHONPATH"))
    return os.pathsep.join(p for p in parts if p)


async def run_mode(
    sim: SimProcess, mode: str, paths: list[str], labels: list[str]
) -> dict[str, Any]:
    cfg = dict(MODES[mode])
    cfg["project"] = paths if cfg["project"] else None
    cfg["labels"] = labels if cfg.get("labels") else None
    child = await spawn_python(
        "bench._projectionchild", env={TOKEN_ENV: sim.token, "PYTHONPATH": _python_path()}
    )
    ask = asker(child, mode)

    try:
        ready = (await ask({"url": sim.url, **cfg}))["ready"]
        load_1m = os.getloadavg()[0]
        synced = await ask({"op": "sync"})
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 60)
        except TimeoutError:
            child.kill()
            await child.wait()
    n = synced["objects"]
    return {
        "mode": mode,
        "objects": n,
        "rss_per_pod_bytes": round((synced["rss_bytes"] - ready["rss_bytes"]) / n),
        "cached_per_pod_bytes": round(synced["cached_bytes"] / n),
        "plain_per_pod_bytes": round(synced["plain_bytes"] / n),
        "sync_seconds": round(synced["synced"], 2),
        "load_1m": round(load_1m, 2),
    }


def transform_costs(paths: list[str], n: int = 20_000, passes: int = 5) -> dict[str, float]:
    """Microseconds per object: decoding its watch event, dropping managedFields, projecting."""
    lines = []
    for i in range(n):
        pod = realistic_pod("bench", "sts-0", i, node=f"node-{i % 100}", phase="Running")
        pod["metadata"]["resourceVersion"] = str(10 + i)
        lines.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
    objs = [decode_event(line)[1] for line in lines]
    keep = project(*paths)

    def best(fn: Any, items: list[Any]) -> float:
        times = []
        for _ in range(passes):
            t0 = time.perf_counter()
            for item in items:
                fn(item)
            times.append(time.perf_counter() - t0)
        return round(min(times) / len(items) * 1e6, 3)

    return {
        "decode_event_us": best(decode_event, lines),
        "drop_managed_fields_us": best(drop_managed_fields, objs),
        "project_us": best(keep, objs),
        "body_bytes": round(sum(len(o.body) for o in objs if o) / n),
    }


PARTS: dict[str, Callable[[KubeObject], tuple[object, ...]]] = {
    "KubeObject": lambda o: (o,),
    "ObjectMeta": lambda o: (o.metadata,),
    "name": lambda o: (o.metadata.name,),
    "uid": lambda o: (o.metadata.uid,),
    "resourceVersion (str)": lambda o: (o.metadata.resource_version,),
    "rv (int)": lambda o: (o.rv,),
    "key": lambda o: (o.key,),
    "labels (dict)": lambda o: (o.metadata.labels,),
    "labels (keys and values)": lambda o: (*o.metadata.labels, *o.metadata.labels.values()),
    "creationTimestamp": lambda o: (o.metadata.creation_timestamp,),
    "body": lambda o: (o.body,),
    "annotations, ownerReferences, namespace": lambda o: (
        o.metadata.annotations,
        *o.metadata.annotations,
        *o.metadata.annotations.values(),
        o.metadata.owner_references,
        *o.metadata.owner_references,
        o.metadata.namespace,
    ),
}
"""The parts of a projected pod, in the order they are counted (a part already counted
under an earlier one, as a label value equal to the name, is not counted again)."""


def _block(size: int) -> int:
    """The bytes pymalloc takes for ``size`` (16-byte blocks up to 512; above, malloc's)."""
    return -(-size // 16) * 16 if size <= 512 else size


def object_bytes(
    paths: list[str], n: int = 20_000, labels: list[str] | None = None
) -> dict[str, Any]:
    """Where the bytes of one cached projected pod go.

    ``n`` pods of ``realistic_pod``'s shape (a uid each, one creationTimestamp per 1000)
    in list pages of 500, projected and stored as an informer does. Each part's bytes per
    pod, every distinct object counted once: ``bytes``, what was asked of the allocator
    (``sys.getsizeof``), ``blocks``, that rounded up to pymalloc's 16-byte blocks (what it
    takes). The object map and the indexes: traced (tracemalloc) as they are built.
    ``labels``: the projection keeps only those labels.
    """
    keep = project(*paths, labels=True if labels is None else labels)
    objs: list[KubeObject] = []
    for start in range(0, n, 500):
        items = []
        for i in range(start, min(n, start + 500)):
            owner, ordinal = divmod(i, 1000)
            pod = realistic_pod(
                f"ns-{owner % 20}", f"sts-{owner}", ordinal, node=f"node-{i % 100}", phase="Running"
            )
            meta = pod["metadata"]
            meta["uid"] = str(uuid.UUID(int=i + 1))
            meta["resourceVersion"] = str(1_000_000 + i)
            meta["creationTimestamp"] = f"2026-12-02T10:{owner // 60 % 60:02}:{owner % 60:02}Z"
            items.append(pod)
        page = orjson.dumps({"apiVersion": "v1", "kind": "PodList", "items": items})
        objs.extend(keep(obj) for obj in decode_list(page)[0])
    seen: set[int] = set()
    rows = []
    for part, get in PARTS.items():
        size = blocks = 0
        for obj in objs:
            for one in get(obj):
                if one is not None and id(one) not in seen:
                    seen.add(id(one))
                    size += sys.getsizeof(one)
                    blocks += _block(sys.getsizeof(one))
        rows.append({"part": part, "bytes": round(size / n, 1), "blocks": round(blocks / n, 1)})
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    writer = FrozenMap[str, KubeObject]().mutate()
    for obj in objs:
        writer.set(obj.key, obj)
    objects = writer.finish()
    map_bytes = tracemalloc.get_traced_memory()[0] - before
    del objects, writer
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    _, store = snapshot_store()
    store.apply([Replace(objs, 1, 0.0)])
    gc.collect()
    store_bytes = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    rows.append({"part": "the object map (traced)", "bytes": round(map_bytes / n, 1)})
    rows.append(
        {
            "part": "the two default indexes (traced)",
            "bytes": round((store_bytes - map_bytes) / n, 1),
        }
    )
    return {"pods": n, "rows": rows}


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/projection_memory.py", description=__doc__)
    parser.add_argument("--pods", type=int, default=50_000, help="pods on the sim")
    parser.add_argument(
        "--paths",
        default="spec.nodeName,status.phase",
        help="the projection's paths, comma-separated",
    )
    parser.add_argument(
        "--labels",
        default="app",
        help="projected+labels: the labels kept, comma-separated",
    )
    parser.add_argument("--modes", default=",".join(MODES), help=f"from {', '.join(MODES)}")
    parser.add_argument("--note", default="", help="what this run repeats and why")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    paths = args.paths.split(",")
    labels = args.labels.split(",")
    owners = max(1, args.pods // 1000)
    rows = []
    async with SimProcess(history_size=args.pods + 1000) as sim:
        populated = await sim.populate(owners, args.pods // owners, nodes=100, bound=True)
        print(f"{populated['pods']:,} pods in {populated['seconds']:.0f} s", file=sys.stderr)
        for mode in args.modes.split(","):
            row = await run_mode(sim, mode, paths, labels)
            print(row, file=sys.stderr)
            rows.append(row)
    result = {
        "command": "python bench/projection_memory.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "note": args.note,
        "machine": machine_info(),
        "pods": populated["pods"],
        "paths": paths,
        "labels": labels,
        "rows": rows,
        "costs": transform_costs(paths),
        "breakdown": object_bytes(paths, args.pods),
        "breakdown_labels": object_bytes(paths, args.pods, labels),
    }
    text = orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n"
    sys.stdout.buffer.write(text)
    if args.json:
        write(Path(args.json), text)
    return 0


def write(path: Path, text: bytes) -> None:
    path.write_bytes(text)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
