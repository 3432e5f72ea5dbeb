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


def seed_section(data: dict[str, Any]) -> list[str]:
    o = data["options"]
    out = [
        "## The seed scenario (bench/seed.py)",
        "",
        f"Command: `{data.get('command') or 'python bench/seed.py'}`",
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
    if (RESULTS / "seed.png").exists():
        out += ["", "![FIFO depth and staleness over time](results/seed.png)"]
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
        "## KubeSim at the seed's scale (bench/kubesim_bench.py)",
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


README_START, README_END = "<!-- headline:start -->", "<!-- headline:end -->"


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
    if (RESULTS / "seed.png").exists():
        out += ["", "![FIFO depth and staleness over time](bench/results/seed.png)"]
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
        ("seed.json", seed_section),
        ("peers.json", peers_section),
        ("soak.json", soak_section),
        ("kubesim.json", kubesim_section),
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
    seed = RESULTS / "seed.json"
    readme = HERE.parent / "README.md"
    if seed.exists() and update_readme(readme, headline(json.loads(seed.read_text()))):
        print(f"updated the headline table in {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
