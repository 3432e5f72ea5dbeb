"""Write bench/RESULTS.md from the JSON the benchmark scripts wrote in bench/results/.

    python bench/render_results.py

Every figure in RESULTS.md comes from a results file (none is typed in); each section names
the command that produced its file, and the machine and package versions it ran on. A
section whose file is missing says so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aioinformer import WatchOptions

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms"


def ratio(a: float, b: float) -> str:
    return "n/a" if b == 0 else f"{a / b:.4f}"


def machine_line(machine: dict[str, Any]) -> str:
    packages = machine.get("packages") or machine.get("versions") or {}
    pkgs = ", ".join(f"{k} {v}" for k, v in packages.items() if v)
    mem = machine.get("memory_bytes", 0) / 2**30
    where = f" ({machine['platform']})" if machine.get("platform") else ""
    return (
        f"{machine.get('cpus')} CPUs, {mem:.0f} GiB, Python {machine.get('python')}{where}; {pkgs}"
    )


def contention_section(data: dict[str, Any]) -> list[str]:
    o = data["options"]
    out = [
        "## The contention scenario (bench/contention.py)",
        "",
        f"Command: `{data.get('command') or 'python bench/contention.py'}`",
        "",
        f"Machine: {machine_line(data.get('machine') or {})}",
        "",
        f"{data['pods']:,} pods ({o['owners']} owners x {o['pods_per_owner']}), "
        f"{o['readers']} readers per informer process, {o['rate']:.0f} kubelet status writes/s "
        f"offered for {o['duration']:.0f} s per configuration; KubeSim in its own process "
        f"(populated in {data['populate_seconds']:.0f} s, RSS "
        f"{data['sim_rss_bytes'] / 2**30:.2f} GiB). Staleness is per pod change: sim commit "
        "time -> first published cache state that contains it.",
        "",
        "| configuration | staleness p50 | p99 | max | FIFO peak | writer deltas/s | "
        "sim writes/s | reader p50 | reader p99 | reads | PodSet 409s on/off | "
        "NodeAgent extra pods on/off | operators converged | RSS | sync |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["results"]:
        c, e = r.get("conflicts_409") or {}, r.get("extra_pods") or {}
        out.append(
            f"| {r['config']} | {ms(r['staleness_p50'])} | {ms(r['staleness_p99'])} | "
            f"{ms(r['staleness_max'])} | {r['fifo_peak']:,} | {r['writer_throughput']:,.0f} | "
            f"{r['sim_rate']:,.0f} | {ms(r['reader_latency_p50'])} | "
            f"{ms(r['reader_latency_p99'])} | {r['reader_calls']:,} | "
            f"{c.get('podset/protected', '-')} / {c.get('podset/unprotected', '-')} | "
            f"{e.get('nodeagent/protected', '-')} / {e.get('nodeagent/unprotected', '-')} | "
            f"{r.get('operators_converged')} | {r['rss_bytes'] / 2**20:,.0f} MiB | "
            f"{r['sync_seconds']:.1f} s |"
        )
    if any("wire_p99" in r for r in data["results"]):
        out += [
            "",
            "Where the staleness goes: the wire part runs from the sim's commit to the "
            "informer's watcher reading the event (the sim's write path, the socket and the "
            "informer process's event loop), the informer part from there to the first "
            "published state that contains it (DeltaFIFO wait and store writer).",
            "",
            "| configuration | wire p50 | wire p99 | informer p50 | informer p99 |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {r['config']} | {ms(r['wire_p50'])} | {ms(r['wire_p99'])} | "
            f"{ms(r['informer_p50'])} | {ms(r['informer_p99'])} |"
            for r in data["results"]
            if "wire_p99" in r
        ]
    by = {r["config"]: r for r in data["results"]}
    base, ours = by.get("locked+scan"), by.get("snapshot+index")
    if base and ours:
        out += [
            "",
            "Targets (ratios from this run):",
            "",
            f"- staleness p99, snapshot+index / locked+scan = "
            f"{ratio(ours['staleness_p99'], base['staleness_p99'])} (target <= 0.01)",
            f"- FIFO peak, snapshot+index / locked+scan = "
            f"{ratio(ours['fifo_peak'], base['fifo_peak'])} (target <= 0.01)",
            f"- locked+scan reproduces the pathology: FIFO peak {base['fifo_peak']:,}, "
            f"staleness p99 {ms(base['staleness_p99'])} (expected: thousands, seconds)",
            f"- protected operators on the snapshot store: PodSet 409s "
            f"{(ours.get('conflicts_409') or {}).get('podset/protected', '-')}, NodeAgent extra "
            f"pods {(ours.get('extra_pods') or {}).get('nodeagent/protected', '-')} (target 0, 0)",
        ]
    if (RESULTS / "contention.png").exists():
        out += ["", "![FIFO depth and staleness over time](results/contention.png)"]
    return out


def peers_section(data: dict[str, Any]) -> list[str]:
    o = data["options"]
    out = [
        "## aioinformer next to its peers (bench/peers.py)",
        "",
        "Command: `python bench/peers.py --json bench/results/peers.json --plot "
        "bench/results/peers.png`"
        + (
            " (then the 200k runs again with `--prior` and a larger `--max-rss`)"
            if o.get("prior")
            else ""
        ),
        "",
        f"Machine: {machine_line(data.get('machine') or {})}",
        "",
        f"Load phase: {o['readers']} readers, {o['rate']:.0f} writes/s offered for "
        f"{o['duration']:.0f} s; events/s: a {o['backlog']:,}-change backlog replayed to the "
        "frozen-then-thawed peer (`sim_replay_rate` is the ceiling). Ratios are against "
        "aioinformer-snapshot at the same N (how many times slower, how much more memory, "
        "how many times fewer events/s).",
        "",
        "| pods | peer | sync | x slower | KB/pod | x more | events/s | x fewer | "
        "staleness p50 | p99 | reader p99 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ours = {
        r["pods"]: r
        for r in data["results"]
        if r["peer"] == "aioinformer-snapshot" and r["skipped"] is None
    }
    for r in data["results"]:
        if r["skipped"] is not None:
            out.append(f"| {r['pods']:,} | {r['peer']} | skipped: {r['skipped']} |||||||||")
            continue
        base = ours.get(r["pods"])
        x_sync = f"{r['sync_seconds'] / base['sync_seconds']:.1f}" if base else "-"
        x_mem = f"{r['rss_per_pod_bytes'] / base['rss_per_pod_bytes']:.1f}" if base else "-"
        x_ev = f"{base['events_per_second'] / r['events_per_second']:.1f}" if base else "-"
        out.append(
            f"| {r['pods']:,} | {r['peer']} | {r['sync_seconds']:.2f} s | {x_sync} | "
            f"{r['rss_per_pod_bytes'] / 1000:.1f} | {x_mem} | {r['events_per_second']:,.0f} | "
            f"{x_ev} | {ms(r['staleness_p50'])} | {ms(r['staleness_p99'])} | "
            f"{ms(r['reader_latency_p99'])} |"
        )
    out += [
        "",
        "Targets vs both peers at the largest N where they ran: initial sync >= 10x faster, "
        "RSS per pod <= 1/4, sustained events/s >= 20x.",
    ]
    if (RESULTS / "peers.png").exists():
        out += ["", "![sync time and memory per pod vs N](results/peers.png)"]
    return out


def soak_section(data: dict[str, Any]) -> list[str]:
    return [
        "## Memory under a steady stream (bench/soak.py)",
        "",
        f"Command: `python bench/soak.py --minutes {data['minutes']:.0f} --json "
        "bench/results/soak.json` (Python " + str(data.get("python")) + f", {data.get('when')})",
        "",
        f"{data['pods']:,} pods, {data['rate_events_per_second']} events/s for "
        f"{data['minutes']:.0f} min ({data['events_applied']:,} events applied, "
        f"{data['relists']} relists, {data['watch_restarts']} watch restarts), an informer "
        "with exact and coalescing handlers and a metadata-only informer: RSS "
        f"{data['rss_after_warmup_bytes'] / 2**20:.1f} MiB after the "
        f"{data['warmup_seconds'] / 60:.0f} min warm-up, "
        f"{data['rss_end_bytes'] / 2**20:.1f} MiB at the end "
        f"({data['rss_growth_percent']:+.2f} %).",
    ]


def kubesim_section(data: dict[str, Any]) -> list[str]:
    return [
        "## KubeSim at the incident's scale (bench/kubesim_bench.py)",
        "",
        "Command: `python bench/kubesim_bench.py --pods 200000 --owners 200 --churn 20000 "
        "--json bench/results/kubesim.json`",
        "",
        f"- {data['pods']:,} pods created in {data['create_seconds']:.0f} s "
        f"({data['create_pods_per_second']:,.0f}/s); sim RSS "
        f"{data['sim_rss_bytes'] / 2**30:.2f} GiB ({data['sim_rss_bytes_per_pod'] / 1000:.1f} KB/pod)",
        f"- one full list: {data['full_list_bytes'] / 2**30:.2f} GiB in "
        f"{data['full_list_seconds']:.1f} s; in-process writes {data['writes_per_second']:,.0f}/s",
        f"- watch events served: {data['watch_1_events_per_second_total']:,.0f}/s to one watcher, "
        f"{data['watch_8_events_per_second_total']:,.0f}/s in total to eight",
    ]


CLIENT_GO_KB_PER_POD = 15.2
"""The reference of issue 19 (no Go toolchain here): a client-go informer's RSS per cached
pod on a real kube-apiserver v1.28, after it returned free memory to the OS."""


def kb(n: float) -> str:
    return f"{n / 1000:.2f} KB"


def load(row: dict[str, Any]) -> str:
    """The machine's 1-minute load average when the row's load phase began ("-" when the
    run did not record it)."""
    return f"{row['load_1m']:.2f}" if "load_1m" in row else "-"


def reader_counts(data: dict[str, Any]) -> str:
    """A staleness_bench run's reader counts ("4", or "0/4/16" since ``--readers`` takes
    several)."""
    counts = data["readers"]
    return "/".join(map(str, counts)) if isinstance(counts, list) else str(counts)


def note(data: dict[str, Any]) -> list[str]:
    """The run's ``--note`` (which run it repeats and why), as a paragraph."""
    return ["", f"Note: {data['note']}"] if data.get("note") else []


def heading(title: str, data: dict[str, Any]) -> list[str]:
    """A section's title, the command that wrote its file, its note and its machine."""
    return [
        title,
        "",
        f"Command: `{data['command']}`",
        *note(data),
        "",
        f"Machine: {machine_line(data.get('machine') or {})}",
        "",
    ]


def staleness_section(
    data: dict[str, Any],
    title: str = "## Staleness under readers that never yield (bench/staleness_bench.py)",
) -> list[str]:
    made = ", ".join(
        f"{p['pods']:,} pods populated in {p['seconds']:.0f} s" for p in data["populated"]
    )
    out = [
        *heading(title, data),
        f"KubeSim in its own process ({made}); {data['rate']:.0f} status "
        f"writes/s for {data['duration']:.0f} s per run; {reader_counts(data)} readers on the "
        "informer's loop, looping without pause; a fresh informer process per run "
        f"(managedFields dropped{', compact mode' if data.get('compact') else ''}). "
        "Staleness per pod change: the sim's commit -> the first published snapshot holding it. "
        "`thread`: the watcher, FIFO and writer on the factory's pipeline thread (the "
        "default); `loop`: on the readers' event loop. Load: the machine's 1-minute load "
        "average as the run's load phase began (2 cores, shared).",
        "",
        "| pods | pipeline | readers | staleness p50 | p99 | max | reader p99 | reads | "
        "FIFO peak | RSS/pod | sync | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        out.append(
            f"| {r['pods']:,} | {r['pipeline']} | {r['read']} | {ms(r['staleness_p50'])} | "
            f"{ms(r['staleness_p99'])} | {ms(r['staleness_max'])} | {ms(r['read_p99'])} | "
            f"{r['reads']:,} | {r['fifo_peak']:,} | {kb(r['rss_per_pod_bytes'])} | "
            f"{r['sync_seconds']:.1f} s | {load(r)} |"
        )
    out += ["", "Targets (issue 19, ratios from this run):", ""]
    for t in data["targets"]:
        verdict = "holds" if t["holds"] else "does not hold"
        if t["pipeline"] == "loop":  # the target is the default pipeline's
            verdict = "the single loop, for comparison"
        out.append(
            f"- {t['pods']:,} pods, {t['pipeline']}: {t['what']}: {ms(t['value'])} vs "
            f"{ms(t['bound'])} (ratio {t['ratio']:.3f}): {verdict}"
        )
    return out


def real_server_section(data: dict[str, Any]) -> list[str]:
    """bench/staleness_bench.py's real-server mode (``staleness_real.json``): staleness from
    each PATCH's response, the informer's own latency, the PATCH latency, per reader
    pattern and count; a run whose note starts with "smoke" is marked as such."""
    pin = data["pinning"]
    pinning = (
        f"the informer's process on CPU {pin['informer_cpu']}; this process, the writer and "
        f"the server's processes ({len(pin['server_pids'])} pids given) on CPUs "
        f"{pin['server_cpus']}"
        if pin.get("informer_cpu") is not None
        else "nothing pinned"
    )
    made = ", ".join(
        f"{p['pods']:,} pods populated in {p['seconds']:.0f} s" for p in data["populated"]
    )
    server = data["server"]
    pods = ", ".join(f"{p['pods']:,}" for p in data["populated"])
    priority = data.get("pipeline_priority")
    granted = {r.get("priority_ran") for r in data["rows"]}
    if priority is not None:
        pinning += (
            f"; the pipeline thread at real-time priority {priority} (`--pipeline-priority "
            f"{priority}`: SCHED_RR, "
            + ("granted in every run)" if granted == {priority} else "NOT granted in every run)")
        )
    out = heading(
        f"## The informer's own latency on a real kube-apiserver, {pods} pods"
        + (", the pipeline thread at real-time priority" if priority is not None else "")
        + " (bench/staleness_bench.py --kubeconfig)",
        data,
    )
    if str(data.get("note", "")).lower().startswith("smoke"):
        out += [
            "**Smoke figures, not measurements**: the machine was loaded by other work as "
            "this ran (the load column); they show the tooling works and every figure is "
            "filled. Measure on a quiet machine before quoting any of them.",
            "",
        ]
    out += [
        f"{server['kind']} {server.get('version', '')} ({made}, StatefulSet-shaped, a fresh "
        f"namespace removed at the end); {data['rate']:.0f} {server.get('patch', '')} PATCHes/s "
        f"from a separate process for {data['duration']:.0f} s per run; pinning: {pinning}. "
        "Staleness: each PATCH's response -> the first snapshot published holding it. Own "
        "latency: the watcher's read of the event (its `received` stamp, before decoding) -> "
        "that publish. From socket: the kernel's receive time of the event's bytes "
        "(SO_TIMESTAMPNS) -> that publish; socket wait: how long they waited in the kernel "
        "for the informer's process. Wire: the response -> the watcher's read (the server's "
        "delivery and the socket wait). PATCH: request -> response, in the writer. All "
        "clocks CLOCK_MONOTONIC.",
        "",
        "| pods | pipeline | readers | staleness p50 | p99 | max | own p50 | own p99 | own max | "
        "from socket p99 | max | socket wait p99 | wire p99 | PATCH p50 | PATCH p99 | "
        "reader p99 | RSS/pod | sync | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        readers = f"{r['readers']} {r['read']}" if r["readers"] else "none"
        out.append(
            f"| {r['pods']:,} | {r['pipeline']} | {readers} | {ms(r['staleness_p50'])} | "
            f"{ms(r['staleness_p99'])} | {ms(r['staleness_max'])} | "
            f"{ms(r['own_latency_p50'])} | {ms(r['own_latency_p99'])} | "
            f"{ms(r['own_latency_max'])} | {ms(r['socket_latency_p99'])} | "
            f"{ms(r['socket_latency_max'])} | {ms(r['socket_wait_p99'])} | "
            f"{ms(r['wire_p99'])} | {ms(r['patch_p50'])} | "
            f"{ms(r['patch_p99'])} | {ms(r['read_p99'])} | {kb(r['rss_per_pod_bytes'])} | "
            f"{r['sync_seconds']:.1f} s | {load(r)} |"
        )
    out += ["", "Targets (issues 19 and 29, from this run):", ""]
    for t in data["targets"]:
        verdict = "holds" if t["holds"] else "does not hold"
        out.append(
            f"- {t['pods']:,} pods, {t['readers']} readers: {t['what']}: {ms(t['value'])} vs "
            f"{ms(t['bound'])}: {verdict}"
        )
    return out


def rerun_section(data: dict[str, Any]) -> list[str]:
    """A staleness_bench run of some configurations again (``staleness_50k.json``,
    ``staleness_200k.json``)."""
    pods = ", ".join(f"{p['pods']:,}" for p in data["populated"])
    return staleness_section(
        data, f"## Staleness at {pods} pods again (bench/staleness_bench.py, the index readers)"
    )


def own_latency_grid_section(data: dict[str, Any]) -> list[str]:
    """The informer's own latency at each N, reader count and pattern (issue 29, point 2)."""
    pods = ", ".join(f"{p['pods']:,}" for p in data["populated"])
    pin = data.get("pinning") or {}
    out = heading(f"## The informer's own latency at {pods} pods (bench/staleness_bench.py)", data)
    out += [
        f"KubeSim in its own process; {data['rate']:.0f} status writes/s for "
        f"{data['duration']:.0f} s per run; readers on the informer's loop, looping without "
        "pause; a fresh informer process per run"
        + (f", pinned to CPU {pin['informer_cpu']}" if pin.get("informer_cpu") is not None else "")
        + ". Own latency: the watcher's read of an event -> the publish of the first snapshot "
        "holding it; from the socket: the kernel's receive time of the read's newest packet "
        "-> that publish (socket wait: the part before the read). Target (issue 29): from "
        "the socket p99 <= 5 ms.",
        "",
        "| pods | readers | own p50 / p99 | from the socket p50 / p99 | socket wait p99 | "
        "staleness p99 | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        who = "none" if not r["readers"] else f"{r['readers']} {r['read']}"
        out.append(
            f"| {r['pods']:,} | {who} | {ms(r['own_latency_p50'])} / {ms(r['own_latency_p99'])} "
            f"| {ms(r['socket_latency_p50'])} / {ms(r['socket_latency_p99'])} | "
            f"{ms(r['socket_wait_p99'])} | {ms(r['staleness_p99'])} | {load(r)} |"
        )
    return out


def memory_section(data: dict[str, Any]) -> list[str]:
    """RSS per pod, default and compact, from staleness_bench runs (``memory.json``: a list
    of those results)."""
    out = [
        "## Memory per cached pod (bench/staleness_bench.py, readers none)",
        "",
        "RSS of a fresh informer process after the sync minus before it, / N; KubeSim in its "
        "own process; managedFields dropped. The reference is the issue's client-go figure "
        f"on a real kube-apiserver v1.28 ({CLIENT_GO_KB_PER_POD} KB/pod once it returned "
        "free memory to the OS; there is no Go toolchain here to run it side by side): "
        f"target <= 0.5x ({CLIENT_GO_KB_PER_POD / 2:.1f} KB) by default, <= 1/6 "
        f"({CLIENT_GO_KB_PER_POD / 6:.2f} KB) in compact mode.",
        "",
        "| command | pods | mode | RSS/pod | x client-go | target | sync | staleness p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in data:
        for r in run["rows"]:
            compact = bool(run.get("compact"))
            bound = CLIENT_GO_KB_PER_POD / (6 if compact else 2)
            per_pod = r["rss_per_pod_bytes"] / 1000
            out.append(
                f"| `{run['command']}` | {r['pods']:,} | {'compact' if compact else 'default'} | "
                f"{per_pod:.2f} KB | {per_pod / CLIENT_GO_KB_PER_POD:.3f} | "
                f"<= {bound:.2f} KB: {'holds' if per_pod <= bound else 'does not hold'} | "
                f"{r['sync_seconds']:.1f} s | {ms(r['staleness_p99'])} |"
            )
    return out


def memory_real_section(data: dict[str, Any]) -> list[str]:
    """RSS per pod of the same pods cached from KubeSim and from a real kube-apiserver,
    default and compact (``memory_real.json``: ``runs``, staleness_bench results whose
    rows with readers none are shown, a run with ``--kubeconfig`` being the real server's;
    ``note``, what a comparison found)."""
    out = [
        "## Memory per cached pod: KubeSim and a real kube-apiserver (bench/staleness_bench.py)",
        "",
        "The same StatefulSet-shaped pods (one generator, about 3.8 KB of JSON each without "
        "managedFields) cached by a fresh informer process from KubeSim (its own process) and "
        "from a real kube-apiserver v1.28.0 + etcd 3.4 on this machine (both add the same "
        "defaults to each pod); RSS after the sync minus before it, / N. Targets against "
        f"client-go's {CLIENT_GO_KB_PER_POD} KB/pod (after FreeOSMemory): <= 1/2 by default, "
        "<= 1/6 compact; KubeSim and the real server within 5 % of each other.",
        "",
        "| server | pods | mode | RSS/pod | x client-go | target | sync | load | command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    per: dict[tuple[int, bool], dict[str, float]] = {}
    for run in data["runs"]:
        real = "--kubeconfig" in run["command"]
        for r in run["rows"]:
            if r["read"] != "none":
                continue
            compact = bool(run.get("compact"))
            bound = CLIENT_GO_KB_PER_POD / (6 if compact else 2)
            per_pod = r["rss_per_pod_bytes"] / 1000
            per.setdefault((r["pods"], compact), {})["real" if real else "kubesim"] = per_pod
            out.append(
                f"| {'kube-apiserver' if real else 'KubeSim'} | {r['pods']:,} | "
                f"{'compact' if compact else 'default'} | {per_pod:.2f} KB | "
                f"{per_pod / CLIENT_GO_KB_PER_POD:.3f} | <= {bound:.2f} KB: "
                f"{'holds' if per_pod <= bound else 'does not hold'} | "
                f"{r['sync_seconds']:.1f} s | {load(r)} | `{run['command']}` |"
            )
    out += ["", "KubeSim against the real server (the same pods, the same mode):", ""]
    for (pods, compact), both in sorted(per.items()):
        if len(both) == 2:
            diff = both["kubesim"] / both["real"] - 1
            verdict = "holds" if abs(diff) <= 0.05 else "does not hold"
            out.append(
                f"- {pods:,} pods, {'compact' if compact else 'default'}: KubeSim "
                f"{both['kubesim']:.2f} KB, kube-apiserver {both['real']:.2f} KB: "
                f"{diff:+.1%} (within 5 %: {verdict})"
            )
    return [*out, "", data["note"]] if data.get("note") else out


def projection_memory_section(data: dict[str, Any]) -> list[str]:
    """Memory per pod, plain, compact and projected, from one run
    (bench/projection_memory.py)."""
    paths = ", ".join(f'"{p}"' for p in data["paths"])
    labels = "{" + ", ".join(f'"{k}"' for k in data.get("labels", ["app"])) + "}"
    out = heading("## Memory per pod: plain, compact, projected (bench/projection_memory.py)", data)
    out += [
        f"{data['pods']:,} StatefulSet-shaped pods on KubeSim (its own process); one fresh "
        "informer process per mode. RSS/pod: the process's RSS after the sync (a gc, the heap "
        "trimmed) minus before it, / pods. Cached and plain bytes/pod: "
        "`InformerStatistics.cached_bytes` (bodies as held plus managedFields) and "
        "`plain_bytes` (bodies uncompressed), / pods: what the writer counts, the typed "
        f"metadata not included. Projected: `project({paths})` (compact mode leaves bodies "
        f"under 64 bytes plain); projected+labels: `project({paths}, labels={labels})`, "
        "only those labels kept.",
        "",
        "| mode | RSS/pod | cached bytes/pod | plain bytes/pod | RSS/pod vs plain | sync | load |",
        "|---|---|---|---|---|---|---|",
    ]
    by = {r["mode"]: r for r in data["rows"]}
    base = by.get("plain", data["rows"][0])["rss_per_pod_bytes"]
    for r in data["rows"]:
        out.append(
            f"| {r['mode']} | {kb(r['rss_per_pod_bytes'])} | {kb(r['cached_per_pod_bytes'])} | "
            f"{kb(r['plain_per_pod_bytes'])} | {ratio(r['rss_per_pod_bytes'], base)} | "
            f"{r['sync_seconds']:.1f} s | {load(r)} |"
        )
    c = data["costs"]
    out += [
        "",
        f"Per object, in one process (pods of {c['body_bytes']:,} B of body; best of 5 passes "
        f"over 20,000): `decode_event` {c['decode_event_us']:.2f} us, `drop_managed_fields` "
        f"{c['drop_managed_fields_us']:.2f} us, the projection {c['project_us']:.2f} us.",
    ]
    goal = CLIENT_GO_KB_PER_POD * 1000 / 20
    out += [""] if "projected" in by else []
    for mode in ("projected", "projected+labels"):
        if mode in by:
            got = by[mode]["rss_per_pod_bytes"]
            verdict = "holds" if got <= goal else "does not hold"
            out.append(
                f"- {mode}: RSS/pod <= 1/20 of client-go's {CLIENT_GO_KB_PER_POD} KB "
                f"(issue 29): {kb(got)} vs {kb(goal)}: {verdict}"
            )
    return out + object_bytes_lines(data.get("breakdown"), data.get("breakdown_labels"), labels)


def object_bytes_lines(
    breakdown: dict[str, Any] | None, labelled: dict[str, Any] | None = None, labels: str = ""
) -> list[str]:
    """The projection section's table of where a projected pod's bytes go (and, with
    ``labelled``, where they go when only ``labels`` are kept)."""
    if not breakdown:
        return []
    extra = f" | bytes held/pod, `labels={labels}`" if labelled else ""
    out = [
        "",
        f"Where a projected pod's bytes go ({breakdown['pods']:,} pods projected and stored in "
        "one process, `object_bytes`): each part per pod, every distinct object counted once "
        "(a body, a timestamp or a label string shared by many pods counts once for all); "
        "asked: `sys.getsizeof`; held: in pymalloc's 16-byte blocks; the object map and the "
        "indexes traced as they are built.",
        "",
        f"| part | bytes asked/pod | bytes held/pod{extra} |",
        "|---|---|---|" + ("---|" if labelled else ""),
    ]
    asked = held = narrowed = 0.0
    other = {r["part"]: r for r in labelled["rows"]} if labelled else {}
    for row in breakdown["rows"]:
        blocks = row.get("blocks", row["bytes"])
        asked += row["bytes"]
        held += blocks
        cell = ""
        if labelled:
            mine = other.get(row["part"], {})
            narrow = mine.get("blocks", mine.get("bytes", 0.0))
            narrowed += narrow
            cell = f" | {narrow:,.1f}"
        out.append(f"| {row['part']} | {row['bytes']:,.1f} | {blocks:,.1f}{cell} |")
    total = f" | **{narrowed:,.1f}**" if labelled else ""
    out.append(f"| **total** | **{asked:,.1f}** | **{held:,.1f}**{total} |")
    return out


def million_section(data: dict[str, Any]) -> list[str]:
    r = data["rows"][0]
    p = data["populated"][0]
    o = WatchOptions()
    pages = -(-r["objects"] // o.page_size)
    out = [
        "## One million pods (bench/staleness_bench.py --pods 1000000 --compact)",
        "",
        f"Command: `{data['command']}`",
        "",
        f"Machine: {machine_line(data.get('machine') or {})}",
        "",
        f"- KubeSim in its own process: {p['pods']:,} pods (1000 owners x 1000) populated in "
        f"{p['seconds']:.0f} s, sim RSS {p['sim_rss_bytes'] / 2**30:.2f} GiB "
        f"({kb(p['sim_rss_bytes'] / p['pods'])}/pod)",
        f"- the informer in compact mode, pipeline {r['pipeline']}, its own process: synced "
        f"{r['objects']:,} objects in {r['sync_seconds']:.1f} s, RSS "
        f"{kb(r['rss_per_pod_bytes'])}/pod ({r['rss_per_pod_bytes'] * r['pods'] / 2**30:.2f} "
        "GiB for the cache)"
        + (f", {r['rss_bytes'] / 2**30:.2f} GiB in all after the sync" if "rss_bytes" in r else "")
        + f"; the sync is paced by the request ceiling: {pages:,} pages of {o.page_size} at "
        f"{o.request_rate:.0f} requests/s after a burst of {o.request_burst} take at least "
        f"{max(0, pages - o.request_burst) / o.request_rate:.0f} s (WatchOptions' defaults)",
        f"- {r.get('readers', data['readers'])} {r['read']} readers, {data['rate']:.0f} writes/s offered for "
        f"{data['duration']:.0f} s ({r['changes']:,} changes, "
        f"{r['changes'] / data['duration']:,.0f}/s committed): staleness p50 "
        f"{ms(r['staleness_p50'])}, p99 {ms(r['staleness_p99'])}, max {ms(r['staleness_max'])}; "
        f"reader p99 {ms(r['read_p99'])} over {r['reads']:,} reads; FIFO peak {r['fifo_peak']:,}; "
        f"load {load(r)}",
        f"- where the staleness goes: wire p99 {ms(r['wire_p99'])} (the sim's commit -> the "
        f"informer's watcher reading the event), informer p99 {ms(r['informer_p99'])} (-> "
        "the published snapshot)",
    ]
    if "sim_rss_bytes" in r:
        out.append(f"- KubeSim's RSS after the load: {r['sim_rss_bytes'] / 2**30:.2f} GiB")
    return out + note(data)


def million_mixed_section(data: dict[str, Any]) -> list[str]:
    """One million pods with readers of every pattern in one run (``--modes mixed``): the
    informer's own latency, staleness, writes achieved, and each pattern's reads."""
    r = data["rows"][0]
    p = data["populated"][0]
    o = WatchOptions()
    pages = -(-r["objects"] // o.page_size)
    by_read = r["by_read"]
    readers = ", ".join(f"{f['readers']} {mode}" for mode, f in by_read.items())
    # (a run before load_seconds was recorded: its commits over their rate)
    load_seconds = r.get("load_seconds") or r["changes"] / r["writes_per_second"]
    out = [
        *heading(
            f"## {p['pods']:,} pods, {r['readers']} readers of every pattern "
            "(bench/staleness_bench.py --compact --modes mixed)",
            data,
        ),
        f"Load (`uptime`, 1-minute average, 2 cores shared with other engineers' work): "
        f"{r['load_1m']:.2f} as the load phase began, {r['load_1m_end']:.2f} as it ended.",
        "",
        f"- KubeSim in its own process: {p['pods']:,} pods (1000 owners x 1000) populated in "
        f"{p['seconds']:.0f} s, sim RSS {p['sim_rss_bytes'] / 2**30:.2f} GiB after it, "
        f"{r['server_rss_bytes'] / 2**30:.2f} GiB after the load",
        f"- the informer in compact mode, pipeline {r['pipeline']}, its own process: synced "
        f"{r['objects']:,} objects in {r['sync_seconds']:.1f} s (at least "
        f"{max(0, pages - o.request_burst) / o.request_rate:.0f} s of it the request ceiling: "
        f"{pages:,} pages of {o.page_size} at {o.request_rate:.0f} requests/s after a burst of "
        f"{o.request_burst}); RSS {kb(r['rss_per_pod_bytes'])}/pod, "
        f"{r['rss_bytes'] / 2**30:.2f} GiB in all after the sync",
        f"- {r['readers']} readers on the informer's loop ({readers}), looping without pause; "
        f"{data['rate']:.0f} writes/s offered: {r['changes']:,} committed in the load phase, "
        f"{r['writes_per_second']:,.0f}/s achieved. The load phase lasted {load_seconds:.0f} s, "
        f"not the {data['duration']:.0f} s asked: the informer's process ends it when its "
        "loop gets back to the timer, and the scans kept the loop that much longer (the "
        "writes went on meanwhile, all counted)",
        f"- the informer's own latency (the watcher's read of an event -> the snapshot "
        f"published holding it; the `informer_p99` column): p50 {ms(r['own_latency_p50'])}, "
        f"p99 {ms(r['own_latency_p99'])}, max {ms(r['own_latency_max'])}; from the event's "
        f"arrival on the socket (its kernel receive time): p50 {ms(r['socket_latency_p50'])}, "
        f"p99 {ms(r['socket_latency_p99'])}, max {ms(r['socket_latency_max'])} (the bytes "
        f"waited in the kernel for the informer's process: p99 {ms(r['socket_wait_p99'])})",
        f"- staleness (the sim's commit -> the first published snapshot holding it): p50 "
        f"{ms(r['staleness_p50'])}, p99 {ms(r['staleness_p99'])}, max "
        f"{ms(r['staleness_max'])}; the wire part (commit -> the watcher's read) p99 "
        f"{ms(r['wire_p99'])}; FIFO peak {r['fifo_peak']:,}; every change published: "
        f"{'yes' if r['published_all'] else 'no'}",
        "",
        "Each pattern's reads (a read's latency runs from its start to its end: `scan` and "
        "`index` never yield, so theirs is their own work; a `chunks` read yields every 1000 "
        "objects, so its latency holds the other readers' turns; objects read/s counts a "
        "pass the load's end cut short too):",
        "",
        "| pattern | readers | reads | objects read/s | p50 | p99 | max |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, f in by_read.items():
        times = (
            f"{ms(f['read_p50'])} | {ms(f['read_p99'])} | {ms(f['read_max'])}"
            if f["reads"]
            else "- | - | -"  # (no read of this pattern ended in the load phase)
        )
        out.append(
            f"| {mode} | {f['readers']} | {f['reads']:,} | {f['objects_per_second']:,} | {times} |"
        )
    return out


def store_vs_dict_section(data: dict[str, Any]) -> list[str]:
    """The snapshot store against a plain dict store (bench/store_vs_dict.py), beside what
    upstream measured for persistent stores in Go."""
    shapes, ratios, up = data["shapes"], data["ratios"], data["upstream"]
    names = {
        "dict": "plain dict + dict indexes (client-go's threadSafeMap shape)",
        "snapshot": "snapshot store, no reader holding a snapshot",
        "snapshot_threaded": "snapshot store as the pipeline thread writes it",
        "snapshot_held": "snapshot store, a reader holding every snapshot",
    }

    def x(name: str, key: str) -> str:
        if name == "dict":
            return "1"
        value = ratios[name][key]
        return "-" if value is None else f"{value:.2f}x"

    out = [
        *heading("## The snapshot store against a plain dict store (bench/store_vs_dict.py)", data),
        f"Upstream's figures, from {up['source']}: persistent maps behind client-go's store "
        f"made writes {up['write_latency']} slower, took {up['memory']} the memory "
        '("mem usage" in the benchmarks; both readings are below: bytes allocated per write '
        f"and bytes held per object) and {up['allocations']} the allocations, reads "
        f"{up['reads']}; upstream kept the lock. "
        f"Here: the same {data['pods']:,} realistic pods (1000 per StatefulSet, managedFields "
        "dropped, the default indexes) in each store, the same status-like updates to random "
        "pods; CPU time per write, the best of "
        f"{data['repeat']} interleaved passes of {data['updates']:,}; bytes allocated per "
        f"write: the traced peak during a single-update write (tracemalloc, mean of "
        f"{data['alloc_writes']:,}); bytes per object: the store's structures, the pods "
        "counted apart, after the load and "
        f"{data.get('settle', 0):,} single-update writes more (the threaded store's second map; "
        "loaded: right after the load). Load (`uptime`, 1-minute average): "
        f"{data['load_1m']:.2f} as it began, {data['load_1m_end']:.2f} as it ended.",
        "",
        "| store | ns/write, batch 1 | ratio | ns/write, batch 100 | ratio | "
        "bytes allocated/write | ratio | bytes/object | ratio | loaded |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in shapes.items():
        out.append(
            f"| {names.get(name, name)} | {row['ns_per_write_batch1']:,.0f} | "
            f"{x(name, 'ns_per_write_batch1')} | {row['ns_per_write_batch100']:,.0f} | "
            f"{x(name, 'ns_per_write_batch100')} | {row['allocated_bytes_per_write']:,.0f} | "
            f"{x(name, 'allocated_bytes_per_write')} | {row['bytes_per_object']:,.0f} | "
            f"{x(name, 'bytes_per_object')} | {row['bytes_per_object_loaded']:,.0f} |"
        )
    d, snap = shapes["dict"], shapes["snapshot"]
    retained = snap["retained_bytes_after_k_writes"]

    def spread(key: str) -> str:
        values = [r[key] for r in ratios.values() if r[key] is not None]
        return f"{min(values):.2f}x-{max(values):.2f}x"

    out += [
        "",
        f"Here, at {data['pods']:,} pods, against upstream's: writes "
        f"{spread('ns_per_write_batch1')} the dict's CPU time one write per publish, "
        f"{spread('ns_per_write_batch100')} a hundred per publish (upstream "
        f"{up['write_latency']}); bytes allocated per write {spread('allocated_bytes_per_write')}"
        f", bytes held per object {spread('bytes_per_object')} (upstream {up['memory']}); "
        + (
            f"a pod object itself is {data['pod_bytes']:,} bytes (traced), so the store's "
            f"structures are {shapes['dict']['bytes_per_object'] / data['pod_bytes']:.1%}-"
            f"{max(r['bytes_per_object'] for r in shapes.values()) / data['pod_bytes']:.1%} "
            "of what the cache holds."
            if "pod_bytes" in data
            else ""
        )
        + (
            f" Reads (upstream: {up['reads']}): `get` {spread('get_ns')}, `by_index` "
            f"{spread('by_index_us')}, `list` {spread('list_ms')} the dict's."
            if "get_ns" in d
            else ""
        ),
    ]
    if "get_ns" in d:
        out += [
            "",
            "Reads, a reader taking its view each time (a snapshot; the dict store's live "
            "view, without the lock its readers would take): a random key's `get`, a random "
            "owner's 1000 pods through `by_index`, `list` of every pod (CPU time, the best of "
            f"{data['repeat']} interleaved passes):",
            "",
            "| store | get | ratio | by_index | ratio | list | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, row in shapes.items():
            out.append(
                f"| {names.get(name, name)} | {row['get_ns']:,.0f} ns | {x(name, 'get_ns')} | "
                f"{row['by_index_us']:,.0f} us | {x(name, 'by_index_us')} | "
                f"{row['list_ms']:,.1f} ms | {x(name, 'list_ms')} |"
            )
    out += [
        "",
        "A reader's view held across writes: the snapshot it took (in "
        f"{snap['snapshot_take_ns']:.0f} ns) retains, K single-update writes later, what the "
        "store no longer shares with it; the dict store's reader has no such view but a "
        f"copy: of its objects dict {d['objects_copy_bytes'] / 2**20:.1f} MiB in "
        f"{d['objects_copy_ms']:.1f} ms, with its indexes {d['full_copy_bytes'] / 2**20:.1f} "
        f"MiB in {d['full_copy_ms']:.1f} ms, whatever K.",
        "",
        "| K writes later | the snapshot retains | x the objects dict's copy | "
        "x the copy with indexes |",
        "|---|---|---|---|",
    ]
    for k, held in retained.items():
        out.append(
            f"| {int(k):,} | {held / 2**10:,.1f} KiB | {held / d['objects_copy_bytes']:.3f} | "
            f"{held / d['full_copy_bytes']:.3f} |"
        )
    return out


def pipeline_section(data: dict[str, Any]) -> list[str]:
    names = [k[len("pipeline_") : -len("_vs_orjson_decode")] for k in data
             if k.startswith("pipeline_") and k.endswith("_vs_orjson_decode")]  # fmt: skip
    out = [
        "## Pipeline throughput (bench/pipeline_bench.py)",
        "",
        f"Command: `{data.get('command', 'python bench/pipeline_bench.py')}`",
        "",
        f"{data['objects']:,} pods synced, then {data['events']:,} MODIFIED events "
        f"({data['bytes_per_event']:,} B a line) through the real pipeline (decode, FIFO, "
        "apply with the default indexes, publish, wake the waiter) in paired blocks of "
        f"{data['block']:,} lines against a bare `orjson.loads` loop over the same lines "
        f"(median of the block ratios, {data['rounds']} rounds; Python "
        f"{data['machine']['python']}, {data['machine']['cpus']} CPUs).",
        "",
        "| configuration | events/s | bare loop events/s beside it | ratio (median) | quartiles |",
        "|---|---|---|---|---|",
    ]
    for n in names:
        q = data[f"pipeline_{n}_vs_orjson_decode_quartiles"]
        out.append(
            f"| {n} | {data[f'pipeline_{n}_events_per_second']:,} | "
            f"{data[f'orjson_decode_beside_{n}_events_per_second']:,} | "
            f"{data[f'pipeline_{n}_vs_orjson_decode']:.3f} | {q[0]:.3f} - {q[2]:.3f} |"
        )
    out += [
        "",
        "Targets (issue 19): the default pipeline (snapshot_thread) >= 1.0x the bare loop; "
        "compact mode >= 0.7x.",
    ]
    return out


def objects_section(data: dict[str, Any]) -> list[str]:
    out = [
        "## Objects: decode, access, memory (bench/objects_bench.py)",
        "",
        f"Command: `{data.get('command', 'python bench/objects_bench.py')}`",
        "",
        f"{data['n']:,} pod events as KubeSim writes them ({data['line_bytes_mean']:.0f} B a "
        f"line, managedFields {data['managed_fields_bytes_mean']:.0f} B); CPU time, best of "
        f"the passes; Python {data['python']}, msgspec {data['msgspec']}, orjson {data['orjson']}. "
        f"Compact: a Compactor trained on the first 1000 bodies (dictionary "
        f"{data.get('compact_dictionary_bytes', 0):,} B).",
        "",
        "| decode per event | us | x orjson.loads |",
        "|---|---|---|",
    ]
    base = data["decode_us"]["orjson.loads"]
    for name, us in data["decode_us"].items():
        out.append(f"| {name} | {us:.2f} | {us / base:.2f} |")
    out += ["", "| access per object | us |", "|---|---|"]
    for name, us in data.get("access_us", {}).items():
        out.append(f"| {name} | {us:.2f} |")
    out += ["", f"| retained per object ({data['mem_n']:,} objects, tracemalloc) | bytes |",
            "|---|---|"]  # fmt: skip
    for name, b in data["retained_bytes_per_object"].items():
        out.append(f"| {name} | {b:,.0f} |")
    return out


SHARD_FILTER_ROWS = (
    ("shard_hash_us", "shard_hash (FNV-1a 64 of a uid, Python)"),
    ("event_full_decode_us", "watch event: decode_event, no filter"),
    ("event_dropped_cold_us", "watch event dropped by the filter, uid first seen"),
    ("event_dropped_warm_us", "watch event dropped by the filter, uid seen before"),
    ("event_kept_cold_us", "watch event kept by the filter, uid first seen"),
    ("event_kept_warm_us", "watch event kept by the filter, uid seen before"),
    ("list_full_decode_us", "list page of 500: decode_list, no filter"),
    ("list_keep_1_of_2_cold_us", "list page, client mode keeping 1/2, uids first seen"),
    ("list_keep_1_of_2_warm_us", "list page, client mode keeping 1/2, uids seen before"),
    ("list_keep_1_of_4_cold_us", "list page, client mode keeping 1/4, uids first seen"),
    ("list_keep_1_of_4_warm_us", "list page, client mode keeping 1/4, uids seen before"),
)
"""(key in bench/shard_filter_bench.py's results, row) of the shard filter section."""


def shard_filter_section(data: dict[str, Any]) -> list[str]:
    r = data["results"]
    out = [
        "## A sharded informer's client-side filter (bench/shard_filter_bench.py)",
        "",
        f"Command: `{data['command']}`",
        "",
        f"{data['n']:,} pods as KubeSim writes them ({r['line_bytes']:.0f} B a line); CPU "
        f"time per object, best of {data['repeat']} passes; Python {data['python']}, msgspec "
        f"{data['msgspec']}. The filter reads each object's metadata in the decoder's one "
        "pass and drops it before it is built; each uid's verdict is then remembered.",
        "",
        "| per object | us | x no filter |",
        "|---|---|---|",
    ]
    for key, label in SHARD_FILTER_ROWS:
        base = r["list_full_decode_us"] if key.startswith("list") else r["event_full_decode_us"]
        out.append(f"| {label} | {r[key]:.2f} | {r[key] / base:.2f} |")
    return out


MANAGER_FIGURES = (
    ("threads", "threads", lambda v: f"{v:g}"),
    ("os_threads", "OS threads", lambda v: f"{v:g}"),
    ("tcp_connections", "TCP to sim", lambda v: f"{v:g}"),
    ("idle_cpu_percent", "idle CPU", lambda v: f"{v:.2f} %"),
    ("rss_bytes", "RSS", lambda v: f"{v / 2**20:.1f} MiB"),
    ("sync_seconds", "sync", ms),
    ("staleness_p50", "staleness p50", ms),
    ("staleness_p99", "staleness p99", ms),
    ("read_p99", "reader p99", ms),
    ("load_cpu_percent", "CPU under load", lambda v: f"{v:.0f} %"),
)
"""(key in bench/manager_bench.py's summary, column, format) of the manager section."""


def thread_names(names: dict[str, int]) -> str:
    """``name xN`` per thread name (digits dropped), every pipeline thread under one name
    (one per informer before issue 25, one per factory after)."""
    grouped: dict[str, int] = {}
    for name, count in names.items():
        if name.startswith("aioinformer-pipeline-"):
            name = "aioinformer-pipeline-*"
        grouped[name] = grouped.get(name, 0) + count
    return ", ".join(f"{name} x{count}" for name, count in grouped.items())


def manager_section(
    data: dict[str, Any], title: str = "## A Manager with N informers (bench/manager_bench.py)"
) -> list[str]:
    o = data["options"]
    made = o["objects"]  # plural -> objects made, the kinds after pods
    others = (
        f"{max(made.values())} objects of each other kind ({', '.join(made)})"
        if made
        else "no other kind"
    )
    checkouts = "; ".join(
        f"`{c['label']}` = {c['path']} at {c['commit']}" for c in data["checkouts"]
    )
    out = [
        *heading(title, data),
        f"Checkouts (each informer process imports aioinformer from one): {checkouts}.",
        "",
        f"KubeSim in its own process: {o['pods']:,} pods ({o['per_owner']:,} per StatefulSet, "
        f"{o['namespaces']} namespaces) and {others}. Per run, a fresh informer process runs "
        "`Manager(api_client)` with N informers (pods, then the other kinds in that order) "
        "until all synced (sync), then is measured over "
        f"{o['idle']:.0f} s with no reader and no write (idle CPU, in % of one core; "
        "threads, `threading.active_count()` and the kernel's count; established TCP "
        "connections to the sim; RSS after the sync), then "
        f"{o['readers']} readers scan every pod without yielding on its loop for "
        f"{o['duration']:.0f} s while the sim makes {o['rate']:.0f} status writes/s "
        "(staleness per pod change: the sim's commit -> the first snapshot published "
        "holding it; reader p99: one scan; CPU under load). Configurations interleaved, "
        f"checkouts alternating; runs per configuration: {o['repeat']}; the median, then "
        "the range [min - max] when the runs differ.",
        "",
        "| informers | checkout | " + " | ".join(c for _, c, _ in MANAGER_FIGURES) + " |",
        "|---|---|" + "---|" * len(MANAGER_FIGURES),
    ]
    for s in data["summary"]:
        cells = []
        for key, _, fmt in MANAGER_FIGURES:
            f = s["figures"][key]
            span = f" [{fmt(f['min'])} - {fmt(f['max'])}]" if f["min"] != f["max"] else ""
            cells.append(fmt(f["median"]) + span)
        out.append(f"| {s['informers']} | {s['checkout']} | " + " | ".join(cells) + " |")
    if data["ratios"]:
        out += [
            "",
            "Each checkout's medians over the first checkout's, same N:",
            "",
            "| informers | checkout | " + " | ".join(c for _, c, _ in MANAGER_FIGURES) + " |",
            "|---|---|" + "---|" * len(MANAGER_FIGURES),
        ]
        for r in data["ratios"]:
            cells = [
                "n/a" if r["figures"][k] is None else f"{r['figures'][k]:.3f}"
                for k, _, _ in MANAGER_FIGURES
            ]
            out.append(
                f"| {r['informers']} | {r['checkout']} / {r['baseline']} | "
                + " | ".join(cells)
                + " |"
            )
    top = max(s["informers"] for s in data["summary"])
    named = [
        f"`{r['checkout']}` {thread_names(r['thread_names'])}"
        for r in data["rows"]
        if r["informers"] == top and r["repeat"] == 0
    ]
    out += [
        "",
        f"Threads at {top} informers, first run (digits dropped from the names; `asyncio_`: "
        "event loops' default-executor workers, where aiohttp's default resolver looks the "
        "host up; `aioinformer-resolver-*`: the pipeline loop's two such workers): "
        + "; ".join(named)
        + ".",
        "",
        "TCP to sim: one HTTP session per factory holds one connection per open watch (an "
        "HTTP/1.1 response streams on a connection of its own), plus one for lists and "
        "Leases, so N informers keep N + 1 connections whatever the number of sessions; the "
        "threads, event loops and sessions are what one pipeline per factory makes one.",
    ]
    spread = [
        f"{column} {100 * data['spread'][key]:.0f} %"
        for key, column, _ in MANAGER_FIGURES
        if data["spread"].get(key) is not None
    ]
    if spread:
        out += [
            "",
            "Run-to-run spread, the largest (max - min) / median over the runs of one "
            "configuration: " + ", ".join(spread) + ".",
        ]
    return out


def manager_before_section(data: dict[str, Any]) -> list[str]:
    """``manager_before.json``: the manager benchmark before issue 25's refactor."""
    return manager_section(
        data, "## A Manager with N informers, before the refactor (bench/manager_bench.py)"
    )


README_START, README_END = "<!-- headline:start -->", "<!-- headline:end -->"


def shard_caches_section(data: dict[str, Any]) -> list[str]:
    """Per replica of a sharded-cache operator: what it caches, receives and reconciles."""
    out = heading("## Sharded caches: what each replica holds (bench/shard_caches_bench.py)", data)
    out += [
        f"{data['owners']} owners x {data['pods']} pods (StatefulSet-shaped), {data['shards']} "
        "shards; replicas as Managers in one process on KubeSim (in-process), "
        "`Sharding(caches=...)`; gate: KubeSim's ShardedListAndWatch (on: the server filters "
        "the primaries; off: each replica filters them itself). Per replica: shards ready, "
        "primaries and pods cached, cached bytes, objects received, reconciles.",
        "",
        "| caches | gate | replicas | seconds to stable | per replica: shards / primaries / pods "
        "/ cached MB / received / reconciles |",
        "|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        rows = "; ".join(
            f"{r['shards_ready']} / {r['primaries']} / {r['pods']:,} / "
            f"{r['cached_bytes'] / 1e6:.1f} / {r['objects_received']:,} / {r['reconciles']}"
            for r in run["per_replica"]
        )
        gate = "on" if run["gate"] else "off"
        out.append(
            f"| {run['caches']} | {gate} | {run['replicas']} | {run['seconds_to_stable']} | {rows} |"
        )
    return [*out, ""]


def _loads(data: dict[str, Any]) -> str:
    before, after = data.get("load_before"), data.get("load_after")
    fmt = lambda v: " / ".join(f"{x:.2f}" for x in v) if v else "-"  # noqa: E731
    return f"Load (1/5/15 min) before: {fmt(before)}; after: {fmt(after)}."


def _seed(data: dict[str, Any]) -> str:
    t = data["lease_timing"]
    labeled = (
        "pods labelled with their owner's bucket from the start"
        if data["labeled_at_start"]
        else "pods created without the bucket label (the first replica's ShardLabeler labelled them)"
    )
    return (
        f"{data['owners']} PodSets x {data['pods_per_owner']} StatefulSet-shaped pods "
        f"({data['pods']:,} pods, each with the controller ownerReference; {labeled}) on KubeSim "
        f"in its own process; the PodSet operator (examples/podset.py) as replica processes "
        f"(`python -m aioinformer run ... --shards {data['shards']} --shard-caches sharded`), Leases "
        f"{t['lease_duration']:g} / {t['renew_deadline']:g} / {t['retry_period']:g} s "
        "(duration / renew deadline / retry period)."
    )


def _labeling(lab: dict[str, Any]) -> str:
    return (
        f"Labeling (one replica on the unlabeled pods, server mode): {lab['patches_ok']:,} of "
        f"{lab['pods']:,} pods labelled {lab['seconds']} s after the replica started "
        f"({lab['patches_per_second']} patches/s); meanwhile the replica tried "
        f"{lab.get('creates_409', '-')} creates of pods that existed unlabelled (409 "
        f"AlreadyExists) and wrote {lab.get('status_writes', '-')} PodSet statuses (its "
        "shards become ready once every existing child of their buckets is labelled and "
        "cached; before that fix, one renew deadline after the gain: 2,943 409s and 2,677 "
        "statuses in the same run)."
    )


def scaleout_labeling_section(data: dict[str, Any]) -> list[str]:
    """The ShardLabeler labelling a seed shape's pods (bench/scaleout.py without --labeled)."""
    out = heading("## Scale-out: labelling existing children (bench/scaleout.py)", data)
    return [*out, _seed(data), "", _loads(data), "", _labeling(data["labeling"]), ""]


def scaleout_section(data: dict[str, Any]) -> list[str]:
    """Per replica of the PodSet operator with 1, 2, 4 replicas, server- and client-side."""
    out = heading(
        "## Scale-out: the PodSet operator as 1, 2 and 4 replicas (bench/scaleout.py)", data
    )
    out += [_seed(data), "", _loads(data), ""]
    if data.get("labeling"):
        out += [_labeling(data["labeling"]), ""]
    over = data["overhead"]
    out += [
        "server: KubeSim's ShardedListAndWatch gate on (the server filters the PodSets by uid); "
        "client: off (each replica drops the PodSets outside its ranges before decoding them). "
        "The pods are label-selected by bucket in both (the server filters them either way). "
        "The PodSets informer says mode client in both: a custom resource's list carries no "
        "shardInfo in v1.36, so it cannot tell that the server filtered (with the gate on it "
        "drops nothing: the server sent only its share). "
        f"Fixed overhead: a replica holding no objects, RSS {over['rss_bytes'] / 2**20:.0f} MiB, "
        f"CPU {over['cpu_seconds']:.1f} s. CPU is the process's whole life (start-up included); "
        "per 1000 = CPU seconds per 1000 objects received.",
        "",
        "| mode | N | replica | RSS MiB | PodSets | pods | bytes received MiB | received / "
        "dropped | CPU s | CPU per 1000 | reconciles |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        for r in run["per_replica"]:
            per = r["cpu_per_1000_objects"]
            out.append(
                f"| {run['mode']} | {run['replicas']} | {r['identity']} | "
                f"{r['rss_bytes'] / 2**20:.0f} | {r['podsets']} | {r['pods']:,} | "
                f"{r['bytes_received'] / 2**20:.1f} | {r['objects_received']:,} / "
                f"{r['objects_dropped']:,} | {r['cpu_seconds']:.1f} | "
                f"{per if per is not None else '-'} | {r['reconciles']} |"
            )
    out += ["", "Targets (ratios within this run; worst replica):", ""]
    for t in data["targets"]:
        verdict = "held" if t["held"] else "**missed**"
        out.append(f"- {t['mode']}, N={t['replicas']}, {t['target']}: {verdict}: {t['text']}")
    return [*out, ""]


def scaleout_drill_section(data: dict[str, Any]) -> list[str]:
    """The rebalancing drill: recovery times and the server-side safety counts."""
    d = data["drill"]
    out = heading("## Scale-out: the rebalancing drill (bench/scaleout.py --drill)", data)
    out += [_seed(data), "", _loads(data), ""]
    out += [
        f"4 replicas (server mode) under {d['write_rate_offered']:g} writes/s offered "
        f"({d['writer']} writer: pod annotation patches over every pod, "
        f"{d['scale_rate']:g}/s of them PodSet scale-ups); achieved "
        f"{d['write_rate_achieved']:g} writes/s ({d['writes']:,} in {d['write_seconds']:.0f} s, "
        f"{d['write_errors']} errors). Seconds from each event until every shard's Lease names "
        "a live replica (owned) and until that replica also logged the shard ready after taking "
        "it, with fair shares (stable); polled every 0.2 s.",
        "",
        "| event | at s | owned after s | stable after s |",
        "|---|---|---|---|",
    ]
    for e in d["events"]:
        stable = (
            e["seconds_to_stable"] if e["seconds_to_stable"] is not None else "not within the bound"
        )
        out.append(f"| {e['event']} | {e['at']} | {e['seconds_to_owned']} | {stable} |")
    seconds = d["seconds_to_converge_after_writes"]
    converged = (
        f"all converged {seconds} s after the writes stopped"
        if seconds is not None
        else "not all converged within the bound"
    )
    out += [
        "",
        "From KubeSim's write journal (each write's server time, key and user; each replica "
        "has its own token) and the shard Leases' holder history:",
        "",
        f"- writes by the replicas to PodSets and their pods: {d['replica_writes']:,}",
        f"- writes by a replica while another held (or nobody held) the key's shard Lease: "
        f"{d['writes_without_the_lease']} (must be 0)",
        f"- pairs of writes to one key by two replicas in flight at once: "
        f"{d['overlapping_writes_by_two_replicas']} (must be 0); closest hand-off between two "
        f"replicas' writes to one key: {d['closest_handoff_seconds']} s",
        f"- PodSets never reconciled (their pods or status not what their spec says at the "
        f"end: {converged}): {d['never_reconciled']} (must be 0)",
        f"- pods beyond a PodSet's spec (duplicate creates): {d['pods_beyond_spec']} (must be 0); "
        f"creates answered 409 AlreadyExists: {d['creates_409']}",
    ]
    return [*out, ""]


def before_after_section(data: dict[str, Any]) -> list[str]:
    """A figure-by-figure comparison of two checkouts in one run (bench/before_after.py)."""
    before, after = data["before"], data["after"]
    out = heading(f"## {data['script']}: before and after, one run (bench/before_after.py)", data)
    out += [
        f"Before: `{before['path']}` at {before['commit']}; after: `{after['path']}` at "
        f"{after['commit']}; {len(data['runs']) // 2} rounds of each, alternating. Medians; "
        "the ratio is after / before, the range each side's min-max over the rounds.",
        "",
        "| figure | before | after | after / before | before range | after range |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["summary"]:
        lo_b, hi_b = row["before_range"]
        lo_a, hi_a = row["after_range"]
        out.append(
            f"| `{row['figure']}` | {row['before']:.4g} | {row['after']:.4g} | "
            f"{row['ratio']} | {lo_b:.4g}-{hi_b:.4g} | {lo_a:.4g}-{hi_a:.4g} |"
        )
    return out


def own_latency_section(data: dict[str, Any]) -> list[str]:
    """:func:`before_after_section` of bench/staleness_bench.py runs, with each side's load
    (the 1-minute average when each run's load phase began, min-max over its runs) and
    the pinning the runs had."""
    out = before_after_section(data)
    loads: dict[str, list[float]] = {"before": [], "after": []}
    pinning = ""
    for run in data["runs"]:
        result = run["result"]
        loads[run["side"]] += [r["load_1m"] for r in result["rows"] if "load_1m" in r]
        pin = result.get("pinning") or {}
        if pin.get("informer_cpu") is not None:
            pinning = f"the informer's process pinned to CPU {pin['informer_cpu']}, the rest off it"
    said = "; ".join(
        f"{side} {min(v):.2f}-{max(v):.2f}" for side, v in loads.items() if v
    )  # fmt: skip
    out += ["", f"Load (1-minute average at each load phase): {said}; {pinning or 'no pinning'}."]
    return out


def sched_profile_section(data: dict[str, Any]) -> list[str]:
    """Per profile (bench/sched_profile.py): each thread's switches, the wait for a CPU
    after each wake-up, its runs and its time off a CPU."""
    first = data["profiles"][0]
    out = [
        "## Where the informer's threads wait: the scheduler's view (bench/sched_profile.py)",
        "",
        f"Machine: {machine_line(first.get('machine') or {})}",
        "",
        "Per thread of the informer's process: how often it was switched in, the wait for a "
        "CPU after each wake-up (sched delay), how long it then ran, and how long it had been "
        "off a CPU before (asleep: epoll, or the interpreter's lock). Milliseconds."
        + (
            f" Kernel: {', '.join(f'{k}={v}' for k, v in first['kernel'].items())} (a woken "
            "thread the scheduler does not run at once waits for a tick at most)."
            if first.get("kernel")
            else ""
        ),
        "",
        "| load (note) | thread | switches | sched delay p50 / p99 / max | run p50 / p99 / "
        "total | off CPU p50 / p99 |",
        "|---|---|---|---|---|---|",
    ]
    for prof in data["profiles"]:
        where = f"{prof['note']}; load {prof['load_1m']:.2f}, CPUs {prof['cpus_of_pid']}"
        for t in prof["threads"]:
            if t["switches"] < 20:
                continue
            out.append(
                f"| {where} | {t['name']} | {t['switches']} | {t['sched_delay_p50_ms']} / "
                f"{t['sched_delay_p99_ms']} / {t['sched_delay_max_ms']} | {t['run_p50_ms']} / "
                f"{t['run_p99_ms']} / {t['run_total_ms']} | {t['off_cpu_p50_ms']} / "
                f"{t['off_cpu_p99_ms']} |"
            )
    out += ["", "Commands:", "", *(f"    {p['command']}" for p in data["profiles"])]
    return out


def headline(data: dict[str, Any]) -> list[str]:
    """The README's compact table: one row per configuration of the seed run."""
    o = data["options"]
    out = [
        f"{data['pods']:,} pods, {o['readers']} readers, {o['rate']:.0f} writes/s offered "
        f"({machine_line(data.get('machine') or {}).split(';')[0]}), from "
        "[bench/RESULTS.md](bench/RESULTS.md):",
        "",
        "| configuration | staleness p99 | FIFO peak | reader p99 | PodSet 409s on/off | "
        "NodeAgent extra pods on/off |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["results"]:
        c, e = r.get("conflicts_409") or {}, r.get("extra_pods") or {}
        out.append(
            f"| {r['config']} | {ms(r['staleness_p99'])} | {r['fifo_peak']:,} | "
            f"{ms(r['reader_latency_p99'])} | "
            f"{c.get('podset/protected', '-')} / {c.get('podset/unprotected', '-')} | "
            f"{e.get('nodeagent/protected', '-')} / {e.get('nodeagent/unprotected', '-')} |"
        )
    if (RESULTS / "contention.png").exists():
        out += ["", "![FIFO depth and staleness over time](bench/results/contention.png)"]
    return out


def update_readme(readme: Path, block: list[str]) -> bool:
    """Replace the text between the headline markers; whether the markers were found."""
    text = readme.read_text()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    new = text[: start + len(README_START)] + "\n" + "\n".join(block) + "\n" + text[end:]
    readme.write_text(new)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/render_results.py", description=__doc__)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument(
        "--readme", action="store_true", help="also update the headline table in README.md"
    )
    args = parser.parse_args(argv)
    lines = [
        "# Benchmark results",
        "",
        "Generated by `python bench/render_results.py` from the JSON files in `bench/results/`,",
        "which the scripts below wrote; nothing here is typed in. The machines are shared and",
        "noisy: compare figures within one run (ratios), not across runs.",
        "",
    ]
    sections = [
        ("contention.json", contention_section),
        ("staleness.json", staleness_section),
        ("staleness_50k.json", rerun_section),
        ("staleness_200k.json", rerun_section),
        ("memory.json", memory_section),
        ("memory_real.json", memory_real_section),
        ("million.json", million_section),
        ("million_mixed.json", million_mixed_section),
        ("staleness_real.json", real_server_section),
        ("staleness_real_200k.json", real_server_section),
        ("staleness_real_rt.json", real_server_section),
        ("staleness_real_rt_200k.json", real_server_section),
        ("projection_memory.json", projection_memory_section),
        ("pipeline.json", pipeline_section),
        ("objects.json", objects_section),
        ("shard_filter.json", shard_filter_section),
        ("shard_caches.json", shard_caches_section),
        ("scaleout.json", scaleout_section),
        ("scaleout-labeling.json", scaleout_labeling_section),
        ("scaleout-drill.json", scaleout_drill_section),
        ("peers.json", peers_section),
        ("soak.json", soak_section),
        ("kubesim.json", kubesim_section),
        ("manager_before.json", manager_before_section),
        ("manager.json", manager_section),
        ("pipeline_before_after.json", before_after_section),
        ("store_vs_dict.json", store_vs_dict_section),
        ("store_before_after.json", before_after_section),
        ("footprint_before_after.json", before_after_section),
        ("footprint_store_before_after.json", before_after_section),
        ("metadata_sharing_before_after.json", before_after_section),
        ("metadata_sharing_real.json", before_after_section),
        ("projection_before_after.json", before_after_section),
        ("projection_memory_before_after.json", before_after_section),
        ("buckets_store_before_after.json", before_after_section),
        ("own_latency_before_after.json", own_latency_section),
        ("own_latency_grid.json", own_latency_grid_section),
        ("own_latency_pipeline_before_after.json", before_after_section),
        ("sched_profile.json", sched_profile_section),
        ("sched_slice_before_after.json", own_latency_section),
        ("pipeline_priority_before_after.json", own_latency_section),
    ]
    for name, render in sections:
        path = RESULTS / name
        if path.exists():
            lines += render(json.loads(path.read_text()))
        else:
            lines += [f"## {name}", "", f"`bench/results/{name}` has not been produced yet."]
        lines.append("")
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")
    contention = RESULTS / "contention.json"
    readme = HERE.parent / "README.md"
    if (
        args.readme
        and contention.exists()
        and update_readme(readme, headline(json.loads(contention.read_text())))
    ):
        print(f"updated the headline table in {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
