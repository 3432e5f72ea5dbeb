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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
import pinning
import realserver

_BENCH_ROOT = str(Path(__file__).resolve().parent.parent)


def _python_path() -> str:
    """The child's PYTHONPATH: this checkout first, then the caller's."""
    return os.pathsep.join(p for p in (_BENCH_ROOT, os.environ.get("PYTHONPATH")) if p)


TOKEN_ENV = "AIOINFORMER_STALE_TOKEN"


async def end_child(child: asyncio.subprocess.Process) -> None:
    """Close the child's stdin (its end-of-protocol) and wait for it to exit; kill it
    after 60 s, or at once when the caller is being cancelled (Ctrl-C)."""
    if child.returncode is not None:
        return
    assert child.stdin is not None
    child.stdin.close()
    task = asyncio.current_task()
    try:
        if task is not None and task.cancelling():
            raise TimeoutError
        await asyncio.wait_for(child.wait(), 60)
    except (TimeoutError, asyncio.CancelledError):
        child.kill()
        await child.wait()


class SimTarget:
    """KubeSim in its own process (:class:`SimProcess`) as the benchmark's target: its
    kubelet-like status churn, its commit log (the sim's commit times; no PATCH goes over
    HTTP, so no PATCH latency)."""

    def __init__(self, sim: SimProcess) -> None:
        self.sim = sim

    def informer_config(self) -> dict[str, Any]:
        return {"url": self.sim.url}

    def child_env(self) -> dict[str, str]:
        return {TOKEN_ENV: self.sim.token}

    async def record(self) -> None:
        await self.sim.record()

    async def churn(self, rate: float) -> None:
        await self.sim.churn(rate)

    async def last_rv(self) -> int:
        rv: int = (await self.sim.stats())["rv"]
        return rv

    async def commits(self) -> dict[str, Any]:
        return {"commits": await self.sim.commits(), "latencies": None}

    async def server_rss(self) -> int | None:
        rss: int = (await self.sim.stats())["rss_bytes"]
        return rss


class ServerTarget:
    """A real API server (:class:`realserver.RealServer`) as the benchmark's target."""

    def __init__(self, server: realserver.RealServer) -> None:
        self.server = server

    def informer_config(self) -> dict[str, Any]:
        return self.server.informer_config()

    def child_env(self) -> dict[str, str]:
        return self.server.child_env()

    async def record(self) -> None:
        await self.server.record()

    async def churn(self, rate: float) -> None:
        await self.server.churn(rate)

    async def last_rv(self) -> int:
        return await self.server.last_rv()

    async def commits(self) -> dict[str, Any]:
        return await self.server.commits()

    async def server_rss(self) -> int | None:
        return self.server.server_rss()


Target = SimTarget | ServerTarget


def _ms(values: list[float], q: float) -> float:
    return round(percentile(values, q), 5)


def figures(raw: dict[str, Any], log: dict[str, Any]) -> dict[str, Any]:
    """The load phase's figures from the informer's ``raw`` result and the target's
    ``log`` (``commits`` [(rv, t)], ``latencies`` [(t, seconds)] or None): staleness
    (commit -> first publish holding it), the informer's own latency (the watcher's read ->
    that publish) and its decoding part (-> the ``on_receive`` call), the wire part
    (commit -> the watcher's read), the readers' and the PATCHes' latencies. Commits and
    PATCHes count when their time falls in the load phase."""
    t_start, t_end = raw["t_start"], raw["t_end"]
    in_load = [(rv, t) for rv, t in log["commits"] if t_start <= t <= t_end]
    publishes = raw["publishes"]
    receipts = [(rv, received) for rv, received, _ in raw["receipts"]]
    stale = [s for _, s in staleness_of(in_load, publishes)]
    wire, own = split_staleness(in_load, receipts, publishes)
    first: dict[int, float] = {}
    for rv, received, queued in raw["receipts"]:
        first.setdefault(rv, queued - received)
    wanted = {rv for rv, _ in in_load}
    decode = [d for rv, d in first.items() if rv in wanted]
    lat = raw["latencies"]
    out: dict[str, Any] = {
        "changes": len(in_load),
        "staleness_p50": _ms(stale, 0.5),
        "staleness_p99": _ms(stale, 0.99),
        "staleness_max": round(max(stale, default=0.0), 5),
        "own_latency_p50": _ms(own, 0.5),
        "own_latency_p99": _ms(own, 0.99),
        "own_latency_max": round(max(own, default=0.0), 5),
        "own_decode_p99": _ms(decode, 0.99),
        "wire_p99": _ms(wire, 0.99),
        "informer_p99": _ms(own, 0.99),  # (= own_latency_p99: render_results reads it)
        "reads": len(lat),
        "read_p50": _ms(lat, 0.5),
        "read_p99": _ms(lat, 0.99),
        "patch_p50": None,
        "patch_p99": None,
        "patch_max": None,
        "patch_errors": None,
        "patch_skipped": None,
    }
    if log.get("latencies") is not None:
        patches = [s for t, s in log["latencies"] if t_start <= t <= t_end]
        out["patch_p50"] = _ms(patches, 0.5)
        out["patch_p99"] = _ms(patches, 0.99)
        out["patch_max"] = round(max(patches, default=0.0), 5)
        out["patch_errors"] = log.get("errors", 0)
        out["patch_skipped"] = log.get("skipped", 0)
    return out


async def run_child(
    target: Target, cfg: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    env = {**target.child_env(), "PYTHONPATH": _python_path()}
    child = await spawn_python("bench._stalechild", env=env)
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

    pin = args.pinning
    try:
        config = {**target.informer_config(), **cfg, "cpu": pin.informer if pin else None}
        ready = (await ask(config))["ready"]
        synced = await ask({"op": "sync"})
        await target.record()
        load_1m = os.getloadavg()[0]  # the machine is shared: how busy it was
        await target.churn(args.rate)
        await ask({"op": "load", "seconds": args.duration})
        await target.churn(0)
        load_end = os.getloadavg()[0]
        rv = await target.last_rv()
        reached = (await ask({"op": "wait_rv", "rv": rv}))["reached"]
        raw = await ask({"op": "result"})
        log = await target.commits()
        server_rss = await target.server_rss()
    finally:
        await end_child(child)
    return {
        **{k: v for k, v in cfg.items() if k != "uids"},
        "objects": synced["objects"],
        "sync_seconds": round(synced["synced"], 2),
        "rss_per_pod_bytes": round((synced["rss_bytes"] - ready["rss_bytes"]) / synced["objects"]),
        "rss_bytes": synced["rss_bytes"],
        "server_rss_bytes": server_rss,
        "published_all": reached,
        **figures(raw, log),
        "fifo_peak": raw["stats"]["fifo_peak"],
        "load_1m": round(load_1m, 2),
        "load_1m_end": round(load_end, 2),
        "informer_cpus": ready["cpus"],
        "pipeline_ran": raw["stats"]["pipeline"],
    }


def runs(modes: list[str], readers: list[int]) -> list[tuple[str, int]]:
    """(reader mode, reader count) of each run: one ``none`` run (0 readers) when ``none``
    is a mode or 0 a count, then every other mode with every count above 0."""
    out = [("none", 0)] if "none" in modes or 0 in readers else []
    out += [(m, n) for m in modes if m != "none" for n in readers if n > 0]
    return out


#: Issue 29: the informer's own latency (the watcher's read -> the publish), p99.
OWN_LATENCY_BOUND = 0.005


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per N, pipeline and reader count: scan p99 against 2 x none p99 + 20 ms; index and
    chunks against the loop's; on the pipeline thread, the own latency p99 <= 5 ms."""
    out = []
    by = {(r["pods"], r["pipeline"], r["read"], r["readers"]): r for r in rows}
    counts = sorted({r["readers"] for r in rows if r["readers"]})
    for pods in sorted({r["pods"] for r in rows}):
        for pipeline in ("thread", "loop"):
            none = by.get((pods, pipeline, "none", 0))
            for n in counts:
                scan = by.get((pods, pipeline, "scan", n))
                if none and scan:
                    bound = 2 * none["staleness_p99"] + 0.020
                    out.append(
                        {
                            "pods": pods,
                            "pipeline": pipeline,
                            "readers": n,
                            "what": "scan p99 <= 2 x none p99 + 20 ms",
                            "value": scan["staleness_p99"],
                            "bound": round(bound, 5),
                            "ratio": round(scan["staleness_p99"] / bound, 3),
                            "holds": scan["staleness_p99"] <= bound,
                        }
                    )
        for read in ("index", "chunks"):
            for n in counts:
                thread, loop = by.get((pods, "thread", read, n)), by.get((pods, "loop", read, n))
                if thread and loop:
                    out.append(
                        {
                            "pods": pods,
                            "pipeline": "thread",
                            "readers": n,
                            "what": f"{read} p99, thread / loop",
                            "value": thread["staleness_p99"],
                            "bound": loop["staleness_p99"],
                            "ratio": round(
                                thread["staleness_p99"] / max(1e-9, loop["staleness_p99"]), 3
                            ),
                            "holds": thread["staleness_p99"] <= loop["staleness_p99"] * 1.1 + 0.002,
                        }
                    )
    for r in rows:
        if r["pipeline"] == "thread":
            out.append(
                {
                    "pods": r["pods"],
                    "pipeline": "thread",
                    "readers": r["readers"],
                    "what": f"own latency p99 <= 5 ms, {r['read']}",
                    "value": r["own_latency_p99"],
                    "bound": OWN_LATENCY_BOUND,
                    "ratio": round(r["own_latency_p99"] / OWN_LATENCY_BOUND, 3),
                    "holds": r["own_latency_p99"] <= OWN_LATENCY_BOUND,
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


async def measure_pods(
    target: Target, pods: int, uids: list[str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Every (pipeline, reader mode, reader count) run on ``target``'s ``pods`` pods."""
    rows = []
    for pipeline in args.pipelines.split(","):
        for read, count in runs(args.modes.split(","), args.reader_counts):
            cfg = {
                "pods": pods,
                "pipeline": pipeline,
                "read": read,
                "readers": count,
                "compact": args.compact,
                "uids": uids,
            }
            row = await run_child(target, cfg, args)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    populated = []
    pin: pinning.Pinning | None = args.pinning
    pinned = {"server_pids": args.server_pid_list, "server_threads_pinned": 0}
    if pin is not None:  # this process and the writer it starts stay off the informer's CPU
        pinning.pin_processes([os.getpid()], pin.server)
        pinned["server_threads_pinned"] = pinning.pin_processes(args.server_pid_list, pin.server)
    server: dict[str, Any] = {"kind": "kubesim"}
    for n in [int(x) for x in args.pods.split(",")]:
        owners = max(1, n // 1000)
        if args.kubeconfig:
            async with realserver.RealServer(
                args.kubeconfig, patch=args.patch, server_pids=args.server_pid_list
            ) as real:
                made = await real.populate(owners, n // owners)
                server = {"kind": "kube-apiserver", "namespace": real.namespace, **made}
                server["patch"] = args.patch
                populated.append({"pods": made["pods"], "seconds": round(made["seconds"], 1)})
                rows += await measure_pods(
                    ServerTarget(real), made["pods"], real.owner_uids(), args
                )
            continue
        async with SimProcess(history_size=max(args.history, int(args.rate * 40))) as sim:
            if pin is not None:
                pinned["sim_threads_pinned"] = pinning.pin_processes([sim.pid], pin.server)
            made = await sim.populate(owners, n // owners, namespaces=1, nodes=100)
            sim_stats = await sim.stats()
            populated.append(
                {
                    "pods": made["pods"],
                    "seconds": round(made["seconds"], 1),
                    "sim_rss_bytes": sim_stats["rss_bytes"],
                }
            )
            rows += await measure_pods(SimTarget(sim), made["pods"], owner_uids(owners, 1), args)
    return {
        "command": "python bench/staleness_bench.py " + shlex.join(measured_args(args.argv)),
        "machine": machine_info(),
        "server": server,
        "pinning": {**(pin.as_dict() if pin else {"informer_cpu": None}), **pinned},
        "rate": args.rate,
        "duration": args.duration,
        "readers": args.reader_counts,
        "compact": args.compact,
        "note": args.note,
        "populated": populated,
        "rows": rows,
        "targets": targets(rows),
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", default="50000,200000", help="comma-separated N")
    p.add_argument("--rate", type=float, default=100.0, help="writes (PATCHes) per second")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load per run")
    p.add_argument("--readers", default="4", help="comma-separated reader counts (0: the none run)")
    p.add_argument("--modes", default="none,index,scan,chunks")
    p.add_argument("--pipelines", default="thread,loop")
    p.add_argument(
        "--compact", action="store_true", help="the informer in compact mode (compact=True)"
    )
    p.add_argument("--history", type=int, default=100_000, help="the sim's event history")
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="measure on the API server this kubeconfig names (a fresh namespace, removed "
        "at the end) instead of KubeSim",
    )
    p.add_argument(
        "--patch",
        choices=("status", "label"),
        default="status",
        help="real server: what each PATCH changes (Ready condition, or a label)",
    )
    p.add_argument(
        "--informer-cpu",
        type=int,
        metavar="CPU",
        help="pin the informer's process to this CPU, this process, its writer and the "
        "server (KubeSim's process, --server-pids) to the others",
    )
    p.add_argument(
        "--server-pids",
        default="",
        metavar="PIDS",
        help="comma-separated pids of the real server's processes (kube-apiserver, etcd) to "
        "pin off the informer's CPU (with --informer-cpu)",
    )
    p.add_argument(
        "--note", default="", help="said with the results (e.g. which run this repeats and why)"
    )
    p.add_argument("--json", metavar="PATH")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The options, checked: ``reader_counts`` (ints >= 0), ``server_pid_list``,
    ``pinning`` (:func:`pinning.plan`; None without ``--informer-cpu``); ``--server-pids``
    needs ``--informer-cpu`` (the server goes to the CPUs it leaves)."""
    p = parser()
    args = p.parse_args(argv)
    args.argv = list(argv)
    try:
        args.reader_counts = [int(x) for x in args.readers.split(",") if x.strip()]
        if not args.reader_counts or min(args.reader_counts) < 0:
            raise ValueError(f"--readers {args.readers!r}: counts >= 0")
        args.server_pid_list = pinning.parse_pids(args.server_pids)
        args.pinning = pinning.plan(args.informer_cpu)
    except ValueError as exc:
        p.error(str(exc))
    if args.server_pid_list and args.pinning is None:
        p.error("--server-pids needs --informer-cpu (the server goes to the other CPUs)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = asyncio.run(main_async(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
