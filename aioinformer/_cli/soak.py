"""``python -m aioinformer soak``: many seeded fault mixes, one summary table.

Each seed runs one :class:`~aioinformer.testing.FaultMix` on a fresh KubeSim, one after
the other. ``--minutes`` is the total *workload* time, split equally across the seeds: each
seed's plan lasts about ``minutes * 60 / seeds`` seconds (40 steps per second, at least 20
steps); setting up and waiting for convergence (up to ``--converge-timeout`` seconds per
seed) come on top. The example operators (PodSet, NodeAgent) run too when the
``examples/`` directory is found (``--examples DIR``; ``--no-operators`` to leave them
out). The table shows, per seed: steps, faults injected by kind, relists, watch restarts,
workload and convergence seconds, and whether it converged; the differences of seeds that
did not converge follow. The exit status is 1 if any seed did not converge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from dataclasses import asdict
from pathlib import Path

from aioinformer.testing._faultmix import FaultMix, FaultMixResult, Operator, example_operators

__all__ = ["add_soak_parser", "run_soak"]


def add_soak_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``soak``."""
    p = sub.add_parser(
        "soak",
        help="run seeded fault mixes against KubeSim and print a summary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--seeds", type=int, default=10, help="number of seeds (default 10)")
    p.add_argument("--first-seed", type=int, default=1, help="seeds are FIRST..FIRST+N-1")
    p.add_argument("--minutes", type=float, default=5.0, help="total workload time (split)")
    p.add_argument("--fault-rate", type=float, default=0.1, help="faults per step (0-1)")
    p.add_argument("--converge-timeout", type=float, default=60.0, help="per seed, seconds")
    p.add_argument("--examples", metavar="DIR", help="where the example operators are")
    p.add_argument("--no-operators", action="store_true", help="informers and handlers only")
    p.add_argument("--json", metavar="PATH", help="also write the results here as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings")


def run_soak(args: argparse.Namespace) -> int:
    """Run the seeds, print the table; 0 when every seed converged, 1 otherwise, 2 on a
    bad argument."""
    from rich.console import Console

    console = Console()
    if args.seeds < 1 or args.minutes <= 0 or not 0 <= args.fault_rate <= 1:
        console.print("soak: need --seeds >= 1, --minutes > 0 and 0 <= --fault-rate <= 1")
        return 2
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.CRITICAL)
    operators = [] if args.no_operators else example_operators(args.examples)
    seconds = args.minutes * 60 / args.seeds
    names = ", ".join(op.name for op in operators) or "none (no examples/ directory found)"
    console.print(f"{args.seeds} seeds, {seconds:.1f} s of workload each; operators: {names}")
    results = asyncio.run(_soak(args, operators, seconds))
    console.print(_table(results))
    for r in results:
        for line in r.differences:
            console.print(f"seed {r.seed}: {line}", markup=False)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    bad = [r.seed for r in results if not r.converged]
    summary = f"{len(results) - len(bad)}/{len(results)} seeds converged"
    console.print(summary + (f"; not: {', '.join(map(str, bad))}" if bad else ""), markup=False)
    return 1 if bad else 0


async def _soak(
    args: argparse.Namespace, operators: list[Operator], seconds: float
) -> list[FaultMixResult]:
    results = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        mix = FaultMix.lasting(
            seed,
            seconds,
            fault_rate=args.fault_rate,
            operators=operators,
            converge_timeout=args.converge_timeout,
        )
        result = await mix.run()
        verdict = "converged" if result.converged else "NOT CONVERGED"
        faults = sum(result.faults.values())
        print(f"seed {seed}: {result.steps} steps, {faults} faults, {verdict}", flush=True)
        results.append(result)
    return results


def _table(results: list[FaultMixResult]) -> object:
    from rich.table import Table

    t = Table(title="aioinformer soak: seeded fault mixes")
    for col in ("seed", "steps", "faults injected", "relists", "watch restarts", "workload s"):
        t.add_column(col, justify="left" if col == "faults injected" else "right")
    t.add_column("converge s", justify="right")
    t.add_column("result")
    totals: dict[str, int] = dict.fromkeys(FaultMix.fault_kinds, 0)
    for r in results:
        for kind, n in r.faults.items():
            totals[kind] = totals.get(kind, 0) + n
        faults = ", ".join(f"{k} {n}" for k, n in r.faults.items()) or "-"
        verdict = "[green]converged[/]" if r.converged else "[red]NOT converged[/]"
        t.add_row(
            str(r.seed), str(r.steps), faults, str(r.relists), str(r.watch_restarts),
            f"{r.workload_seconds:.1f}", f"{r.converge_seconds:.1f}", verdict,
        )  # fmt: skip
    all_faults = ", ".join(f"{k} {n}" for k, n in totals.items())
    t.add_row(
        "all", str(sum(r.steps for r in results)), all_faults,
        str(sum(r.relists for r in results)), str(sum(r.watch_restarts for r in results)),
        "", "", f"{sum(r.converged for r in results)}/{len(results)}",
    )  # fmt: skip
    return t
