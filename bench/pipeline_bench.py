"""Events/s through the whole informer pipeline vs a bare orjson decode loop, same bytes.

    python bench/pipeline_bench.py --objects 10000 --events 50000 [--rounds 3]

The pipeline is the real one (Watcher line parsing and decoding -> DeltaFIFO -> store
writer with the default indexes -> publish -> dispatch), fed by an in-memory lister-watcher
so the network is out of the measurement. The baseline decodes the same lines with
orjson.loads (and, second variant, also keeps them in a dict by key, as the simplest cache
would). Every measurement runs ``--rounds`` times, interleaved, and the medians are
reported, with the per-round ratio of the snapshot pipeline to the bare decode loop.
Target (issue 3): pipeline events/s >= the bare decode loop.
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

from aioinformer._informer import Informer
from aioinformer._objects import KubeObject, decode_list
from aioinformer.testing import KubeSim
from aioinformer.testing._workload import realistic_pod


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


class MemoryListWatch:
    """A lister-watcher serving a fixed list and then a fixed stream of lines."""

    resource = "pods"
    namespace: str | None = None

    def __init__(self, body: bytes, lines: list[bytes]) -> None:
        self.body = body
        self.lines = lines
        self.served = False

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
    ) -> AsyncGenerator[bytes, None]:
        if not self.served:
            self.served = True
            for i, line in enumerate(self.lines):
                yield line
                if i % 256 == 0:
                    await asyncio.sleep(0)  # a socket read returns to the loop now and then
        await asyncio.Event().wait()


def bare_loop(lines: list[bytes], keep: bool) -> float:
    cache: dict[str, Any] = {}
    t0 = time.perf_counter()
    for line in lines:
        ev = orjson.loads(line)
        if keep:
            meta = ev["object"]["metadata"]
            cache[f"{meta['namespace']}/{meta['name']}"] = ev["object"]
    return len(lines) / (time.perf_counter() - t0)


async def pipeline(body: bytes, lines: list[bytes], store: str) -> float:
    lw = MemoryListWatch(body, lines)
    inf = Informer(lw, name="pods", store=store)  # type: ignore[arg-type]
    last_rv = int(orjson.loads(lines[-1])["object"]["metadata"]["resourceVersion"])
    task = asyncio.create_task(inf.run())
    await inf.wait_synced(timeout=120)
    t0 = time.perf_counter()
    await inf.wait_fresh(last_rv, timeout=600)
    elapsed = time.perf_counter() - t0
    inf.stop()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return len(lines) / elapsed


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--objects", type=int, default=10_000)
    p.add_argument("--events", type=int, default=50_000)
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of every measurement, interleaved; medians are reported",
    )
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    body, lines = make_stream(args.objects, args.events)
    gc.collect()
    runs: dict[str, list[float]] = {}
    ratios: list[float] = []
    for _ in range(max(1, args.rounds)):  # interleaved: a noisy neighbour hits all alike
        bare = bare_loop(lines, keep=False)
        round_ = {
            "orjson_decode": bare,
            "orjson_decode_into_dict": bare_loop(lines, keep=True),
            "pipeline_snapshot": asyncio.run(pipeline(body, lines, "snapshot")),
            "pipeline_locked": asyncio.run(pipeline(body, lines, "locked")),
        }
        for name, rate in round_.items():
            runs.setdefault(name, []).append(rate)
        ratios.append(round_["pipeline_snapshot"] / bare)
    result: dict[str, Any] = {
        "objects": args.objects,
        "events": len(lines),
        "bytes_per_event": round(sum(map(len, lines)) / len(lines)),
        "rounds": len(ratios),
    }
    for name, rates in runs.items():
        result[f"{name}_events_per_second"] = round(statistics.median(rates))
    result["pipeline_snapshot_vs_orjson_decode"] = round(statistics.median(ratios), 2)
    result["pipeline_snapshot_vs_orjson_decode_per_round"] = [round(r, 2) for r in ratios]
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
