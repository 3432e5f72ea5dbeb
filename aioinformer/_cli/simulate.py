"""``python -m aioinformer soak --simulation``: seeds of the deterministic simulation.

Each seed is one :class:`~aioinformer.testing.Simulation` of an operator's replicas (the
reference operator, or the user's with ``--target``): a line for every seed that broke an
invariant (its figures, its first violations, the command that replays it), a progress
line every ``PROGRESS_EVERY`` seeds, then a summary (seeds broken per invariant, the
totals, fault steps played by kind). ``--seed`` plays one seed and prints every violation.
Exit status 1 if any seed broke an invariant, 2 on a bad argument.

String hashing orders what the library keeps in hash maps (a cache's iteration order), so
a seed replays exactly only under the same ``PYTHONHASHSEED``: the command runs itself
again with ``PYTHONHASHSEED=0`` when the variable is not already ``0``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from aioinformer._cli.helpformat import PROG
from aioinformer._core.errors import ConfigError

if TYPE_CHECKING:
    from aioinformer._runtime.target import BuildFunction
    from aioinformer.testing._sim_workload import Workload
    from aioinformer.testing._simulation import Simulation, SimulationResult

__all__ = ["DEFAULT_SEEDS", "HASH_SEED", "PROGRESS_EVERY", "add_simulation_options", "run"]

DEFAULT_SEEDS = 1000
"""Seeds ``soak --simulation`` runs when ``--seeds`` is not given (about 5 minutes)."""

PROGRESS_EVERY = 100
"""Seeds between two progress lines."""

HASH_SEED = "0"
"""The ``PYTHONHASHSEED`` every simulation seed is played under."""


def add_simulation_options(p: argparse.ArgumentParser) -> None:
    """The options of ``soak --simulation`` (``--seeds``, ``--first-seed``, ``--json`` and
    ``-v`` are soak's own)."""
    g = p.add_argument_group("simulation (with --simulation)")
    g.add_argument("--simulation", action="store_true",
                   help="run the deterministic simulation of an operator's replicas "
                        "instead of fault mixes")  # fmt: skip
    g.add_argument("--seed", type=int, metavar="SEED",
                   help="play this one seed and print every violation (a replay)")  # fmt: skip
    g.add_argument("--target", metavar="FILE.py:build",
                   help="the operator's build function (default: the reference "
                        "operator)")  # fmt: skip
    g.add_argument("--workload", metavar="NAME", default="WORKLOAD",
                   help="the Workload object in --target's module")  # fmt: skip
    g.add_argument("--replicas", type=int, default=3, help="replicas of the operator")
    g.add_argument("--coordination", choices=("leader", "shards", "shard-caches"),
                   help="leader election, sharding, or sharding with sharded caches "
                   "(default: each seed draws leader or shards)")  # fmt: skip
    g.add_argument("--duration", type=float, default=60.0, metavar="SECONDS",
                   help="virtual seconds of workload and faults per seed")  # fmt: skip
    g.add_argument("--settle", type=float, default=120.0, metavar="SECONDS",
                   help="virtual seconds allowed, after them, for every object to be "
                        "reconciled")  # fmt: skip
    g.add_argument("--faults", metavar="KIND,...",
                   help="the fault kinds the seeds may play (default: all)")  # fmt: skip
    g.add_argument("--without", metavar="KIND,...", default="",
                   help="fault kinds removed from each seed's plan (which faults a "
                        "failure needs)")  # fmt: skip
    g.add_argument("--max-steps", type=int, metavar="N",
                   help="event-loop iterations a seed may take, beyond which it is a "
                        "runaway (default: 2000000)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run the seeds (see the module docstring); the exit status."""
    seeds = args.seeds if args.seeds is not None else DEFAULT_SEEDS
    try:
        if seeds < 1:
            raise ConfigError("need --seeds >= 1")
        template = _simulation(args)
    except (ConfigError, ValueError) as exc:
        print(f"{PROG} soak: {exc}", file=sys.stderr)
        return 2
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        env = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
        argv = [sys.executable, "-m", "aioinformer", *args.argv]
        return subprocess.run(argv, env=env, check=False).returncode
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.CRITICAL)
    if args.seed is not None:
        result = _with_seed(template, args.seed).run()
        print(result.report(limit=10_000), flush=True)
        _write_json(args.json, [result])
        return 0 if result.ok else 1
    return _many(args, template, range(args.first_seed, args.first_seed + seeds))


def _simulation(args: argparse.Namespace) -> Simulation:
    from aioinformer.testing._sim_plan import FAULT_KINDS, draw_plan
    from aioinformer.testing._sim_workload import REPLICA_SETS, build_replica_sets
    from aioinformer.testing._simulation import MAX_STEPS, Simulation

    faults = _kinds(args.faults) if args.faults else FAULT_KINDS
    without = _kinds(args.without)
    unknown = (set(faults) | set(without)) - set(FAULT_KINDS)
    if unknown:
        raise ConfigError(f"unknown fault kinds {sorted(unknown)}: choose among {FAULT_KINDS}")
    draw_plan(0, replicas=args.replicas, duration=args.duration, faults=faults)  # checks them
    build: BuildFunction = build_replica_sets
    workload, target = REPLICA_SETS, ""
    if args.target is not None:
        build, workload, target = _operator(args)
    return Simulation(
        build,
        workload,
        0,
        replicas=args.replicas,
        coordination=args.coordination,
        duration=args.duration,
        settle=args.settle,
        faults=faults,
        without=without,
        target=target,
        max_steps=args.max_steps or MAX_STEPS,
    )


def _operator(args: argparse.Namespace) -> tuple[BuildFunction, Workload, str]:
    from aioinformer._runtime.target import load_target
    from aioinformer.testing._sim_workload import Workload

    build = load_target(args.target)
    module = sys.modules[build.__module__]
    workload = getattr(module, args.workload, None)
    if not isinstance(workload, Workload):
        raise ConfigError(
            f"{args.target}: its module has no Workload named {args.workload!r} (--workload)"
        )
    target = f"--target {args.target}"
    if args.workload != "WORKLOAD":
        target += f" --workload {args.workload}"
    return build, workload, target


def _kinds(text: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in text.split(",") if k.strip())


def _with_seed(template: Simulation, seed: int) -> Simulation:
    from dataclasses import replace

    return replace(template, seed=seed)


def _many(args: argparse.Namespace, template: Simulation, seeds: range) -> int:
    started = time.perf_counter()
    results: list[SimulationResult] = []
    broken: Counter[str] = Counter()
    for n, seed in enumerate(seeds, 1):
        result = _with_seed(template, seed).run()
        results.append(result)
        broken.update(result.broken)
        if not result.ok:
            print(result.report(limit=5), flush=True)
        if n % PROGRESS_EVERY == 0 and n < len(seeds):
            bad = sum(not r.ok for r in results)
            print(f"{n}/{len(seeds)} seeds, {bad} broken", flush=True)
    for line in summary(results, time.perf_counter() - started):
        print(line)
    _write_json(args.json, results)
    return 0 if all(r.ok for r in results) else 1


def summary(results: list[SimulationResult], seconds: float) -> list[str]:
    """The summary lines of a run of seeds."""
    bad = [r for r in results if not r.ok]
    by_invariant: Counter[str] = Counter()
    faults: Counter[str] = Counter()
    for r in results:
        by_invariant.update(r.broken)
        faults.update(r.faults)
    virtual = sum(r.virtual_seconds for r in results)
    lines = [
        f"{len(results)} seeds in {seconds:.1f} s ({virtual:.0f} virtual s): "
        f"{len(results) - len(bad)} ok, {len(bad)} broken",
        "  seeds broken, by invariant: "
        + (", ".join(f"{k}={n}" for k, n in sorted(by_invariant.items())) or "none"),
        f"  overlap {sum(r.overlap_seconds for r in results):.1f} s, conflicting writes "
        f"{sum(r.conflicting_writes for r in results)}, duplicate children "
        f"{sum(r.duplicate_children for r in results)}, stale reconciles "
        f"{sum(r.stale_reconciles for r in results)}; "
        f"{sum(r.writes for r in results)} writes, {sum(r.reconciles for r in results)} "
        "reconciles",
        "  fault steps played: " + (", ".join(f"{k}={n}" for k, n in sorted(faults.items()))),
    ]
    if bad:
        lines.append("  replay: " + "; ".join(r.replay for r in bad[:5]))
    return lines


def _write_json(path: str | None, results: list[SimulationResult]) -> None:
    if path:
        Path(path).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
