"""Staleness under readers that never yield, and the informer's own latency, on KubeSim or
on a real API server.

    python bench/staleness_bench.py --pods 50000,200000 --json bench/results/staleness.json

KubeSim runs in its own process with N StatefulSet-shaped pods (1000 per owner, one
namespace) and makes ``--rate`` kubelet status writes per second; for each pipeline
(``thread``: the informer's watcher and writer on its factory's pipeline thread, the
default; ``loop``: on the readers' event loop), each reader mode and each reader count
(``--readers 0,4,16``; 0 is the ``none`` run), a fresh informer process
(bench/_stalechild.py, managedFields dropped) syncs, then the readers loop without pause
on its event loop for ``--duration`` seconds:

* ``none``: no reader;
* ``index``: one random owner's pods through the controller index;
* ``scan``: ``for obj in snap.list(): obj.name`` then ``sleep(0)``: never yields;
* ``chunks``: the same through ``iter_chunks`` (yields every 1000 objects);
* ``mixed``: readers of each pattern in one run, taken in turn (scan, index, chunks: 50
  readers are 17 scan, 17 index, 16 chunks); each pattern's reads are also reported
  apart (``by_read``).

**A real server** (``--kubeconfig PATH``, bench/realserver.py): the same pods (the same
generator, about 3.8 KB of JSON each without managedFields) are created in a fresh
namespace ``stalebench-<hex>`` of the server the kubeconfig names, bound to node names and
given their Running status by the benchmark (no kubelet needed); a writer process
(bench/_realwriter.py) makes ``--rate`` PATCHes per second (``--patch status``: the Ready
condition, as KubeSim's churn; ``--patch label``: one label) and logs each one's
resourceVersion, response time and latency. The namespace is removed at the end, also on
an error or Ctrl-C (its pods without grace, then the namespace's finalizer: a bare
kube-apiserver runs no namespace controller). A kube-apiserver v1.28 + etcd on this
machine, measured with the informer alone on CPU 0::

    python bench/staleness_bench.py --kubeconfig admin.kubeconfig --pods 20000,50000 \
        --readers 0,4,16 --pipelines thread --informer-cpu 0 \
        --server-pids "$(pgrep -d, kube-apiserver),$(pgrep -d, etcd)" --json out.json

**Pinning** (``--informer-cpu CPU``, bench/pinning.py): after each N is populated, the
informer's process runs on that CPU alone (``os.sched_setaffinity``, all its threads),
and this process, the writer, KubeSim's process and every thread of ``--server-pids``
(what ``taskset -a -pc`` does) on the other CPUs, given their CPUs back at the end.
Without ``--server-pids`` the real server is not pinned (``server_threads_pinned`` 0 in
the report); ``taskset -a -pc 1 PID`` by hand does the same.

Figures per run (both clocks the machine's CLOCK_MONOTONIC):

* staleness: each change's commit (KubeSim: the sim's commit; a real server: the PATCH's
  response as the writer read it) -> the first published snapshot holding it (its RV);
* the informer's own latency: the watcher's read of the event -> that publish. The read's
  instant is ``ObjectDelta.received``: the watcher stamps each read of the watch stream
  (one chunk from the socket, split into lines) before decoding it; the ``on_receive``
  listener runs later, after the read is decoded, transformed and put in the FIFO
  (``own_decode_p99`` is that part). Time the bytes wait in the kernel before the
  informer's process reads them is not in it: it is in the wire part (commit -> the
  watcher's read, ``wire_p99``), with the server's own delivery;
* the same from the event's arrival on the socket (``socket_latency``): the kernel's
  receive time of the newest packet of the socket read that brought it
  (``SO_TIMESTAMPNS``, bench/socketstamps.py, on in the informer's process: a lower bound
  of the arrival when a read holds several events), and ``socket_wait_p99``, how long
  those bytes waited in the kernel for the informer's process to read them (a thread
  waiting for the CPU or the GIL);
* PATCH latency (a real server: request -> response in the writer; None on KubeSim,
  whose writes are its own), so a server starved of CPU shows;
* the readers' latency, the informer process's RSS per pod (after the sync minus before
  it, / N, a fresh process), its sync time, the FIFO peak, the load average at the load
  phase's start and end.

``--pipeline-priority N`` runs the pipeline thread at real-time priority N
(``ProcessSettings(pipeline_priority=N)``; ``priority_ran`` in each row says whether the
kernel granted it). ``--compact`` runs the informer in compact mode (issue 19, sections 2 and 3: RSS per pod
<= 7.6 KB by default, <= 2.5 KB compact; one million pods with ``--pods 1000000 --compact
--modes index --pipelines thread --rate 2000 --history 200000``; issue 29, with fifty
readers of every pattern: ``--modes mixed --readers 50``).

Targets: with 4 ``scan`` readers, staleness p99 <= 2 x the ``none`` p99 + 20 ms, at 50k
and at 200k pods, with the pipeline thread; ``index`` and ``chunks`` no worse than on the
loop (issue 19); the informer's own latency, from the event's arrival on the socket
(``socket_latency_p99``), <= 5 ms whatever the readers do (issue 29).
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

from aioinformer._harness.contention import percentile, split_staleness, staleness_of
from aioinformer._harness.informer_process import owner_uids
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, asker, spawn_python

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
import pinning
import realserver
import socketstamps

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


#: Every run's figures (numbers); PATCH_FIGURES are None on KubeSim (its writes are its own);
#: ``server_rss_bytes`` is None on a real server without ``--server-pids``.
FIGURES = (
    "sync_seconds",
    "rss_per_pod_bytes",
    "rss_bytes",
    "changes",
    "load_seconds",
    "writes_per_second",
    "staleness_p50",
    "staleness_p99",
    "staleness_max",
    "own_latency_p50",
    "own_latency_p99",
    "own_latency_max",
    "own_decode_p99",
    "socket_latency_p50",
    "socket_latency_p99",
    "socket_latency_max",
    "socket_wait_p99",
    "wire_p99",
    "reads",
    "read_p50",
    "read_p99",
    "fifo_peak",
    "load_1m",
    "load_1m_end",
)
PATCH_FIGURES = ("patch_p50", "patch_p99", "patch_max", "patch_errors", "patch_skipped")


def _ms(values: list[float], q: float) -> float:
    return round(percentile(values, q), 5)


def figures(raw: dict[str, Any], log: dict[str, Any]) -> dict[str, Any]:
    """The load phase's figures from the informer's ``raw`` result and the target's
    ``log`` (``commits`` [(rv, t)], ``latencies`` [(t, seconds)] or None): staleness
    (commit -> first publish holding it), the informer's own latency (the watcher's read ->
    that publish) and its decoding part (-> the ``on_receive`` call), the same from the
    kernel's receive time of the event's bytes (``socket_latency``; ``socket_wait``: the
    kernel -> the watcher's read, see bench/socketstamps.py), the wire part (commit -> the
    watcher's read), the readers' latencies (all of them, and each pattern's apart with
    the objects its readers read per second: ``by_read``) and the PATCHes'. Commits and
    PATCHes count when their time falls in the load phase (``load_seconds`` long: more than
    ``--duration`` when readers keep the informer's loop from its timer); ``writes_per_second``:
    those commits over its length."""
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
    arrived = socketstamps.socket_wait(receipts, raw.get("socket_reads", []))
    arrivals = [(rv, arrived[rv]) for rv, _ in in_load if rv in arrived]
    from_socket = [s for _, s in staleness_of(arrivals, publishes)]
    read_at = dict(reversed(receipts))  # (the first receipt of each rv)
    waited = [max(0.0, read_at[rv] - t) for rv, t in arrivals]
    lat = raw["latencies"]
    counts = raw.get("readers_by_read", {})
    seen = raw.get("objects_by_read", {})
    out: dict[str, Any] = {
        "changes": len(in_load),
        "load_seconds": round(t_end - t_start, 2),
        "writes_per_second": round(len(in_load) / max(1e-9, t_end - t_start), 1),
        "staleness_p50": _ms(stale, 0.5),
        "staleness_p99": _ms(stale, 0.99),
        "staleness_max": round(max(stale, default=0.0), 5),
        "own_latency_p50": _ms(own, 0.5),
        "own_latency_p99": _ms(own, 0.99),
        "own_latency_max": round(max(own, default=0.0), 5),
        "own_decode_p99": _ms(decode, 0.99),
        "socket_latency_p50": _ms(from_socket, 0.5),
        "socket_latency_p99": _ms(from_socket, 0.99),
        "socket_latency_max": round(max(from_socket, default=0.0), 5),
        "socket_wait_p99": _ms(waited, 0.99),
        "wire_p99": _ms(wire, 0.99),
        "informer_p99": _ms(own, 0.99),  # (= own_latency_p99: render_results reads it)
        "reads": len(lat),
        "read_p50": _ms(lat, 0.5),
        "read_p99": _ms(lat, 0.99),
        "by_read": {
            mode: {
                "readers": counts.get(mode),
                "reads": len(times),
                "objects_per_second": round(seen.get(mode, 0) / max(1e-9, t_end - t_start)),
                "read_p50": _ms(times, 0.5),
                "read_p99": _ms(times, 0.99),
                "read_max": round(max(times, default=0.0), 5),
            }
            for mode, times in raw.get("latencies_by_read", {}).items()
        },
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
    ask = asker(child, str(cfg))

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
        "priority_ran": raw["stats"].get("pipeline_priority"),
    }


#: The reader patterns ``--modes`` takes (bench/_stalechild.py reads them).
MODES = ("none", "index", "scan", "chunks", "mixed")


def runs(modes: list[str], readers: list[int]) -> list[tuple[str, int]]:
    """(reader mode, reader count) of each run: one ``none`` run (0 readers) when ``none``
    is a mode or 0 a count, then every other mode with every count above 0."""
    out = [("none", 0)] if "none" in modes or 0 in readers else []
    out += [(m, n) for m in modes if m != "none" for n in readers if n > 0]
    return out


#: Issue 29: the informer's own latency (the event's arrival on the socket -> the publish), p99.
OWN_LATENCY_BOUND = 0.005


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per N, pipeline and reader count: scan p99 against 2 x none p99 + 20 ms; index and
    chunks against the loop's; on the pipeline thread, the latency from the socket (the
    event's arrival -> the publish) p99 <= 5 ms."""
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
            value = r["socket_latency_p99"]  # (the issue's: from the arrival on the socket)
            out.append(
                {
                    "pods": r["pods"],
                    "pipeline": "thread",
                    "readers": r["readers"],
                    "what": f"latency from the socket p99 <= 5 ms, {r['read']}",
                    "value": value,
                    "bound": OWN_LATENCY_BOUND,
                    "ratio": round(value / OWN_LATENCY_BOUND, 3),
                    "holds": value <= OWN_LATENCY_BOUND,
                }
            )
    return out


#: Options whose values are this machine's (a kubeconfig's path, process ids): a command
#: records them as these names.
MACHINE_VALUES = {"--kubeconfig": "KUBECONFIG", "--server-pids": "PIDS"}


def measured_args(argv: list[str]) -> list[str]:
    """``argv`` without ``--note`` and its text (an annotation, recorded on its own), the
    values of :data:`MACHINE_VALUES`' options replaced by their names."""
    out: list[str] = []
    skip = False
    placeholder = ""
    for arg in argv:
        name, eq, _ = arg.partition("=")
        if skip:
            skip = False
        elif placeholder:
            out.append(placeholder)
            placeholder = ""
        elif arg == "--note":
            skip = True
        elif name == "--note" and eq:
            continue
        elif name in MACHINE_VALUES:
            out.append(f"{name}={MACHINE_VALUES[name]}" if eq else arg)
            placeholder = "" if eq else MACHINE_VALUES[name]
        else:
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
                "pipeline_priority": args.pipeline_priority,
                "uids": uids,
            }
            row = await run_child(target, cfg, args)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    server, populated, rows = await measure_all(args)
    pin: pinning.Pinning | None = args.pinning
    return {
        "command": "python bench/staleness_bench.py " + shlex.join(measured_args(args.argv)),
        "machine": machine_info(),
        "server": server,
        "pinning": {
            **(pin.as_dict() if pin else {"informer_cpu": None, "server_cpus": None}),
            "server_pids": args.server_pid_list,
        },
        "rate": args.rate,
        "duration": args.duration,
        "readers": args.reader_counts,
        "compact": args.compact,
        "pipeline_priority": args.pipeline_priority,
        "note": args.note,
        "populated": populated,
        "rows": rows,
        "targets": targets(rows),
    }


async def measure_all(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Each N on a fresh target (KubeSim's process, or a fresh namespace of the real
    server), populated unpinned, then measured pinned (with ``--informer-cpu``: this
    process, the writer, KubeSim's process and ``--server-pids`` off the informer's CPU,
    given their CPUs back after): the server's description, what was populated (with how
    many server-side threads were pinned), the rows."""
    pin: pinning.Pinning | None = args.pinning
    off_informer = pin.server if pin else None
    server: dict[str, Any] = {"kind": "kubesim"}
    rows: list[dict[str, Any]] = []
    populated = []
    for n in [int(x) for x in args.pods.split(",")]:
        owners = max(1, n // 1000)
        if args.kubeconfig:
            async with realserver.RealServer(
                args.kubeconfig, patch=args.patch, server_pids=args.server_pid_list
            ) as real:
                made = await real.populate(owners, n // owners)
                server = {"kind": "kube-apiserver", "version": real.version, "patch": args.patch}
                pids = [os.getpid(), real.writer_pid, *args.server_pid_list]
                with pinning.pinned(pids, off_informer) as threads:
                    populated.append(
                        {
                            "pods": made["pods"],
                            "seconds": round(made["seconds"], 1),
                            "namespace": real.namespace,
                            "server_side_threads_pinned": threads,
                        }
                    )
                    target = ServerTarget(real)
                    rows += await measure_pods(target, made["pods"], real.owner_uids(), args)
            if real.left_behind:
                server.setdefault("left_behind", []).append(real.left_behind)
            continue
        async with SimProcess(history_size=max(args.history, int(args.rate * 40))) as sim:
            made = await sim.populate(owners, n // owners, namespaces=1, nodes=100)
            sim_stats = await sim.stats()
            pids = [os.getpid(), sim.pid, *args.server_pid_list]
            with pinning.pinned(pids, off_informer) as threads:
                populated.append(
                    {
                        "pods": made["pods"],
                        "seconds": round(made["seconds"], 1),
                        "sim_rss_bytes": sim_stats["rss_bytes"],
                        "server_side_threads_pinned": threads,
                    }
                )
                uids = owner_uids(owners, 1)
                rows += await measure_pods(SimTarget(sim), made["pods"], uids, args)
    return server, populated, rows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pods", default="50000,200000", help="comma-separated N")
    p.add_argument("--rate", type=float, default=100.0, help="writes (PATCHes) per second")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load per run")
    p.add_argument("--readers", default="4", help="comma-separated reader counts (0: the none run)")
    p.add_argument(
        "--modes",
        default="none,index,scan,chunks",
        help="comma-separated reader patterns: none, index, scan, chunks, mixed (every "
        "pattern in one run)",
    )
    p.add_argument("--pipelines", default="thread,loop")
    p.add_argument(
        "--compact", action="store_true", help="the informer in compact mode (compact=True)"
    )
    p.add_argument(
        "--pipeline-priority",
        type=int,
        metavar="N",
        help="run the informer's pipeline thread at real-time priority N "
        "(ProcessSettings(pipeline_priority=N): needs CAP_SYS_NICE or RLIMIT_RTPRIO)",
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
    """The options, checked: ``--modes`` (of :data:`MODES`), ``reader_counts`` (ints >= 0),
    ``server_pid_list``, ``pinning`` (:func:`pinning.plan`; None without ``--informer-cpu``);
    ``--server-pids`` needs ``--informer-cpu`` (the server goes to the CPUs it leaves)."""
    p = parser()
    args = p.parse_args(argv)
    args.argv = list(argv)
    try:
        args.reader_counts = [int(x) for x in args.readers.split(",") if x.strip()]
        if not args.reader_counts or min(args.reader_counts) < 0:
            raise ValueError(f"--readers {args.readers!r}: counts >= 0")
        unknown = set(args.modes.split(",")) - set(MODES)
        if unknown:
            raise ValueError(f"--modes {args.modes!r}: each of {', '.join(MODES)}")
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
