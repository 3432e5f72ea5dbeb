"""aioinformer next to the caches Python users have today, on one KubeSim stream.

Peers: ``aioinformer-snapshot`` (the library's informer) and ``aioinformer-locked`` (the same
pipeline over the harness's lock-based baseline store; readers of both use the ``controller``
index), ``official-sharedinformer`` (``kubernetes.informer.
SharedInformer``, thread-based; reader threads ``cache.list()`` and keep one owner's pods)
and ``asyncio-watch-loop`` (kubernetes_asyncio: list with the typed API into a dict, then
``watch.Watch().stream`` from the list's RV, relist on 410; reader tasks scan the dict).
See bench/_peerchild.py for each peer's code.

For each N in --sizes, KubeSim (its own process) is populated once with N StatefulSet-like
pods (~4-5 KB each, --per-owner pods per owner); then each peer runs in a fresh process of
its own, one after the other, through four phases:

1. **sync**: start -> the cache holds N pods. RSS is read before the start (imports done,
   client built) and after the sync (after a garbage collection): the difference over N is
   the bytes per cached pod.
2. **load**: K readers (--readers) fetch one random owner's pods back to back while the sim
   makes --rate kubelet status writes/s for --duration s. Staleness of each change = the
   peer's apply time (the cache holds it) - the sim's commit time (one system-wide
   monotonic clock); changes still unapplied when the drain gives up count until then.
3. **backlog** (sustained events/s, readers off): the peer process is frozen (SIGSTOP) while
   the sim commits --backlog status writes as fast as it can (the watch's server side stops
   at the socket and keeps its cursor in the history, which is sized to hold them); then it
   is thawed (SIGCONT) and events/s = backlog events / (time the peer applied the last one -
   thaw time). Every peer consumes the same replay at its own speed, so the figure is not
   capped by the sim's write rate (the load phase's ``load_applied_rate`` is).
4. **result**: the apply log and reader latencies go to the parent, which computes figures.

Memory guard: before each (peer, N) the peer's peak RSS is projected: the largest smaller N
it ran at gives its peak bytes per pod (peak RSS - RSS before sync, over N); without one,
PRIOR_PEAK_BYTES_PER_POD (DESIGN.md's retained bytes per pod x 2 for the list's transient
copies). Over --max-rss the run is skipped and recorded with the reason and the projection.

JSON (``--json``): ``{"options", "machine", "sims": [{"pods", "populate_seconds",
"sim_rss_bytes"}], "results": [...]}``, one result per (peer, N) with RESULT_KEYS:

* ``peer``, ``pods``; ``skipped`` (null, or why it did not run); ``projected_peak_rss_bytes``;
* ``sync_seconds``; ``rss_before_bytes``, ``rss_synced_bytes``, ``rss_per_pod_bytes``,
  ``peak_rss_bytes`` (the process's peak, end of run);
* ``events_per_second`` (backlog replay), ``backlog_events``, ``backlog_seconds``;
  ``sim_replay_rate``: events/s the sim serves the same replay to a client that only
  splits lines (measured by the parent right after): the ceiling any peer could reach;
* ``load_offered_rate``, ``load_sim_rate`` (changes/s the sim committed),
  ``load_applied_rate`` (changes/s the peer had applied by the end of the load),
  ``load_changes``, ``load_caught_up`` (whether it caught up after the load);
* ``staleness_p50``, ``staleness_p99``, ``staleness_max`` (seconds);
* ``reader_calls``, ``reader_latency_p50``, ``reader_latency_p99`` (seconds).

Skipped runs carry null for every measured key.

    python bench/peers.py --json bench/results/peers.json --plot bench/results/peers.png

``--prior PATH`` (an earlier report) lets a later run add or redo some (peer, N) — e.g. the
200k runs with a larger ``--max-rss`` on an otherwise idle machine — projecting memory from
the earlier measurements and keeping the earlier runs it does not redo.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich.console import Console
from rich.table import Table

from aioinformer._harness.contention import percentile
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, SimProcessError, spawn_python
from aioinformer._harness.workload import statefulset_uid

PEERS = (
    "aioinformer-snapshot",
    "aioinformer-locked",
    "official-sharedinformer",
    "asyncio-watch-loop",
)
"""Every peer, in the order they run; ratios are against the first."""

PRIOR_PEAK_BYTES_PER_POD = {
    "aioinformer-snapshot": 20_000,
    "aioinformer-locked": 20_000,
    "official-sharedinformer": 202_000,
    "asyncio-watch-loop": 92_000,
}
"""Projection used before a peer has run at a smaller N: DESIGN.md's retained bytes per
3.8 KB pod (official 101 KB, kubernetes_asyncio models 46 KB; aioinformer's ~2 KB objects
rounded up to 10 KB) x 2 for the transient copies of the initial list."""

MEASURED_KEYS = (
    "sync_seconds",
    "rss_before_bytes",
    "rss_synced_bytes",
    "rss_per_pod_bytes",
    "peak_rss_bytes",
    "events_per_second",
    "backlog_events",
    "backlog_seconds",
    "sim_replay_rate",
    "load_offered_rate",
    "load_sim_rate",
    "load_applied_rate",
    "load_changes",
    "load_caught_up",
    "staleness_p50",
    "staleness_p99",
    "staleness_max",
    "reader_calls",
    "reader_latency_p50",
    "reader_latency_p99",
)
"""The keys a run measures (null when skipped)."""

RESULT_KEYS = ("peer", "pods", "skipped", "projected_peak_rss_bytes", *MEASURED_KEYS)
"""Every key of one JSON result, as documented in the module docstring."""

TOKEN_ENV = "AIOINFORMER_PEER_TOKEN"
_BENCH_ROOT = str(Path(__file__).resolve().parent.parent)


def _python_path() -> str:
    """The child's PYTHONPATH: this checkout first, then the caller's."""
    return os.pathsep.join(p for p in (_BENCH_ROOT, os.environ.get("PYTHONPATH")) if p)


def parse_bytes(text: str) -> int:
    """``8G``, ``512M``, ``1.5GiB`` or a plain number of bytes."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    return int(float(t[:-1] if scale > 1 else t) * scale)


def project_peak(peer: str, pods: int, done: list[dict[str, Any]]) -> int:
    """The peer's projected peak RSS at ``pods``: from its run at the largest smaller N,
    else from PRIOR_PEAK_BYTES_PER_POD (plus a 100 MiB interpreter baseline)."""
    runs = [r for r in done if r["peer"] == peer and r["skipped"] is None and r["pods"] < pods]
    if not runs:
        return (100 << 20) + PRIOR_PEAK_BYTES_PER_POD[peer] * pods
    r = max(runs, key=lambda r: r["pods"])
    per_pod = max(0, r["peak_rss_bytes"] - r["rss_before_bytes"]) / r["pods"]
    return int(r["rss_before_bytes"] + per_pod * pods)


class PeerProcess:
    """One peer's child process (bench/_peerchild.py) and its JSON-lines conversation."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, sim: SimProcess, cfg: dict[str, Any]) -> dict[str, Any]:
        self.proc = await spawn_python(
            "bench._peerchild", env={TOKEN_ENV: sim.token, "PYTHONPATH": _python_path()}
        )
        await self.send({"peer": self.peer, "url": sim.url, **cfg})
        return (await self.until("ready"))["ready"]

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()

    async def until(self, key: str) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            code = await self.proc.wait()
            raise SimProcessError(f"{self.peer}: the peer process exited (status {code})")
        msg: dict[str, Any] = orjson.loads(line)
        if key not in msg:
            raise SimProcessError(f"{self.peer}: expected {key!r}, got {sorted(msg)}")
        return msg

    async def call(self, key: str, **msg: Any) -> dict[str, Any]:
        await self.send(msg)
        return await self.until(key)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    async def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except (TimeoutError, asyncio.CancelledError):
            proc.kill()
            await proc.wait()


def staleness(
    commits: list[tuple[int, float]], applies: list[tuple[float, int]], t_final: float
) -> list[float]:
    """Per commit: first apply covering its RV - commit time; unapplied: t_final - commit."""
    rvs = [rv for _, rv in applies]
    out = []
    for rv, committed in commits:
        i = bisect.bisect_left(rvs, rv)
        applied = applies[i][0] if i < len(applies) else t_final
        out.append(max(0.0, applied - committed))
    return out


async def run_peer(
    sim: SimProcess, peer: str, pods: int, opt: argparse.Namespace
) -> dict[str, Any]:
    """One peer at one N: sync, load, backlog; its figures (RESULT_KEYS)."""
    owners = max(1, pods // opt.per_owner)
    uids = [statefulset_uid(f"sts-ns-{o % 20}", f"sts-{o}") for o in range(owners)]
    child = PeerProcess(peer)
    try:
        ready = await child.start(sim, {"expect": pods, "uids": uids, "readers": opt.readers})
        synced = await child.call("synced", op="sync")

        # load: readers + offered rate
        await sim.record()
        await child.call("readers", op="readers", on=True)
        await sim.churn(opt.rate)
        t_start = time.monotonic()
        await asyncio.sleep(opt.duration)
        await sim.churn(0)
        t_end = time.monotonic()
        target = (await sim.stats())["rv"]
        await child.call("readers", op="readers", on=False)
        reached = (await child.call("reached", op="wait_rv", rv=target, timeout=opt.drain_timeout))[
            "reached"
        ]
        t_final = time.monotonic()
        load_commits = [c for c in await sim.commits() if t_start <= c[1] <= t_end]

        # backlog: frozen peer, replay
        backlog = await backlog_phase(sim, child, opt) if reached is not None else None
        raw = await child.call("applies", op="result")
    finally:
        await child.close()
    replay = await sim_replay_rate(sim, *backlog[2:]) if backlog is not None else 0.0
    applies = [(float(t), int(rv)) for t, rv in raw["applies"]]
    stale = staleness(load_commits, applies, t_final)
    span = max(1e-9, t_end - t_start)
    at_end = [rv for t, rv in applies if t <= t_end]
    rv_at_end = max(at_end, default=0)
    latencies = raw["latencies"]
    rss_growth = synced["rss_bytes"] - ready["rss_bytes"]
    events, seconds = backlog[:2] if backlog is not None else (0, 0.0)
    return {
        "peer": peer,
        "pods": synced["objects"],
        "skipped": None,
        "projected_peak_rss_bytes": None,
        "sync_seconds": synced["synced"],
        "rss_before_bytes": ready["rss_bytes"],
        "rss_synced_bytes": synced["rss_bytes"],
        "rss_per_pod_bytes": rss_growth / max(1, pods),
        "peak_rss_bytes": max(synced["peak_rss_bytes"], raw["peak_rss_bytes"]),
        "events_per_second": events / seconds if seconds > 0 else 0.0,
        "backlog_events": events,
        "backlog_seconds": seconds,
        "sim_replay_rate": replay,
        "load_offered_rate": opt.rate,
        "load_sim_rate": len(load_commits) / span,
        "load_applied_rate": sum(1 for rv, _ in load_commits if rv <= rv_at_end) / span,
        "load_changes": len(load_commits),
        "load_caught_up": reached is not None,
        "staleness_p50": percentile(stale, 0.50),
        "staleness_p99": percentile(stale, 0.99),
        "staleness_max": max(stale, default=0.0),
        "reader_calls": len(latencies),
        "reader_latency_p50": percentile(latencies, 0.50),
        "reader_latency_p99": percentile(latencies, 0.99),
    }


async def backlog_phase(
    sim: SimProcess, child: PeerProcess, opt: argparse.Namespace
) -> tuple[int, float, int, int] | None:
    """Freeze the peer, commit --backlog changes, thaw it: (events, seconds to apply them,
    RV before, count), or None if it did not apply them within --drain-timeout."""
    rv_from = await sim.record()
    child.signal(signal.SIGSTOP)
    try:
        w0 = (await sim.stats())["churn_writes"]
        await sim.churn(opt.backlog_rate)
        written = 0
        while written < opt.backlog:  # poll the sim's counter (it is in another process)
            await asyncio.sleep(0.02)
            written = (await sim.stats())["churn_writes"] - w0
        await sim.churn(0)
        target = (await sim.stats())["rv"]
        await asyncio.sleep(0.1)  # the sim's commit recorder polls every 50 ms
        events = len(await sim.commits())
    finally:
        child.signal(signal.SIGCONT)
    t_thaw = time.monotonic()
    reached = (await child.call("reached", op="wait_rv", rv=target, timeout=opt.drain_timeout))[
        "reached"
    ]
    if reached is None:
        return None
    return events, max(1e-9, reached - t_thaw), rv_from, events


async def sim_replay_rate(sim: SimProcess, rv_from: int, events: int) -> float:
    """The server's side of the backlog: pod events/s a client that only splits lines gets
    when it watches the same replay from ``rv_from`` (the ceiling any peer could reach)."""
    headers = {"Authorization": f"Bearer {sim.token}"}
    params = {"watch": "1", "resourceVersion": str(rv_from), "timeoutSeconds": "600"}
    async with aiohttp.ClientSession(headers=headers) as session:
        t0 = time.monotonic()
        async with session.get(f"{sim.url}/api/v1/pods", params=params) as resp:
            n = 0
            async for _line in resp.content:
                n += 1
                if n >= events:
                    break
        return n / max(1e-9, time.monotonic() - t0)


def skipped(peer: str, pods: int, reason: str, projected: int | None) -> dict[str, Any]:
    return {
        "peer": peer,
        "pods": pods,
        "skipped": reason,
        "projected_peak_rss_bytes": projected,
        **dict.fromkeys(MEASURED_KEYS),
    }


async def run(opt: argparse.Namespace, console: Console) -> dict[str, Any]:
    task = asyncio.current_task()
    assert task is not None  # SIGTERM (e.g. timeout): thaw and end the children on the way out
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    prior: dict[str, Any] = opt.prior_report
    results: list[dict[str, Any]] = []
    sims = []
    for pods in opt.sizes:
        owners = max(1, pods // opt.per_owner)
        history = max(100_000, 2 * opt.backlog + int(3 * opt.rate * opt.duration))
        async with SimProcess(history_size=history) as sim:
            console.print(f"[bold]{pods:,} pods[/]: populating KubeSim ...")
            made = await sim.populate(owners, pods // owners, namespaces=min(20, owners))
            sims.append(
                {
                    "pods": made["pods"],
                    "populate_seconds": made["seconds"],
                    "sim_rss_bytes": (await sim.stats())["rss_bytes"],
                }
            )
            for peer in opt.peers:
                projected = project_peak(peer, made["pods"], results + prior["results"])
                if projected > opt.max_rss:
                    reason = (
                        f"projected peak RSS {projected / 2**30:.1f} GiB > --max-rss "
                        f"{opt.max_rss / 2**30:.1f} GiB"
                    )
                    console.print(f"  {peer}: skipped ({reason})")
                    results.append(skipped(peer, made["pods"], reason, projected))
                    continue
                console.print(f"  {peer}: running (projected peak {projected / 2**20:,.0f} MiB)")
                r = await run_peer(sim, peer, made["pods"], opt)
                r["projected_peak_rss_bytes"] = projected
                results.append(r)
                console.print(
                    f"  {peer}: sync {r['sync_seconds']:.2f} s, "
                    f"{r['rss_per_pod_bytes'] / 1000:.1f} KB/pod, "
                    f"{r['events_per_second']:,.0f} events/s"
                )
    return {
        "options": {k: v for k, v in vars(opt).items() if k != "prior_report"},
        "machine": machine_info(),
        "sims": sims + [x for x in prior["sims"] if x["pods"] not in opt.sizes],
        "results": carry_over(prior["results"], results),
    }


def carry_over(prior: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This run's results plus the earlier (--prior) runs of (peer, N) it did not run,
    ordered by N then peer."""
    ran = {(r["peer"], r["pods"]) for r in now}
    merged = [r for r in prior if (r["peer"], r["pods"]) not in ran] + now
    return sorted(merged, key=lambda r: (r["pods"], PEERS.index(r["peer"])))


def _ratio(value: float | None, base: float | None) -> str:
    if not value or not base:
        return "-"
    return f"{value / base:,.1f}x"


def _fmt(r: dict[str, Any], key: str, spec: str, scale: float = 1.0) -> str:
    v = r.get(key)
    return "-" if v is None else format(v * scale if scale != 1.0 else v, spec)


def table(report: dict[str, Any]) -> Table:
    """One row per (N, peer), with its ratios to aioinformer-snapshot at the same N."""
    t = Table(
        title="peers: one KubeSim stream, one process per peer (ratios vs aioinformer-snapshot)"
    )
    for name in (
        "pods",
        "peer",
        "sync s",
        "KB/pod",
        "peak MiB",
        "events/s",
        "sim replay/s",
        "load applied/s",
        "stale p50 ms",
        "stale p99 ms",
        "reads",
        "sync / snap",
        "KB/pod / snap",
        "snap events/s / this",
    ):
        t.add_column(name, justify="left" if name == "peer" else "right")
    base = {r["pods"]: r for r in report["results"] if r["peer"] == PEERS[0] and not r["skipped"]}
    for r in report["results"]:
        b = base.get(r["pods"], {})
        if r["skipped"]:
            t.add_row(f"{r['pods']:,}", r["peer"], f"skipped: {r['skipped']}", *[""] * 11)
            continue
        t.add_row(
            f"{r['pods']:,}",
            r["peer"],
            _fmt(r, "sync_seconds", ".2f"),
            _fmt(r, "rss_per_pod_bytes", ".1f", 1e-3),
            _fmt(r, "peak_rss_bytes", ",.0f", 2**-20),
            _fmt(r, "events_per_second", ",.0f"),
            _fmt(r, "sim_replay_rate", ",.0f"),
            _fmt(r, "load_applied_rate", ",.0f"),
            _fmt(r, "staleness_p50", ",.1f", 1e3),
            _fmt(r, "staleness_p99", ",.1f", 1e3),
            _fmt(r, "reader_calls", ",d"),
            _ratio(r["sync_seconds"], b.get("sync_seconds")),
            _ratio(r["rss_per_pod_bytes"], b.get("rss_per_pod_bytes")),
            _ratio(b.get("events_per_second"), r["events_per_second"]),
        )
    return t


def plot(report: dict[str, Any], path: str) -> None:
    """Sync time, RSS per pod and events/s against N, one line per peer, log scales."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("sync_seconds", "initial sync (s)"),
        ("rss_per_pod_bytes", "RSS per cached pod (bytes)"),
        ("events_per_second", "backlog events/s"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(15, 4.5))
    for ax, (key, label) in zip(axes, panels, strict=True):
        for peer in PEERS:
            points = [
                (r["pods"], r[key])
                for r in report["results"]
                if r["peer"] == peer and not r["skipped"] and r[key]
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", label=peer)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pods")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python bench/peers.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--sizes", default="10000,50000,200000", help="comma-separated pod counts")
    p.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated, from {PEERS}")
    p.add_argument("--per-owner", type=int, default=1000, help="pods per StatefulSet-like owner")
    p.add_argument("--readers", type=int, default=4, help="readers during the load phase")
    p.add_argument("--rate", type=float, default=1000.0, help="sim writes/s in the load phase")
    p.add_argument("--duration", type=float, default=15.0, help="seconds of load")
    p.add_argument("--backlog", type=int, default=10_000, help="changes replayed to a frozen peer")
    p.add_argument("--backlog-rate", type=float, default=5000.0, help="sim writes/s for them")
    p.add_argument("--drain-timeout", type=float, default=300.0, help="longest catch-up wait")
    p.add_argument("--max-rss", type=parse_bytes, default=8 << 30, help="peak RSS budget (8G)")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.add_argument("--plot", metavar="PATH.png", help="write the plot (needs matplotlib)")
    p.add_argument(
        "--prior",
        metavar="PATH",
        help="an earlier --json: its runs project memory, and those not run again are kept",
    )
    opt = p.parse_args(argv)
    opt.sizes = [int(s) for s in opt.sizes.split(",") if s.strip()]
    opt.peers = [s.strip() for s in opt.peers.split(",") if s.strip()]
    opt.prior_report = {"results": [], "sims": []}
    if opt.prior:
        opt.prior_report = orjson.loads(Path(opt.prior).read_bytes())
    unknown = [x for x in opt.peers if x not in PEERS]
    if unknown:
        p.error(f"unknown peers {unknown}; choose from {PEERS}")
    return opt


def main(argv: list[str] | None = None) -> int:
    opt = parse_args(argv)
    console = Console()
    report = asyncio.run(run(opt, console))
    console.print(table(report))
    if opt.json:
        Path(opt.json).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
        console.print(f"report written to {opt.json}")
    if opt.plot:
        plot(report, opt.plot)
        console.print(f"plot written to {opt.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
