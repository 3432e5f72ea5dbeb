"""Staleness under readers that never yield, the pipeline thread against the single loop.

    python bench/staleness_bench.py --pods 50000,200000 --json bench/results/staleness.json

KubeSim runs in its own process with N StatefulSet-shaped pods (1000 per owner, one
namespace) and makes ``--rate`` kubelet status writes per second; for each pipeline
(``thread``: the informer's watcher and writer on its factory's pipeline thread, the
default; ``loop``: on the readers' event loop) and each reader mode, a fresh informer process (bench/_stalechild.py,
managedFields dropped) syncs, then ``--readers`` readers loop without pause on its event
loop for ``--duration`` seconds:

* ``none``: no reader;
* ``index``: one random owner's pods through the controller index;
* ``scan``: ``for obj in snap.list(): obj.name`` then ``sleep(0)``: never yields;
* ``chunks``: the same through ``iter_chunks`` (yields every 1000 objects).

Staleness of each pod change: the sim's commit time (its PATCH response) -> the first
published snapshot holding it (the informer's publish log; both clocks are the machine's
CLOCK_MONOTONIC). Also reported: the informer process's RSS per pod (after the sync minus
before it, / N, a fresh process) and its sync time; ``--compact`` runs the informer in
compact mode (issue 19, sections 2 and 3: RSS per pod <= 7.6 KB by default, <= 2.5 KB
compact; one million pods with ``--pods 1000000 --compact --modes index --pipelines thread
--rate 2000 --history 200000``).

Target (issue 19): with 4 ``scan`` readers, staleness p99 <= 2 x the ``none`` p99 + 20 ms,
at 50k and at 200k pods, with the pipeline thread; ``index`` and ``chunks`` no worse than
on the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import orjson

from aioinformer._harness.contention import percentile, split_staleness, staleness_of
from aioinformer._harness.informer_process import owner_uids
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, spawn_python

_BENCH_ROOT = str(Path(__file__).resolve().parent.parent)


def _python_path() -> str:
    """The child's PYTHONPATH: this checkout first, then the caller's."""
    return os.pathsep.join(p for p in (_BENCH_ROOT, os.environ.get("PYTHONPATH")) if p)


TOKEN_ENV = "AIOINFORMER_STALE_TOKEN"


async def end_child(child: asyncio.subprocess.Process) -> None:
    """Close the child's stdin (its end-of-protocol) and wait for it to exit; kill it
    after 60 s."""
    if child.returncode is not None:
        return
    assert child.stdin is not None
    child.stdin.close()
    try:
        await asyncio.wait_for(child.wait(), 60)
    except TimeoutError:
        child.kill()
        await child.wait()


async def run_child(
    sim: SimProcess, cfg: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    child = await spawn_python(
        "bench._stalechild", env={TOKEN_ENV: sim.token, "PYTHONPATH": _python_path()}
    )
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def ask(msg: dict[str, Any]) -> dict[str, Any]:
        stdin.write(orjson.dumps(msg) + b"\n")
        await stdin.drain()
        line = await stdout.readline()
        if not line:
            raise RuntimeError(f"{cfg}: the informer process exited ({await child.wait()})")
        reply: dict[str, Any] = orjson.loads(line)
        return reply

    try:
        ready = (await ask({"url": sim.url, **cfg}))["ready"]
        synced = await ask({"op": "sync"})
        await sim.record()
        load_1m = os.getloadavg()[0]  # the machine is shared: how busy it was
        await sim.churn(args.rate)
        await ask({"op": "load", "seconds": args.duration})
        await sim.churn(0)
        target = (await sim.stats())["rv"]
        reached = (await ask({"op": "wait_rv", "rv": target}))["reached"]
        raw = await ask({"op": "result"})
        commits = await sim.commits()
        sim_rss = (await sim.stats())["rss_bytes"]
    finally:
        await end_child(child)
    in_load = [(rv, t) for rv, t in commits if raw["t_start"] <= t <= raw["t_end"]]
    stale = [s for _, s in staleness_of(in_load, raw["publishes"])]
    wire, informer = split_staleness(in_load, raw["receipts"], raw["publishes"])
    lat = raw["latencies"]
    return {
        **{k: v for k, v in cfg.items() if k != "uids"},
        "objects": synced["objects"],
        "sync_seconds": round(synced["synced"], 2),
        "rss_per_pod_bytes": round((synced["rss_bytes"] - ready["rss_bytes"]) / synced["objects"]),
        "rss_bytes": synced["rss_bytes"],
        "sim_rss_bytes": sim_rss,
        "changes": len(in_load),
        "published_all": reached,
        "staleness_p50": round(percentile(stale, 0.5), 5),
        "staleness_p99": round(percentile(stale, 0.99), 5),
        "staleness_max": round(max(stale, default=0.0), 5),
        "wire_p99": round(percentile(wire, 0.99), 5),
        "informer_p99": round(percentile(informer, 0.99), 5),
        "reads": len(lat),
        "read_p50": round(percentile(lat, 0.5), 5),
        "read_p99": round(percentile(lat, 0.99), 5),
        "fifo_peak": raw["stats"]["fifo_peak"],
        "load_1m": round(load_1m, 2),
        "pipeline_ran": raw["stats"]["pipeline"],
    }


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per N and pipeline: scan p99 against 2 x none p99 + 20 ms; index and chunks
    against the loop's."""
    out = []
    by = {(r["pods"], r["pipeline"], r["read"]): r for r in rows}
    for pods in sorted({r["pods"] for r in rows}):
        for pipeline in ("thread", "loop"):
            none, scan = by.get((pods, pipeline, "none")), by.get((pods, pipeline, "scan"))
            if none and scan:
                bound = 2 * none["staleness_p99"] + 0.020
                out.append(
                    {
                        "pods": pods,
                        "pipeline": pipeline,
                        "what": "scan p99 <= 2 x none p99 + 20 ms",
                        "value": scan["staleness_p99"],
                        "bound": round(bound, 5),
                        "ratio": round(scan["staleness_p99"] / bound, 3),
                        "holds": scan["staleness_p99"] <= bound,
                    }
                )
        for read in ("index", "chunks"):
            thread, loop = by.get((pods, "thread", read)), by.get((pods, "loop", read))
            if thread and loop:
                out.append(
                    {
                        "pods": pods,
                        "pipeline": "thread",
                        "what": f"{read} p99, thread / loop",
                        "value": thread["staleness_p99"],
                        "bound": loop["staleness_p99"],
                        "ratio": round(
                            thread["staleness_p99"] / max(1e-9, loop["staleness_p99"]), 3
                        ),
                        "holds": thread["staleness_p99"] <= loop["staleness_p99"] * 1.1 + 0.002,
                    }
                )
    return out


def measured_args(argv: list[str]) -> list[str]:
    """``argv`` without ``--note`` and its text (an annotation, recorded on its own)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--note":
            skip = True
        elif not arg.startswith("--note="):
            out.append(arg)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    populated = []
    for n in [int(x) for x in args.pods.split(",")]:
        owners = max(1, n // 1000)
        async with SimProcess(history_size=max(args.history, int(args.rate * 40))) as sim:
            made = await sim.populate(owners, n // owners, namespaces=1, nodes=100)
            sim_stats = await sim.stats()
            populated.append(
                {
                    "pods": made["pods"],
                    "seconds": round(made["seconds"], 1),
                    "sim_rss_bytes": sim_stats["rss_bytes"],
                }
            )
            uids = owner_uids(owners, 1)
            for pipeline in args.pipelines.split(","):
                for read in args.modes.split(","):
                    cfg = {
                        "pods": made["pods"],
                        "pipeline": pipeline,
                        "read": read,
                        "readers": args.readers,
                        "compact": args.compact,
                        "uids": uids,
                    }
                    row = await run_child(sim, cfg, args)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    rows.append(row)
    return {
        "command": "python bench/staleness_bench.py " + shlex.join(measured_args(sys.argv[1:])),
        "machine": machine_info(),
        "rate": args.rate,
        "duration": args.duration,
        "readers": args.readers,
        "compact": args.compact,
        "note": args.note,
        "populated": populated,
        "rows": rows,
        "targets": targets(rows),
    }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", default="50000,200000", help="comma-separated N")
    p.add_argument("--rate", type=float, default=100.0, help="sim writes per second")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load per run")
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--modes", default="none,index,scan,chunks")
    p.add_argument("--pipelines", default="thread,loop")
    p.add_argument(
        "--compact", action="store_true", help="the informer in compact mode (compact=True)"
    )
    p.add_argument("--history", type=int, default=100_000, help="the sim's event history")
    p.add_argument(
        "--note", default="", help="said with the results (e.g. which run this repeats and why)"
    )
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    result = asyncio.run(main_async(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
