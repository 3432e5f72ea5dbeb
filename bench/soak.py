"""Soak: an informer with handlers at a steady event rate for a long time; is its RSS flat?

KubeSim runs in a child process (its memory is apart from the informer's) holding
``--pods`` production-size pods and writing at ``--rate`` events per second: mostly
annotation updates round-robin over the pods, plus a delete and a re-create every
``--churn-every`` writes (so keys come and go); every ``--drop-every`` seconds all watches
are dropped (resumed from the last RV), and every ``--relist-every`` seconds, half a period
later, the apiserver "restarts" (watches dropped, history expired: every informer relists
its whole cache). The default warm-up (10 minutes) spans two relists: a relist allocates
the whole list at once, and the allocator keeps that high-water mark. The parent runs an InformerFactory with a pods
informer, an exact handler, a coalescing handler and a metadata-only informer, and samples
its own RSS (``/proc/self/statm``) every ``--sample`` seconds.

Reported: RSS at the end of the warm-up (``--warmup`` seconds; the caches are full and the
allocator has reached its working set) and at the end, the growth between them in percent
(flat = under a few percent), the min/max after warm-up, events applied and handled, and
the child's RSS.

    python bench/soak.py --minutes 30 --json bench/results/soak.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from aioinformer import InformerFactory, KubeObject

CHILD = r"""
import asyncio, json, sys, time
from aioinformer.testing import KubeSim
from aioinformer._harness.workload import realistic_pod

async def main(pods, rate, churn_every, drop_every, relist_every):
    async with KubeSim(history_size=max(10_000, rate * 30), nodes=0) as sim:
        namespaces = [f"soak-{i}" for i in range(10)]
        for ns in namespaces:
            sim.create("namespaces", {"metadata": {"name": ns}})
        def body(i):
            return realistic_pod(namespaces[i % 10], "sts", i, node=f"node-{i % 50}", phase="Running")
        for i in range(pods):
            sim.create("pods", body(i), keep_status=True)
        print(json.dumps({"url": sim.url, "token": sim.token}), flush=True)
        loop = asyncio.get_running_loop()
        tick, n, start = 0.1, 0, loop.time()
        last_drop, last_relist = start, start - relist_every / 2 if relist_every else start
        while True:
            now = loop.time()
            due = int((now - start) * rate)
            while n < due:
                i = n % pods
                ns, name = namespaces[i % 10], f"sts-{i}"
                if churn_every and n % churn_every == churn_every - 1:
                    sim.delete("pods", name, ns, gracePeriodSeconds=0)
                    sim.create("pods", body(i), keep_status=True)
                else:
                    sim.patch("pods", name, {"metadata": {"annotations": {"soak/tick": str(n)}}}, ns)
                n += 1
            if drop_every and now - last_drop >= drop_every:
                sim.drop_watches()  # resumed from the last RV: no relist
                last_drop = now
            if relist_every and now - last_relist >= relist_every:
                sim.restart()  # drop + expire: every informer relists
                print(json.dumps({"relist_at": round(now - start, 1)}), flush=True)
                last_relist = now
            await asyncio.sleep(tick)

asyncio.run(main(*map(int, sys.argv[1:6])))
"""


def rss(pid: int | str = "self") -> int:
    """Resident set size of a process, in bytes."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    from kubernetes_asyncio import client

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(args.pods),
        str(args.rate),
        str(args.churn_every),
        str(args.drop_every),
        str(args.relist_every),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(await proc.stdout.readline())
        cfg = client.Configuration()
        cfg.host = info["url"]
        cfg.api_key = {"BearerToken": info["token"]}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        async with client.ApiClient(configuration=cfg) as api:
            async with InformerFactory(api) as factory:
                return await measure(args, factory, proc)
    finally:
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()


async def measure(
    args: argparse.Namespace, factory: InformerFactory, proc: asyncio.subprocess.Process
) -> dict[str, Any]:
    child = proc.pid
    pods = factory.informer("v1", "pods")
    meta = factory.informer("v1", "pods", metadata_only=True)
    seen: dict[str, int] = {}

    def remember(obj: KubeObject) -> None:
        seen[obj.key] = obj.rv

    async def forget(obj: KubeObject) -> None:
        seen.pop(obj.key, None)

    exact = pods.add_handler(remember, lambda _old, new: remember(new), forget, name="exact")
    merged = pods.add_handler(remember, lambda _o, n: None, None, coalesce=True, name="merged")
    await factory.wait_for_sync(timeout=300)
    await exact.wait_for_sync(timeout=300)
    loop = asyncio.get_running_loop()
    start = loop.time()
    relists_at: list[float] = []

    async def note_relists() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            if b"relist_at" in line:
                relists_at.append(round(loop.time() - start, 1))

    reader = asyncio.create_task(note_relists())
    samples: list[tuple[float, int, int]] = []  # (seconds since start, parent RSS, child RSS)
    while (elapsed := loop.time() - start) < args.minutes * 60:
        if proc.returncode is not None:
            raise RuntimeError(f"the KubeSim child exited with {proc.returncode}")
        samples.append((round(elapsed, 1), rss(), rss(child)))
        await asyncio.sleep(args.sample)
    samples.append((round(loop.time() - start, 1), rss(), rss(child)))
    reader.cancel()
    after = [s for s in samples if s[0] >= args.warmup] or samples[-1:]
    base, end = after[0][1], after[-1][1]
    stats = pods.statistics()
    return {
        "minutes": args.minutes,
        "rate_events_per_second": args.rate,
        "pods": args.pods,
        "warmup_seconds": args.warmup,
        "rss_after_warmup_bytes": base,
        "rss_end_bytes": end,
        "rss_growth_percent": round(100 * (end - base) / base, 2),
        "rss_min_after_warmup_bytes": min(s[1] for s in after),
        "rss_max_after_warmup_bytes": max(s[1] for s in after),
        "sim_rss_end_bytes": samples[-1][2],
        "objects": stats.objects,
        "events_applied": stats.applied_total,
        "events_per_second_measured": round(stats.applied_total / (loop.time() - start), 1),
        "watch_restarts": stats.watch_restarts,
        "relists": stats.relists,
        "relists_forced_at_seconds": relists_at,
        "metadata_objects": meta.statistics().objects,
        "handled_exact": exact.handled_total,
        "handled_coalescing": merged.handled_total,
        "handler_peak_depth": {"exact": exact.peak_depth, "coalescing": merged.peak_depth},
        "samples": samples,
        "python": sys.version.split()[0],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=30.0, help="length of the soak")
    p.add_argument("--rate", type=int, default=200, help="events per second the sim writes")
    p.add_argument("--pods", type=int, default=5000, help="pods the sim holds")
    p.add_argument("--churn-every", type=int, default=50, help="delete+create every N writes")
    p.add_argument("--drop-every", type=int, default=300, help="drop all watches every N s")
    p.add_argument(
        "--relist-every", type=int, default=300, help="apiserver restart (relist) every N s"
    )
    p.add_argument("--warmup", type=float, default=600.0, help="seconds before the baseline")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between RSS samples")
    p.add_argument("--json", metavar="PATH", help="write the figures here as JSON")
    args = p.parse_args()
    args.warmup = min(args.warmup, args.minutes * 60 / 2)
    result = asyncio.run(soak(args))
    summary = {k: v for k, v in result.items() if k != "samples"}
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
