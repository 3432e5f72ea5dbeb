"""``python -m aioinformer soak``: many seeded fault mixes, one summary table (with
``--simulation``, seeds of the deterministic simulation: :mod:`aioinformer._cli.simulate`).

Each seed runs one :class:`~aioinformer.testing.FaultMix` on a fresh KubeSim, one after
the other; ``--minutes`` of workload are split equally across the seeds. A line per seed
as it ends, then a table (one row per seed and a total, fitted to the terminal), the
faults injected by kind (wrapped: a line or two), and for each seed that did not converge
its faults and differences. Exit status 1 if any seed did not converge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from aioinformer._cli import simulate
from aioinformer._cli.helpformat import PROG, add_command
from aioinformer._cli.tables import Column, fit_table, print_table, wrap_list
from aioinformer._core.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from aioinformer.testing._faultmix import FaultMixResult, Operator

__all__ = ["SOAK_COLUMNS", "add_soak_parser", "run_soak", "soak_report"]

_DESCRIPTION = """
Run seeded fault mixes against KubeSim, one seed after the other, each on a fresh
KubeSim: a workload of writes with faults injected at random (dropped and stalled
watches, expired history, compaction, restarts, 429/500/504 answers, latency, cut
responses), then a wait until every informer and operator has converged on what the
server holds. The same seed gives the same plan.

--minutes is the total workload time, split equally across the seeds (40 steps per
second, at least 20 per seed); setting up and converging (up to --converge-timeout
seconds per seed) come on top. The example operators (PodSet, NodeAgent) run too when
the examples/ directory is found.

The output is a line per seed, a table (steps, faults injected, relists, watch
restarts, workload and convergence seconds, the result), the faults by kind, and the
differences of the seeds that did not converge. The exit status is 1 if any seed did
not converge, 0 otherwise.
"""

_EXAMPLES = """
With --simulation, each seed is one run of the deterministic simulation: an operator's
replicas (the reference operator, or --target's) under leader election or sharding,
against KubeSim on a virtual clock, with a seeded schedule of faults between requests and
answers (lost answers, cut watches, Lease writes and deletions by others, frozen replicas,
clock-rate differences, duplicate identities, non-Lease answers), its invariants checked
at every step (one writer per key, no duplicate child, no reconcile on a snapshot older
than the replica's last write, every object reconciled). Every broken seed prints the
command that replays it; the exit status is 1 if any seed broke an invariant.

examples:
  python -m aioinformer soak --seeds 3 --minutes 1
  python -m aioinformer soak --seeds 20 --first-seed 100 --json soak.json
  python -m aioinformer soak --simulation --seeds 2000
  python -m aioinformer soak --simulation --seed 417
  python -m aioinformer soak --simulation --seed 417 --without freeze,misroute
  python -m aioinformer soak --simulation --target op.py:build --seeds 500
"""


def add_soak_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``soak``."""
    p = add_command(
        sub,
        "soak",
        help="run seeded fault mixes against KubeSim and print a summary",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
    )
    p.add_argument("--seeds", type=int, metavar="N",
                   help="number of seeds (default: 10, with --simulation "
                        f"{simulate.DEFAULT_SEEDS})")  # fmt: skip
    p.add_argument(
        "--first-seed", type=int, default=1, metavar="SEED", help="seeds are SEED..SEED+N-1"
    )
    p.add_argument("--minutes", type=float, default=5.0, help="total workload time, all seeds")
    p.add_argument("--fault-rate", type=float, default=0.1, metavar="RATE",
                   help="faults per step, 0 to 1")  # fmt: skip
    p.add_argument("--converge-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="how long each seed may take to converge")  # fmt: skip
    p.add_argument("--examples", metavar="DIR",
                   help="the example operators (default: a checkout's examples/)")  # fmt: skip
    p.add_argument("--no-operators", action="store_true",
                   help="run informers and handlers only, no operators")  # fmt: skip
    p.add_argument("--json", metavar="PATH", help="also write the results here as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings")
    simulate.add_simulation_options(p)


def run_soak(args: argparse.Namespace) -> int:
    """Run the seeds, print the report; 0 when every seed converged, 1 otherwise, 2 on a
    bad argument or an example that is not one (one line)."""
    from rich.console import Console

    from aioinformer.testing._faultmix import example_operators

    if args.simulation:
        return simulate.run(args)
    if args.seeds is None:
        args.seeds = 10
    console = Console()
    if args.seeds < 1 or args.minutes <= 0 or not 0 <= args.fault_rate <= 1:
        print(
            f"{PROG} soak: need --seeds >= 1, --minutes > 0 and 0 <= --fault-rate <= 1",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.CRITICAL)
    try:
        operators = [] if args.no_operators else example_operators(args.examples)
    except ConfigError as exc:
        print(f"{PROG} soak: {exc}", file=sys.stderr)
        return 2
    seconds = args.minutes * 60 / args.seeds
    names = ", ".join(op.name for op in operators) or "none (no examples/ directory found)"
    console.print(
        f"{args.seeds} seeds, {seconds:.1f} s of workload each; operators: {names}",
        markup=False,
    )
    results = asyncio.run(_soak(args, operators, seconds))
    soak_report(console, results)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0 if all(r.converged for r in results) else 1


async def _soak(
    args: argparse.Namespace, operators: list[Operator], seconds: float
) -> list[FaultMixResult]:
    from aioinformer.testing._faultmix import FaultMix

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


SOAK_COLUMNS = (
    Column("seed"),
    Column("steps", priority=2),
    Column("faults injected", short="faults"),
    Column("relists", priority=1),
    Column("watch restarts", priority=1, short="restarts"),
    Column("workload s", priority=3, short="work s"),
    Column("converge s", priority=2, short="conv s"),
    Column("result", justify="left"),
)
"""The columns of ``soak``'s table, most important at priority 0 (always shown)."""


def soak_report(console: Console, results: list[FaultMixResult]) -> None:
    """Print the table, the faults by kind, the seeds that did not converge (their faults
    and differences) and the verdict line, each fitted to the console's width."""
    print_table(console, _table(console, results))
    for line in wrap_list("faults by kind", _by_kind(results), console.width):
        console.print(line, markup=False, highlight=False)
    for r in results:
        if r.converged:
            continue
        for line in wrap_list(f"seed {r.seed} faults", _by_kind([r]), console.width):
            console.print(line, markup=False, highlight=False)
        for line in r.differences:
            console.print(f"seed {r.seed}: {line}", markup=False, highlight=False)
    bad = [r.seed for r in results if not r.converged]
    summary = f"{len(results) - len(bad)}/{len(results)} seeds converged"
    console.print(summary + (f"; not: {', '.join(map(str, bad))}" if bad else ""), markup=False)


def _by_kind(results: list[FaultMixResult]) -> list[str]:
    """``kind=N`` for every kind injected at least once, most frequent first."""
    totals: dict[str, int] = {}
    for r in results:
        for kind, n in r.faults.items():
            totals[kind] = totals.get(kind, 0) + n
    ranked = sorted((kv for kv in totals.items() if kv[1]), key=lambda kv: -kv[1])
    return [f"{kind}={n}" for kind, n in ranked]


def _table(console: Console, results: list[FaultMixResult]) -> Table:
    from rich.text import Text

    rows: list[list[str | Text]] = [
        [
            str(r.seed), str(r.steps), str(sum(r.faults.values())), str(r.relists),
            str(r.watch_restarts), f"{r.workload_seconds:.1f}", f"{r.converge_seconds:.1f}",
            Text("converged", style="green") if r.converged else Text("NOT converged", style="red"),
        ]
        for r in results
    ]  # fmt: skip
    rows.append(
        [
            "all", str(sum(r.steps for r in results)),
            str(sum(sum(r.faults.values()) for r in results)),
            str(sum(r.relists for r in results)), str(sum(r.watch_restarts for r in results)),
            "", "", f"{sum(r.converged for r in results)}/{len(results)}",
        ]
    )  # fmt: skip
    return fit_table(console, SOAK_COLUMNS, rows, title="aioinformer soak: seeded fault mixes")
