"""``python -m aioinformer demo``: the contention scenario on an embedded KubeSim, live.

Runs :func:`aioinformer._harness.contention.run_contention` at a scale that finishes in about
a minute on 2 cores (flags scale it up to the incident's 200 x 1000), shows each
configuration's FIFO depth and staleness live (on a terminal; piped, one line per phase),
and ends with the side-by-side table, what its columns mean, and the path of the PNG it
wrote. The example operators run too when the ``examples/`` of a source checkout is found
(or given with ``--examples``). ``bench/contention.py`` is the same program with
full-scale defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aioinformer._cli.extras import DEMO_MODULES, require
from aioinformer._cli.helpformat import PROG, add_command
from aioinformer._harness.contention import (
    CONFIGURATIONS,
    ContentionOptions,
    ContentionReport,
    run_contention,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["add_contention_arguments", "add_demo_parser", "options_from_args", "run_demo"]

DEMO_SCALE: dict[str, Any] = {
    "owners": 20,
    "pods_per_owner": 1000,
    "readers": 4,
    "rate": 1000.0,
    "duration": 8.0,
    "nodes": 10,
    "podsets": 2,
    "replicas": 5,
    "locked_batch": 1,
}
"""The demo's defaults: about a minute on 2 cores."""

_DESCRIPTION = """
The contention scenario (kubernetes/kubernetes#130767) on KubeSim, in about a minute on 2 cores.

KubeSim runs in its own process with StatefulSet-like pods and a kubelet making status
writes; four informer processes follow it in turn, each with 4 readers fetching one
owner's pods back to back:

  locked+scan     a dict behind a read/write lock, readers list every pod
                  under the lock, the writer takes the lock per delta
                  (the incident's client-go)
  locked+index    the same store, readers use the controller index
                  (upstream's fix)
  snapshot+scan   immutable snapshots, readers scan every pod (no lock)
  snapshot+index  immutable snapshots and the index (this project)

and the example operators (PodSet, NodeAgent) run with and without their freshness
protection on the same pods informer. It ends with a table, what its columns mean, and
a plot (one panel per metric).
"""

_EPILOG = """
The full scale is bench/contention.py: 200 owners x 1000 pods, 2000 writes/s for 60 s per
configuration (about 10 minutes on 2 cores, 2 GiB for KubeSim).

examples:
  python -m aioinformer demo
  python -m aioinformer demo --owners 200 --pods 1000 --duration 60
"""


def default_examples_dir() -> str | None:
    """``examples/`` next to the package in a source checkout (editable install), if any."""
    candidate = Path(__file__).resolve().parents[2] / "examples"
    return str(candidate) if (candidate / "podset.py").is_file() else None


_NUMBERS: tuple[tuple[str, str, type, str], ...] = (
    ("--owners", "owners", int, "StatefulSet-like owners"),
    ("--pods", "pods_per_owner", int, "pods per owner"),
    ("--readers", "readers", int, "readers per informer"),
    ("--rate", "rate", float, "sim writes per second"),
    ("--duration", "duration", float, "seconds of load per configuration"),
    ("--nodes", "nodes", int, "nodes in the cluster"),
    ("--podsets", "podsets", int, "PodSets per operator"),
    ("--replicas", "replicas", int, "replicas per PodSet"),
    (
        "--locked-batch",
        "locked_batch",
        int,
        "deltas the locked store applies per write lock: 1 as client-go's DeltaFIFO in the "
        "incident, 1000 as RealFIFO PopBatch since 1.33",
    ),
)
"""The scenario's numeric flags: flag, key of the defaults, type, help."""


def add_contention_arguments(p: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """The scenario's flags (shared by ``demo`` and ``bench/contention.py``); every help text
    shows its default."""
    for flag, key, kind, text in _NUMBERS:
        p.add_argument(flag, type=kind, default=defaults[key], help=text)
    p.add_argument(
        "--configs",
        default=",".join(CONFIGURATIONS),
        help="comma-separated configurations to run, in order",
    )
    p.add_argument(
        "--examples",
        metavar="DIR",
        default=default_examples_dir(),
        help="the examples/ directory with the operators",
    )
    p.add_argument("--no-operators", action="store_true", help="do not run the example operators")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.add_argument(
        "--plot",
        metavar="PATH.png",
        default="aioinformer-demo.png",
        help="where to write the plot (needs matplotlib)",
    )


def options_from_args(args: argparse.Namespace) -> ContentionOptions:
    """:class:`ContentionOptions` from parsed :func:`add_contention_arguments` flags."""
    return ContentionOptions(
        owners=args.owners,
        pods_per_owner=args.pods,
        readers=args.readers,
        rate=args.rate,
        duration=args.duration,
        nodes=args.nodes,
        configurations=tuple(c.strip() for c in args.configs.split(",") if c.strip()),
        locked_batch=args.locked_batch,
        podsets=args.podsets,
        replicas=args.replicas,
        examples_dir=None if args.no_operators else args.examples,
    )


def add_demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``."""
    p = add_command(
        sub,
        "demo",
        help="run the contention scenario (kubernetes#130767) on an embedded KubeSim",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_contention_arguments(p, DEMO_SCALE)


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

        table = Table(title=self.setup or "contention scenario: live")
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


async def _run(options: ContentionOptions, console: Console) -> ContentionReport:
    from rich.live import Live

    if not console.is_terminal:  # piped: one line per phase, so a log shows it is alive
        return await run_contention(options, _PhaseLines(console))
    view = _LiveView(list(options.configurations))
    with Live(view.render(), console=console, refresh_per_second=4, transient=True) as live:

        def progress(config: str, info: dict[str, Any]) -> None:
            view.update(config, info)
            live.update(view.render())

        return await run_contention(options, progress)


class _PhaseLines:
    """Progress as plain lines: one when a configuration (or the setup) enters a phase."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.phase: dict[str, str] = {}

    def __call__(self, config: str, info: dict[str, Any]) -> None:
        step = info.get("step", "load")
        if self.phase.get(config) == step:
            return
        self.phase[config] = step
        if config == "setup":
            self.console.print(f"setup: creating {info.get('pods', 0):,} pods in KubeSim")
        else:
            self.console.print(f"{config}: {step}")


def command_line() -> str:
    """How this process was started, as a user would type it."""
    first = sys.argv[0]
    program = "python -m aioinformer" if first.endswith("__main__.py") else f"python {first}"
    return " ".join([program, *(shlex.quote(a) for a in sys.argv[1:])])


def run_demo(args: argparse.Namespace, console: Console | None = None) -> int:
    """Run the scenario from parsed flags; print the table, write --json and the plot.
    Exit status 0; 130 when interrupted (Ctrl-C), in one line."""
    require(*DEMO_MODULES)  # (not after a minute of work: the plot is drawn at the end)
    from rich.console import Console

    from aioinformer._cli.contention_table import column_notes, report_table
    from aioinformer._cli.tables import print_table
    from aioinformer._harness.contention_report import plot_report

    console = console or Console()
    options = options_from_args(args)
    if options.examples_dir is None and not args.no_operators:
        console.print("examples/ not found: running without the example operators")
    try:
        report = asyncio.run(_run(options, console))
    except KeyboardInterrupt:  # Ctrl-C: what it started is stopped (asyncio.run cancelled it)
        print(f"{PROG} demo: interrupted, before the report", file=sys.stderr)
        return 130
    report.command = command_line()
    table = report_table(report, console)
    print_table(console, table)  # (piped: every column, whole)
    console.print("The columns:")
    for line in column_notes(table):  # wrapped to the terminal, continued indented
        console.print(textwrap.fill(line, console.width, subsequent_indent="    "), markup=False)
    if args.json:
        Path(args.json).write_bytes(report.to_json())
        console.print(f"report written to {args.json}")
    console.print(f"plot written to {plot_report(report, args.plot)}")
    return 0
