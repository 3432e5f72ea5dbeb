"""``python -m aioinformer demo``: the seed scenario on an embedded KubeSim, with live progress.

Runs :func:`aioinformer._harness.seed.run_seed` at a scale that finishes in about a minute on 2
cores (flags scale it up to the seed's 200 x 1000), shows each configuration's FIFO depth
and staleness live, and ends with the side-by-side table and the path of the PNG it wrote.
The example operators run too when the ``examples/`` of a source checkout is found (or
given with ``--examples``). ``bench/seed.py`` is the same program with full-scale defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aioinformer._cli.helpformat import add_command
from aioinformer._harness.seed import CONFIGURATIONS, SeedOptions, SeedReport, run_seed

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["add_demo_parser", "add_seed_arguments", "options_from_args", "run_demo"]

DEMO_SCALE: dict[str, Any] = {
    "owners": 20,
    "pods_per_owner": 1000,
    "readers": 4,
    "rate": 1000.0,
    "duration": 8.0,
    "nodes": 10,
    "podsets": 2,
    "replicas": 5,
}
"""The demo's defaults: about a minute on 2 cores."""


def default_examples_dir() -> str | None:
    """``examples/`` next to the package in a source checkout (editable install), if any."""
    candidate = Path(__file__).resolve().parents[2] / "examples"
    return str(candidate) if (candidate / "podset.py").is_file() else None


def add_seed_arguments(p: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """The scenario's flags (shared by ``demo`` and ``bench/seed.py``)."""
    d = defaults
    p.add_argument("--owners", type=int, default=d["owners"], help="StatefulSet-like owners")
    p.add_argument("--pods", type=int, default=d["pods_per_owner"], help="pods per owner")
    p.add_argument("--readers", type=int, default=d["readers"], help="readers per informer")
    p.add_argument("--rate", type=float, default=d["rate"], help="sim writes per second")
    p.add_argument("--duration", type=float, default=d["duration"], help="seconds of load")
    p.add_argument("--nodes", type=int, default=d["nodes"], help="nodes in the cluster")
    p.add_argument(
        "--configs",
        default=",".join(CONFIGURATIONS),
        help=f"comma-separated, from {', '.join(CONFIGURATIONS)}",
    )
    p.add_argument("--podsets", type=int, default=d["podsets"], help="PodSets per operator")
    p.add_argument("--replicas", type=int, default=d["replicas"], help="replicas per PodSet")
    p.add_argument("--examples", metavar="DIR", default=default_examples_dir(), help="examples/")
    p.add_argument("--no-operators", action="store_true", help="do not run the example operators")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.add_argument("--plot", metavar="PATH.png", help="write the plot (needs matplotlib)")


def options_from_args(args: argparse.Namespace) -> SeedOptions:
    """:class:`SeedOptions` from parsed :func:`add_seed_arguments` flags."""
    return SeedOptions(
        owners=args.owners,
        pods_per_owner=args.pods,
        readers=args.readers,
        rate=args.rate,
        duration=args.duration,
        nodes=args.nodes,
        configurations=tuple(c.strip() for c in args.configs.split(",") if c.strip()),
        podsets=args.podsets,
        replicas=args.replicas,
        examples_dir=None if args.no_operators else args.examples,
    )


_DESCRIPTION = """
Run the seed scenario of kubernetes#130767 on an embedded KubeSim, with live progress:
StatefulSet-like pods, kubelet status writes streaming in, and four caches side by side
(a dict behind a read/write lock and immutable snapshots, each read by readers that scan
every pod or use an index). It finishes in about a minute on 2 cores, ends with the
side-by-side table and writes a plot. The example operators run too when the examples/
directory of a source checkout is found (or given with --examples). bench/seed.py is the
same program with full-scale defaults.
"""

_EPILOG = """
examples:
  python -m aioinformer demo
  python -m aioinformer demo --owners 200 --pods 1000 --duration 60
"""


def add_demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``."""
    p = add_command(
        sub,
        "demo",
        help="run the seed scenario (kubernetes#130767) on an embedded KubeSim",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_seed_arguments(p, DEMO_SCALE)


class _LiveView:
    """What the live display shows: one row per configuration, updated from progress."""

    def __init__(self, configs: tuple[str, ...] | list[str]) -> None:
        self.rows: dict[str, dict[str, Any]] = {c: {"step": "waiting"} for c in configs}
        self.setup = "starting KubeSim"

    def update(self, config: str, info: dict[str, Any]) -> None:
        if config == "setup":
            self.setup = f"creating {info.get('pods', 0):,} pods in KubeSim"
            return
        row = self.rows.setdefault(config, {})
        if "step" in info:
            row["step"] = info["step"]
        else:
            row.update(info, step="load")
        self.setup = ""

    def render(self) -> Table:
        from rich.table import Table

        table = Table(title=self.setup or "seed scenario: live")
        for name in ("configuration", "step", "t", "FIFO depth", "staleness", "applied", "reads"):
            table.add_column(name, justify="left" if name in ("configuration", "step") else "right")
        for config, row in self.rows.items():
            table.add_row(
                config,
                row.get("step", ""),
                f"{row['t']:.0f} s" if "t" in row else "",
                f"{row['fifo']:,}" if "fifo" in row else "",
                f"{row['staleness'] * 1000:,.0f} ms" if "staleness" in row else "",
                f"{row['applied']:,}" if "applied" in row else "",
                f"{row['reads']:,}" if "reads" in row else "",
            )
        return table


async def _run(options: SeedOptions, console: Console) -> SeedReport:
    from rich.live import Live

    view = _LiveView(list(options.configurations))
    with Live(view.render(), console=console, refresh_per_second=4, transient=True) as live:

        def progress(config: str, info: dict[str, Any]) -> None:
            view.update(config, info)
            live.update(view.render())

        return await run_seed(options, progress)


def command_line() -> str:
    """How this process was started, as a user would type it."""
    first = sys.argv[0]
    program = "python -m aioinformer" if first.endswith("__main__.py") else f"python {first}"
    return " ".join([program, *(shlex.quote(a) for a in sys.argv[1:])])


def run_demo(args: argparse.Namespace, console: Console | None = None) -> int:
    """Run the scenario from parsed flags; print the table, write --json and the plot."""
    from rich.console import Console

    from aioinformer._harness.seedreport import plot_report, report_table

    console = console or Console()
    options = options_from_args(args)
    if options.examples_dir is None and not args.no_operators:
        console.print("examples/ not found: running without the example operators")
    report = asyncio.run(_run(options, console))
    report.command = command_line()
    console.print(report_table(report, compact=console.width < 120))
    if args.json:
        Path(args.json).write_bytes(report.to_json())
        console.print(f"report written to {args.json}")
    plot_path = args.plot or "aioinformer-demo.png"
    try:
        written = plot_report(report, plot_path)
    except ImportError:
        console.print("no plot: matplotlib is not installed (pip install 'aioinformer\\[demo]')")
    else:
        console.print(f"plot written to {written}")
    return 0
