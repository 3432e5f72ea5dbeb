"""The contention scenario's side-by-side table (``demo``, ``bench/contention.py``) and
what its columns mean.

One row per configuration. The columns are chosen to fit the terminal (:mod:`tables`):
staleness p99, FIFO peak and the operators' mistakes always stay; the other figures go
first when it is narrow. :func:`column_notes` explains the columns a table shows, printed
under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer._cli.tables import Column, fit_table
from aioinformer._harness.contention import ConfigResult, ContentionReport

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["CONTENTION_COLUMNS", "column_notes", "report_table"]

CONTENTION_COLUMNS: tuple[tuple[Column, str], ...] = (
    (Column("configuration", justify="left"), "the store and how its readers read (see --help)"),
    (
        Column("staleness p99", short="stale p99"),
        "from the sim's commit of a pod change to the first cache state readers can see "
        "holding it, 99th percentile over the load",
    ),
    (
        Column("FIFO peak"),
        "the most deltas the watcher had queued that the store had not applied yet",
    ),
    (
        Column("PodSet 409s on/off", short="409s on/off"),
        "creates the PodSet operator sent for pods that existed already (409 "
        "AlreadyExists), with its freshness protection on / off",
    ),
    (
        Column("NodeAgent extra on/off", short="extra on/off"),
        "pods the NodeAgent operator made beyond one per node (a duplicate), with its "
        "freshness protection on / off",
    ),
    (Column("read p99", priority=1), "one reader call (one owner's pods), 99th percentile"),
    (
        Column("writer/s", priority=2),
        "deltas the store applied per second of load (the sim offers --rate writes/s)",
    ),
    (Column("staleness max", short="max", priority=3), "the largest staleness of the load"),
    (Column("RSS", priority=3), "resident memory of the informer process at the end"),
    (Column("staleness p50", short="p50", priority=4), "the median staleness"),
    (Column("read p50", priority=5), "one reader call, median"),
    (Column("reads", priority=5), "reader calls completed during the load"),
)
"""Each column of :func:`report_table` and what it means."""


def _duration(seconds: float) -> str:
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms" if seconds >= 0.001 else f"{seconds * 1e6:.0f} us"


def _pair(values: dict[str, int], kind: str) -> str:
    if not values:
        return "-"
    return f"{values.get(f'{kind}/protected', 0)} / {values.get(f'{kind}/unprotected', 0)}"


def _row(r: ConfigResult) -> list[str]:
    """The cells of ``r``, in :data:`CONTENTION_COLUMNS` order."""
    return [
        r.config,
        _duration(r.staleness_p99),
        f"{r.fifo_peak:,}",
        _pair(r.conflicts_409, "podset"),
        _pair(r.extra_pods, "nodeagent"),
        _duration(r.reader_latency_p99),
        f"{r.writer_throughput:,.0f}",
        _duration(r.staleness_max),
        f"{r.rss_bytes / 2**20:,.0f} MiB",
        _duration(r.staleness_p50),
        _duration(r.reader_latency_p50),
        f"{r.reader_calls:,}",
    ]


def report_table(report: ContentionReport, console: Console, width: int | None = None) -> Table:
    """One row per configuration, with the columns that fit ``width`` (default: the
    console's)."""
    o = report.options
    title = (
        f"contention scenario: {report.pods:,} pods "
        f"({o['owners']} owners x {o['pods_per_owner']}), "
        f"{o['readers']} readers, {o['rate']:.0f} writes/s offered for {o['duration']:.0f} s"
    )
    columns = [c for c, _ in CONTENTION_COLUMNS]
    rows = [_row(r) for r in report.results]
    return fit_table(console, columns, rows, title=title, width=width)


def column_notes(table: Table) -> list[str]:
    """One line per column ``table`` shows: its header and what it means."""
    meaning = {name: m for c, m in CONTENTION_COLUMNS for name in (c.header, c.short)}
    shown = [str(col.header) for col in table.columns]
    return [f"  {header}: {meaning[header]}" for header in shown if header in meaning]
