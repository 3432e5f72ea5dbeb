"""The informer process of bench/staleness_bench.py: one pods informer, K readers, a log.

Run as ``python -m bench._stalechild`` with ``AIOINFORMER_STALE_TOKEN`` in the environment
(never on the command line) for KubeSim, or given a kubeconfig for a real server; it
ignores SIGINT (the benchmark's parent ends it on Ctrl-C). Protocol (stdin -> stdout, one
JSON object per line):

1. config ``{"url" | "kubeconfig", "namespace"?, "pipeline", "read", "readers", "uids",
   "compact", "cpu"?, "pipeline_priority"?}`` -> ``{"ready": {"rss_bytes", "cpus"}}``: pinned to ``cpu`` first
   (``os.sched_setaffinity``: the pipeline thread inherits it), imports done, client and
   informer built (pods of ``namespace``, or of every namespace), nothing listed.
2. ``{"op": "sync"}`` -> ``{"synced": seconds, "objects", "rss_bytes"}`` (after a gc).
3. ``{"op": "load", "seconds"}``: the readers run that long -> ``{"loaded": reads}``.
4. ``{"op": "wait_rv", "rv"}`` -> ``{"reached": bool}`` once the cache published ``rv``.
5. ``{"op": "result"}`` -> ``{"publishes": [[t, rv], ...], "receipts": [[rv, received,
   queued], ...], "socket_reads": [[kernel, read], ...], "latencies", "latencies_by_read",
   "objects_by_read", "readers_by_read", "t_start", "t_end", "stats"}``; then EOF.

The instants (all CLOCK_MONOTONIC): ``received`` is the watcher's stamp on each event
(``ObjectDelta.received``): the moment the watcher's read of the watch stream returned
the chunk holding it, split into lines, before decoding; ``queued`` is when the
``on_receive`` listener ran: after the whole read was decoded, transformed and put in the
FIFO; ``publishes`` are ``on_publish`` calls, right after each batch is published;
``socket_reads`` are the load phase's reads of this process's TCP sockets (the watch's,
the only one busy then) with the kernel's receive time of their newest packet
(bench/socketstamps.py): earlier than ``received`` by however long the bytes waited for
this process.

Readers (``read``), each looping without pause on the informer's loop, as in the issue's
measurements: ``index`` (one random owner's pods through the controller index), ``scan``
(``for obj in snap.list(): obj.name``, never yielding, then ``sleep(0)``), ``chunks``
(the same through ``iter_chunks``, yielding every 1000 objects), ``none``; ``mixed``:
reader ``i`` reads as ``PATTERNS[i % 3]`` (scan, index, chunks: 50 readers are 17 scan,
17 index, 16 chunks), all started together. ``latencies_by_read`` in the result holds
each pattern's read latencies apart (``latencies`` all of them), ``objects_by_read`` the
objects each pattern's readers read in all (a pass the end of the load cut short counted
too: at a million pods a ``chunks`` pass behind 17 scans may never end).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import signal
import sys
import time
from typing import Any

import orjson

from aioinformer._harness.procstats import rss_bytes
from bench import socketstamps

TOKEN_ENV = "AIOINFORMER_STALE_TOKEN"


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")
    sys.stdout.buffer.flush()


#: The reader patterns a ``mixed`` run takes in turn.
PATTERNS = ("scan", "index", "chunks")


def patterns(read: str, readers: int) -> list[str]:
    """Each reader's pattern: ``read`` for every reader, or for ``mixed`` reader ``i``'s
    :data:`PATTERNS` ``[i % 3]``."""
    if read == "mixed":
        return [PATTERNS[i % len(PATTERNS)] for i in range(readers)]
    return [read] * readers


async def reader(
    informer: Any, mode: str, uids: list[str], seed: int, out: list[float], seen: dict[str, int]
) -> None:
    """Read as ``mode`` without pause: each read's latency into ``out``; the objects read
    (a pass cut short by the end of the load counted too) into ``seen[mode]`` at the end."""
    rnd = random.Random(seed)
    n = 0
    try:
        while True:
            t0 = time.perf_counter()
            snap = informer.snapshot()
            if mode == "index":
                n += len(snap.by_index("controller", rnd.choice(uids)))
            elif mode == "scan":
                objs = snap.list()
                for obj in objs:
                    obj.name  # noqa: B018  (what a lister without an index touches)
                n += len(objs)
                del objs
            else:
                async for obj in snap.iter_chunks(chunk=1000):
                    obj.name  # noqa: B018
                    n += 1
            del snap
            out.append(time.perf_counter() - t0)
            await asyncio.sleep(0)
    finally:
        seen[mode] = seen.get(mode, 0) + n


async def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="informer process: %(name)s: %(message)s")
    from aioinformer import InformerFactory, ProcessSettings, drop_managed_fields
    from aioinformer._cache.deltas import ObjectDelta
    from aioinformer._client.config import load_api_client
    from aioinformer._harness.simproc import parent_messages, sim_api_client

    socketstamps.install()  # (before the informer's connections are made)
    receive = await parent_messages()
    cfg = await receive()
    if cfg.get("cpu") is not None:  # every thread there is (the pipeline thread comes later)
        for tid in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(tid), {int(cfg["cpu"])})
    if "kubeconfig" in cfg:
        api = await load_api_client(cfg["kubeconfig"])
    else:
        api = sim_api_client(cfg["url"], os.environ[TOKEN_ENV])
    async with api:
        process = ProcessSettings(pipeline_priority=cfg.get("pipeline_priority"))
        factory = InformerFactory(api, pipeline=cfg["pipeline"], process=process)
        extra: dict[str, Any] = {"compact": True} if cfg.get("compact") else {}
        if cfg.get("namespace"):
            extra["namespace"] = cfg["namespace"]
        pods = factory.informer("v1", "pods", transform=drop_managed_fields, **extra)
        publishes: list[tuple[float, int]] = []
        pods.on_publish(lambda _seq, rv: publishes.append((time.monotonic(), rv)))
        receipts: list[tuple[int, float, float]] = []

        def note_receipts(items: Any) -> None:
            now = time.monotonic()
            receipts.extend((i.obj.rv, i.received, now) for i in items if type(i) is ObjectDelta)

        pods.on_receive(note_receipts)
        gc.collect()
        emit({"ready": {"rss_bytes": rss_bytes(), "cpus": sorted(os.sched_getaffinity(0))}})
        assert (await receive())["op"] == "sync"
        t0 = time.perf_counter()
        async with factory:  # runs the informer until the block ends
            await pods.wait_for_sync()
            synced = time.perf_counter() - t0
            gc.collect()
            emit({"synced": synced, "objects": len(pods.snapshot()), "rss_bytes": rss_bytes()})
            await measure(pods, cfg, receive, publishes, receipts)


async def measure(
    pods: Any,
    cfg: dict[str, Any],
    receive: Any,
    publishes: list[tuple[float, int]],
    receipts: list[tuple[int, float, float]],
) -> None:
    """The load, the drain and the result (protocol steps 3 to 5), the informer running."""
    seconds = float((await receive())["seconds"])
    by_read: dict[str, list[float]] = {}
    seen: dict[str, int] = {}
    tasks = []
    if cfg["read"] != "none":
        tasks = [
            asyncio.create_task(
                reader(pods, mode, cfg["uids"], i, by_read.setdefault(mode, []), seen)
            )
            for i, mode in enumerate(patterns(cfg["read"], cfg["readers"]))
        ]
    pods.reset_fifo_peak()  # the load's own peak, not the sync's
    socketstamps.READS.clear()  # (the sync's reads are not the load's)
    t_start = time.monotonic()
    await asyncio.sleep(seconds)
    t_end = time.monotonic()
    fifo_peak = pods.statistics().fifo_peak
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies = [t for times in by_read.values() for t in times]
    emit({"loaded": len(latencies)})
    target = int((await receive())["rv"])
    try:
        await pods.wait_fresh(target, timeout=300)
        reached = True
    except Exception:
        reached = False
    emit({"reached": reached})
    await receive()
    stats = pods.statistics()
    emit(
        {
            "publishes": publishes,
            "receipts": receipts,
            "socket_reads": socketstamps.READS,
            "latencies": latencies,
            "latencies_by_read": by_read,
            "objects_by_read": seen,
            "readers_by_read": {
                mode: patterns(cfg["read"], cfg["readers"]).count(mode) for mode in by_read
            },
            "t_start": t_start,
            "t_end": t_end,
            "stats": {
                "fifo_peak": fifo_peak,
                "pipeline": stats.pipeline,
                "pipeline_priority": stats.pipeline_priority,
            },
        }
    )


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(main())
