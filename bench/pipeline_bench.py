"""Events/s through the whole informer pipeline vs a bare orjson decode loop, same bytes.

    python bench/pipeline_bench.py --objects 10000 --events 50000 [--block 2000] [--rounds 2]

The pipeline is the real one (Watcher line parsing and decoding -> DeltaFIFO -> store
writer with the default indexes -> publish -> dispatch), fed by an in-memory lister-watcher
that hands over the lines of each read (up to 256 KiB, what asyncio receives per loop
iteration) and lets the loop run between reads, as ListWatch does, so the network and the
line framing are out of the measurement. The baseline decodes the same lines with
orjson.loads and keeps nothing.

Paired blocks: one informer syncs, then the events go through it ``--block`` lines at a
time, and each block is also decoded by the bare loop right before or after it (the order
alternates). A block's ratio (bare loop time / pipeline time) compares two runs a few tens
of milliseconds apart, so the machine's slow and fast phases (on a shared host the same
loop can take 1.6x longer for seconds at a time) hit both sides alike; the median of the
block ratios is the figure, with its quartiles. ``--rounds`` repeats this with a fresh
informer per configuration, interleaved: the library's informer on the caller's loop
(a ``LoopHost``), on a pipeline thread (a ``ThreadHost``, what a factory uses by default; the
blocks are handed to the thread's loop), on the thread in compact mode (issue 19: >= 0.7x
the bare loop), and the harness's lock-based baseline (``LockedInformer``, on the loop).
Also reported, once over the whole stream:
orjson.loads into a dict cache by key, as the simplest cache would.
Target (issue 3): pipeline events/s >= the bare decode loop (median block ratio >= 1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import orjson

from aioinformer._cache.deltas import ChangeType, ObjectDelta, Replace
from aioinformer._cache.informer import Informer
from aioinformer._cache.pipeline import LoopHost, PipelineHost, ThreadHost
from aioinformer._cache.snapshot_store import snapshot_store
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.objects import KubeObject, decode_event, decode_list
from aioinformer._harness.locked_informer import LockedInformer
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim


def make_stream(objects: int, events: int) -> tuple[bytes, list[bytes]]:
    """A list body of ``objects`` pods and ``events`` MODIFIED lines for them."""
    sim = KubeSim(history_size=events + objects + 10)
    owners = max(1, objects // 1000)
    sim.create("namespaces", {"metadata": {"name": "bench"}})
    for o in range(owners):
        sim.create_many(
            "pods",
            (
                realistic_pod("bench", f"sts-{o}", i, node=f"node-{i % 20}", phase="Running")
                for i in range(objects // owners)
            ),
            "bench",
            keep_status=True,
        )
    rt = sim.resource("pods")
    ts = sim.api.store(rt)
    page = sim.api.list(rt, None)
    body = (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":['
        % page.resource_version
        + b",".join(o.raw for o in page.items)
        + b"]}"
    )
    keys = list(ts.keys)
    seq = ts.next_seq
    for i in range(events):
        ns, name = keys[i % len(keys)].split("/")
        sim.patch("pods", name, {"metadata": {"annotations": {"tick": str(i)}}}, ns)
    prefix = b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",'
    evs = ts.events_since(seq) or []
    return body, [prefix + ev.obj.raw[1:] + b"}\n" for ev in evs]


READ_BYTES = 256 * 1024
"""What one read of a watch response holds at most: asyncio's transports receive up to
256 KiB per loop iteration, and aiohttp's ``readany`` returns it all (~78 events of
3.3 KB); between two reads the loop runs its other tasks, the store writer among them."""


class _NoRest:
    """What a pipeline host clones for its own loop (:meth:`BlockListWatch.using`): there is
    no HTTP here, so nothing to clone or close."""

    def clone(self) -> _NoRest:
        return _NoRest()

    async def aclose(self) -> None:
        pass


class BlockListWatch:
    """A lister-watcher serving a fixed list, then the blocks of lines put in ``blocks``."""

    resource = "pods"
    namespace: str | None = None

    def __init__(self, body: bytes, rest: _NoRest | None = None) -> None:
        self.body = body
        self.rest = rest or _NoRest()
        self.blocks: asyncio.Queue[list[bytes]] = asyncio.Queue()
        self._moved: tuple[asyncio.AbstractEventLoop, BlockListWatch] | None = None

    def put(self, block: list[bytes]) -> None:
        """Hand ``block`` to the watch (on the pipeline thread's loop once it moved)."""
        if self._moved is None:
            self.blocks.put_nowait(block)
        else:
            loop, moved = self._moved
            loop.call_soon_threadsafe(moved.blocks.put_nowait, block)

    def using(self, rest: _NoRest) -> BlockListWatch:
        """The same lister-watcher for a pipeline thread (called there, as ListWatch's is):
        its queue on that thread's loop."""
        moved = BlockListWatch(self.body, rest)
        self._moved = (asyncio.get_running_loop(), moved)
        return moved

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        items, rv, _ = decode_list(self.body)
        return items, rv, None

    async def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        send_initial_events: bool = False,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
        on_oversized: Callable[[int], None] | None = None,
    ) -> AsyncGenerator[list[bytes], None]:
        while True:
            block = await self.blocks.get()
            per_read = max(1, READ_BYTES * len(block) // sum(map(len, block)))
            for start in range(0, len(block), per_read):
                yield block[start : start + per_read]  # the lines of one read
                await asyncio.sleep(0)  # the next read waits for the socket


def bare_loop(lines: list[bytes]) -> float:
    """Seconds to orjson.loads every line, keeping nothing."""
    loads = orjson.loads
    t0 = time.perf_counter()
    for line in lines:
        loads(line)
    return time.perf_counter() - t0


def dict_cache_rate(lines: list[bytes]) -> float:
    """Events/s of orjson.loads into a dict cache by namespace/name."""
    cache: dict[str, Any] = {}
    t0 = time.perf_counter()
    for line in lines:
        obj = orjson.loads(line)["object"]
        meta = obj["metadata"]
        cache[f"{meta['namespace']}/{meta['name']}"] = obj
    elapsed = time.perf_counter() - t0
    del cache
    return len(lines) / elapsed


class _Reads:
    """A watch response whose body arrives in the given reads (aiohttp's ``readany``)."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)
        self.content = self

    async def readany(self) -> bytes:
        return next(self._reads, b"")


def framing_cost(lines: list[bytes], read_size: int = READ_BYTES) -> float:
    """Microseconds per line to cut the stream (the lines joined) into lines, as
    ListWatch does for every read of a watch response (best of 5)."""
    data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    reads = [data[i : i + read_size] for i in range(0, len(data), read_size)]
    lw = ListWatch(None, "v1", "pods")

    async def cut() -> int:
        n = 0
        async for batch in lw._lines(_Reads(reads), None, None):  # type: ignore[arg-type]
            n += len(batch)
        return n

    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        assert asyncio.run(cut()) == len(lines)
        best = min(best, time.perf_counter() - t0)
    return best / len(lines) * 1e6


PIPELINES = ("snapshot", "snapshot_thread", "snapshot_thread_compact", "locked")
"""The informers measured: the library's on the caller's loop and on a pipeline thread (what a
factory uses by default), in compact mode, and the lock-based baseline."""


def informer_for(kind: str, lw: BlockListWatch) -> tuple[Informer, PipelineHost]:
    """The informer of configuration ``kind`` over ``lw``, and its pipeline host."""
    if kind == "locked":
        host: PipelineHost = LoopHost()
        return LockedInformer(lw, name="pods", host=host), host
    host = ThreadHost("bench") if kind.startswith("snapshot_thread") else LoopHost()
    return Informer(lw, name="pods", host=host, compact=kind.endswith("_compact")), host


async def paired_blocks(
    body: bytes, lines: list[bytes], kind: str, block: int
) -> list[tuple[float, float]]:
    """(bare loop seconds, pipeline seconds) per block of one informer's run."""
    lw = BlockListWatch(body)
    inf, host = informer_for(kind, lw)
    pairs = []
    try:
        async with asyncio.TaskGroup() as tasks:
            running = tasks.create_task(inf.run())
            await inf.wait_for_sync(timeout=120)
            for n, start in enumerate(range(0, len(lines) - block + 1, block)):
                chunk = lines[start : start + block]
                last_rv = int(orjson.loads(chunk[-1])["object"]["metadata"]["resourceVersion"])
                if n % 2:
                    bare = bare_loop(chunk)
                t0 = time.perf_counter()
                lw.put(chunk)
                await inf.wait_fresh(last_rv, timeout=600)
                piped = time.perf_counter() - t0
                if not n % 2:
                    bare = bare_loop(chunk)
                pairs.append((bare, piped))
            running.cancel()  # the informer's only stop signal
    finally:
        await host.aclose()  # (a factory ends its pipeline thread this way)
    return pairs


def stages(body: bytes, lines: list[bytes], chunk: int = 1000) -> dict[str, Any]:
    """Where the pipeline's time goes: each stage's rate against the bare loop (median and
    quartiles of paired chunks, as for the pipeline), all without asyncio.

    * ``decode``: decode_event, the object dropped at once.
    * ``decode_into_dict``: the objects kept in a dict by key, replacing the previous
      version: the least any cache of them costs (new memory, the old object freed).
    * ``decode_into_snapshot_store``: ObjectDelta items applied to a snapshot store with the
      default indexes, one batch (and one snapshot) per read's lines, as the writer does.
    """
    batch = max(1, READ_BYTES * len(lines) // sum(map(len, lines)))
    items, rv, _ = decode_list(body)
    cache = {obj.key: obj for obj in items}
    _, writer = snapshot_store()
    writer.apply([Replace(items, int(rv), 0.0)], changes=False)
    del items

    def decode(part: list[bytes]) -> None:
        for line in part:
            decode_event(line)

    def decode_into_dict(part: list[bytes]) -> None:
        for line in part:
            obj = decode_event(line)[1]
            cache[obj.key] = obj  # type: ignore[union-attr]

    def decode_into_snapshot_store(part: list[bytes]) -> None:
        for start in range(0, len(part), batch):
            deltas = [
                ObjectDelta(ChangeType.UPDATED, decode_event(line)[1], 0.0)  # type: ignore[arg-type]
                for line in part[start : start + batch]
            ]
            writer.apply(deltas, changes=False)

    runs: dict[str, Callable[[list[bytes]], None]] = {
        "decode": decode,
        "decode_into_dict": decode_into_dict,
        "decode_into_snapshot_store": decode_into_snapshot_store,
    }
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs)
    for n, start in enumerate(range(0, len(lines) - chunk + 1, chunk)):
        part = lines[start : start + chunk]
        bare = bare_loop(part)
        for name in order[n % 3 :] + order[: n % 3]:  # each stage first in turn
            t0 = time.perf_counter()
            runs[name](part)
            ratios[name].append(bare / (time.perf_counter() - t0))
    return {name: quartiles(got) for name, got in ratios.items()}


def quartiles(values: list[float]) -> list[float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return [round(q[0], 3), round(statistics.median(values), 3), round(q[2], 3)]


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--objects", type=int, default=10_000)
    p.add_argument("--events", type=int, default=50_000)
    p.add_argument("--block", type=int, default=2000, help="lines per paired block")
    p.add_argument(
        "--rounds", type=int, default=2, help="informer runs per store kind, interleaved"
    )
    p.add_argument("--pipelines", default=",".join(PIPELINES), help=f"from {', '.join(PIPELINES)}")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    body, lines = make_stream(args.objects, args.events)
    pairs: dict[str, list[tuple[float, float]]] = {k: [] for k in args.pipelines.split(",")}
    for _ in range(max(1, args.rounds)):
        for store in pairs:
            gc.collect()  # the last run's informer is garbage: not this run's cost
            pairs[store] += asyncio.run(paired_blocks(body, lines, store, args.block))
    gc.collect()
    into_dict = statistics.median(dict_cache_rate(lines) for _ in range(3))
    framing_us = framing_cost(lines)
    stage_ratios = stages(body, lines)
    result: dict[str, Any] = {
        "command": "python bench/pipeline_bench.py " + " ".join(sys.argv[1:]),
        "objects": args.objects,
        "events": len(lines),
        "bytes_per_event": round(sum(map(len, lines)) / len(lines)),
        "block": args.block,
        "rounds": max(1, args.rounds),
    }
    for store, got in pairs.items():
        result[f"pipeline_{store}_events_per_second"] = round(
            statistics.median(args.block / piped for _, piped in got)
        )
        # the bare loop's rate over the same blocks (their pairs): the other side of the ratio
        result[f"orjson_decode_beside_{store}_events_per_second"] = round(
            statistics.median(args.block / bare for bare, _ in got)
        )
    bare_rates = [args.block / bare for got in pairs.values() for bare, _ in got]
    result["orjson_decode_events_per_second"] = round(statistics.median(bare_rates))
    result["orjson_decode_into_dict_events_per_second"] = round(into_dict)
    # not in the pipeline figures: ListWatch's cutting of 256 KiB reads into lines
    result["framing_us_per_event"] = round(framing_us, 2)
    result["framing_vs_orjson_decode"] = round(
        framing_us / (1e6 / result["orjson_decode_events_per_second"]), 3
    )
    for store, got in pairs.items():
        ratios = [bare / piped for bare, piped in got]
        result[f"pipeline_{store}_vs_orjson_decode"] = round(statistics.median(ratios), 3)
        result[f"pipeline_{store}_vs_orjson_decode_quartiles"] = quartiles(ratios)
        result[f"pipeline_{store}_blocks"] = len(ratios)
    result["stages_vs_orjson_decode_quartiles"] = stage_ratios
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
