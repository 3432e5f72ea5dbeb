"""A Manager with 1, 4 and 16 informers: threads, idle CPU, RSS, connections, staleness.

    python bench/manager_bench.py --checkout /work/before --checkout . \\
        --json bench/results/manager.json

Issue 25 replaces one pipeline thread, event loop and HTTP session per informer with one
of each per factory; this measures what that costs or saves, for several checkouts of the
library in one run (``--checkout``, repeatable; default this one), so that the ratio
between them is read against the run-to-run spread on a shared, noisy machine.

KubeSim runs in its own process (always from this checkout) with ``--pods``
StatefulSet-shaped pods (``--per-owner`` per owner, over ``--namespaces`` namespaces) and
``--objects`` objects of each other kind. For each repeat, informer count and checkout, in
that nesting (the checkouts alternate: A B A B), a fresh informer process
(bench/_managerchild.py, the checkout first on its PYTHONPATH, with its kubesim/src if it
has one) builds ``Manager(api_client)`` with N informers, runs it until every informer
synced, and then measures:

* ``sync_seconds``: ``manager.run()`` starting -> every informer synced;
* ``rss_bytes``: the process's RSS after the sync (after a gc);
* ``idle_cpu_percent``: the process's CPU seconds over ``--idle`` seconds with no reader
  and no write, as a percentage of one core;
* ``threads``, ``os_threads``: ``threading.active_count()`` and the kernel's count
  (/proc/self/status) at the end of that window;
* ``tcp_connections``: its established TCP connections to the sim then;
* ``staleness_p50``, ``staleness_p99`` (and ``staleness_max``): ``--readers`` readers
  scan every pod of the pods informer without yielding, on the Manager's loop, for
  ``--duration`` seconds while the sim makes ``--rate`` kubelet-like status writes per
  second; per pod change, the sim's commit (its PATCH) -> the first snapshot the pods
  informer published holding it (``Informer.on_publish``; both clocks CLOCK_MONOTONIC);
* ``read_p99``, ``reads``, ``load_cpu_percent``: the readers' scan time, their count and
  the process's CPU during that load.

The N informers are what a database or message-queue operator runs (see
bench/_operator_kinds.py): pods (all namespaces, the load and the readers' target), then
StatefulSets, Services, ConfigMaps (N = 4), then Secrets, ServiceAccounts, PVCs,
PodDisruptionBudgets, Roles, RoleBindings, EndpointSlices, Jobs, Leases, Events, Nodes
and Namespaces (N = 16). Distinct kinds, not one kind in N namespaces: an operator's
informer count grows with the kinds it owns, the per-informer cost the refactor removes
does not depend on the kind, and the load stays on the one pods informer the readers scan
while every other informer holds real objects and an open watch.

The JSON holds the machine, the options, the checkouts (path, commit), one row per run
and, per (checkout, N), each figure's median, min and max over the repeats (``summary``),
the ratio of each checkout's medians to the first checkout's (``ratios``) and each
figure's largest run-to-run spread, (max - min) / median over the repeats of one
configuration (``spread``). The markdown it prints is bench/render_results.py's section.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp

from aioinformer._harness.contention import percentile, staleness_of
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, asker

HERE = Path(__file__).resolve().parent
CHILD = HERE / "_managerchild.py"
TOKEN_ENV = "AIOINFORMER_MANAGER_TOKEN"
ANSWER_TIMEOUT = 600.0  # seconds the informer process may take to answer one message

FIGURES = (
    "threads",
    "os_threads",
    "idle_cpu_percent",
    "rss_bytes",
    "tcp_connections",
    "sync_seconds",
    "staleness_p50",
    "staleness_p99",
    "read_p99",
    "load_cpu_percent",
)
"""The figures summarised per (checkout, N), compared between checkouts, and spread."""


def sibling(name: str) -> ModuleType:
    """A module of bench/ by its file (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


kinds = sibling("_operator_kinds")
staleness_bench = sibling("staleness_bench")  # its child's protocol end and --note handling


# -- checkouts ------------------------------------------------------------------------------


def describe_checkout(path: Path) -> dict[str, Any]:
    """Path, commit (with ``+dirty`` for uncommitted changes to tracked files) and whether
    KubeSim is a distribution of its own there (kubesim/src)."""
    if not (path / "aioinformer" / "__init__.py").is_file():
        raise SystemExit(f"--checkout {path}: no aioinformer package there")

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=10", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    return {
        "path": str(path),
        "commit": commit,
        "kubesim_src": (path / "kubesim" / "src").is_dir(),
    }


def label_checkouts(checkouts: list[dict[str, Any]]) -> None:
    """Give each checkout a short, unique ``label``: its directory's name, then its index."""
    seen: set[str] = set()
    for i, c in enumerate(checkouts):
        label = Path(c["path"]).name or c["path"]
        c["label"] = label if label not in seen else f"{label}#{i + 1}"
        seen.add(c["label"])


def child_env(checkout: dict[str, Any], token: str) -> dict[str, str]:
    """The informer process's environment: the checkout (and its kubesim/src) alone on
    PYTHONPATH, ahead of any installed copy."""
    path = [checkout["path"]]
    if checkout["kubesim_src"]:
        path.append(str(Path(checkout["path"]) / "kubesim" / "src"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), TOKEN_ENV: token}


# -- the cluster ----------------------------------------------------------------------------


async def create_objects(
    sim: SimProcess, n_kinds: int, per_kind: int, namespaces: list[str]
) -> dict[str, int]:
    """``per_kind`` objects of each of the first ``n_kinds`` kinds after pods, by POST."""
    made: dict[str, int] = {}
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession(sim.url, headers=headers) as http:
        for kind in kinds.KINDS[1:n_kinds]:
            for i in range(per_kind):
                ns = namespaces[i % len(namespaces)]
                body = kinds.body(kind, ns, i)
                async with http.post(kinds.collection_path(kind, ns), json=body) as resp:
                    if resp.status != 201:
                        raise RuntimeError(f"{kind.plural} {i}: {resp.status} {await resp.text()}")
            made[kind.plural] = per_kind
    return made


# -- one run --------------------------------------------------------------------------------


async def run_child(
    sim: SimProcess, checkout: dict[str, Any], n: int, rep: int, args: argparse.Namespace
) -> dict[str, Any]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",  # not bench/ first on sys.path: the checkout's aioinformer and nothing else
        str(CHILD),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=child_env(checkout, sim.token),
        limit=256 << 20,
    )
    ask = asker(child, f"{checkout['label']}, {n} informers", ANSWER_TIMEOUT)

    specs = [[k.group_version, k.plural] for k in kinds.KINDS[:n]]
    try:
        await sim.churn(0)
        ready = (await ask({"url": sim.url, "informers": specs, "readers": args.readers}))["ready"]
        if not Path(ready["aioinformer"]).is_relative_to(checkout["path"]):
            raise RuntimeError(
                f"the informer process imported {ready['aioinformer']}, not {checkout['path']}"
            )
        synced = await ask({"op": "sync"})
        empty = [
            plural for (_, plural), count in zip(specs, synced["objects"], strict=True) if not count
        ]
        if empty:
            raise RuntimeError(f"informers that synced no object: {empty}")
        idle = await ask({"op": "idle", "seconds": args.idle})
        await sim.record()
        load_1m = os.getloadavg()[0]  # the machine is shared: how busy it was
        await sim.churn(args.rate)
        loaded = await ask({"op": "load", "seconds": args.duration})
        await sim.churn(0)
        commits = await sim.commits()
        target = max((rv for rv, _ in commits), default=0)
        reached = (await ask({"op": "wait_rv", "rv": target, "timeout": 120}))["reached"]
        raw = await ask({"op": "result"})
    finally:
        await staleness_bench.end_child(child)
    in_load = [(rv, t) for rv, t in commits if loaded["t_start"] <= t <= loaded["t_end"]]
    stale = [s for _, s in staleness_of(in_load, raw["publishes"])]
    lat = raw["latencies"]
    return {
        "checkout": checkout["label"],
        "informers": n,
        "repeat": rep,
        "objects": synced["objects"],
        "sync_seconds": round(synced["synced"], 4),
        "rss_bytes": synced["rss_bytes"],
        "rss_ready_bytes": ready["rss_bytes"],
        "threads_ready": ready["threads"],
        "threads": idle["threads"],
        "os_threads": idle["os_threads"],
        "thread_names": idle["names"],
        "tcp_connections": idle["tcp"],
        "idle_seconds": round(idle["seconds"], 3),
        "idle_cpu_seconds": round(idle["cpu_seconds"], 4),
        "idle_cpu_percent": round(100 * idle["cpu_seconds"] / idle["seconds"], 3),
        "switch_interval": idle["switch_interval"],
        "changes": len(in_load),
        "published_all": reached,
        "staleness_p50": round(percentile(stale, 0.5), 5),
        "staleness_p99": round(percentile(stale, 0.99), 5),
        "staleness_max": round(max(stale, default=0.0), 5),
        "reads": len(lat),
        "read_p50": round(percentile(lat, 0.5), 5),
        "read_p99": round(percentile(lat, 0.99), 5),
        "load_cpu_percent": round(
            100 * loaded["cpu_seconds"] / (loaded["t_end"] - loaded["t_start"]), 3
        ),
        "fifo_peak": raw["stats"]["fifo_peak"],
        "relists": raw["stats"]["relists"],
        "pipeline": raw["stats"]["pipeline"],
        "load_1m": round(load_1m, 2),
    }


# -- figures across runs --------------------------------------------------------------------


def summarise(rows: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    """Medians, ranges, ratios to the first checkout, and the run-to-run spread."""
    summary = []
    for n in sorted({r["informers"] for r in rows}):
        for label in labels:
            runs = [r for r in rows if r["informers"] == n and r["checkout"] == label]
            if not runs:
                continue
            figures = {}
            for fig in FIGURES:
                values = [float(r[fig]) for r in runs]
                figures[fig] = {
                    "median": statistics.median(values),
                    "min": min(values),
                    "max": max(values),
                }
            summary.append({"checkout": label, "informers": n, "runs": len(runs),
                            "figures": figures})  # fmt: skip
    by = {(s["checkout"], s["informers"]): s["figures"] for s in summary}
    ratios = []
    for s in summary:
        base = by.get((labels[0], s["informers"]))
        if s["checkout"] == labels[0] or base is None:
            continue
        ratios.append(
            {
                "informers": s["informers"],
                "checkout": s["checkout"],
                "baseline": labels[0],
                "figures": {
                    fig: (
                        round(s["figures"][fig]["median"] / base[fig]["median"], 4)
                        if base[fig]["median"]
                        else None
                    )
                    for fig in FIGURES
                },
            }
        )
    spread = {}
    for fig in FIGURES:
        spans = [
            (f["max"] - f["min"]) / f["median"]
            for s in summary
            if s["runs"] > 1 and (f := s["figures"][fig])["median"]
        ]
        spread[fig] = round(max(spans), 4) if spans else None
    return {"summary": summary, "ratios": ratios, "spread": spread}


async def main_async(
    args: argparse.Namespace, argv: list[str], checkouts: list[dict[str, Any]], counts: list[int]
) -> dict[str, Any]:
    owners = max(1, args.pods // args.per_owner)
    rows: list[dict[str, Any]] = []
    async with SimProcess() as sim:
        made = await sim.populate(owners, args.pods // owners, namespaces=args.namespaces)
        namespaces = [f"sts-ns-{i}" for i in range(min(args.namespaces, owners))]
        objects = await create_objects(sim, counts[-1], args.objects, namespaces)
        for rep in range(args.repeat):
            for n in counts:
                for checkout in checkouts:
                    row = await run_child(sim, checkout, n, rep, args)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    rows.append(row)
        sim_stats = await sim.stats()
    return {
        "command": "python bench/manager_bench.py "
        + shlex.join(staleness_bench.measured_args(argv)),
        "note": args.note,
        "machine": machine_info(),
        "options": {
            "pods": made["pods"],
            "per_owner": args.pods // owners,
            "namespaces": len(namespaces),
            "objects": objects,
            "informers": counts,
            "readers": args.readers,
            "rate": args.rate,
            "idle": args.idle,
            "duration": args.duration,
            "repeat": args.repeat,
        },
        "populate_seconds": round(made["seconds"], 1),
        "sim_rss_bytes": sim_stats["rss_bytes"],
        "checkouts": checkouts,
        "rows": rows,
        **summarise(rows, [c["label"] for c in checkouts]),
    }


def check_finite(result: dict[str, Any]) -> None:
    """Every summarised figure of every row is a finite number (a broken run fails loudly)."""
    for row in result["rows"]:
        for fig in FIGURES:
            if not (isinstance(row[fig], (int, float)) and math.isfinite(row[fig])):
                raise RuntimeError(f"{row['checkout']}, {row['informers']} informers: {fig}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(
        prog="python bench/manager_bench.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--checkout", action="append", metavar="PATH",
                   help="a checkout of aioinformer to measure (repeatable; default: this one)")  # fmt: skip
    p.add_argument("--informers", default="1,4,16", help="comma-separated informer counts")
    p.add_argument("--repeat", type=int, default=2, help="runs of each configuration")
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--per-owner", type=int, default=1000, help="pods per StatefulSet")
    p.add_argument("--namespaces", type=int, default=4, help="namespaces of the workload")
    p.add_argument("--objects", type=int, default=100, help="objects of each other kind")
    p.add_argument("--readers", type=int, default=4, help="full-scan readers of the pods")
    p.add_argument("--rate", type=float, default=100.0, help="sim status writes per second")
    p.add_argument("--idle", type=float, default=10.0, help="seconds of the idle window")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load per run")
    p.add_argument("--note", default="", help="said with the results (what the run compares)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    checkouts = [describe_checkout(Path(c).resolve()) for c in args.checkout or [HERE.parent]]
    label_checkouts(checkouts)
    counts = sorted({int(x) for x in args.informers.split(",")})
    if counts[0] < 1 or counts[-1] > len(kinds.KINDS):
        raise SystemExit(f"--informers: between 1 and {len(kinds.KINDS)}")
    result = asyncio.run(main_async(args, argv, checkouts, counts))
    check_finite(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(sibling("render_results").manager_section(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
