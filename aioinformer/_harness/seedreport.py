"""Showing a :class:`SeedReport`: the side-by-side table (rich) and the plot (matplotlib)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from aioinformer._harness.seed import ConfigResult, SeedReport

__all__ = ["plot_report", "report_table"]


def _ms(seconds: float) -> str:
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms" if seconds >= 0.001 else f"{seconds * 1e6:.0f} us"


def _pair(values: dict[str, int], kind: str) -> str:
    if not values:
        return "-"
    return f"{values.get(f'{kind}/protected', 0)} / {values.get(f'{kind}/unprotected', 0)}"


_COLUMNS = (
    "configuration",
    "staleness p50",
    "p99",
    "max",
    "FIFO peak",
    "writer/s",
    "read p50",
    "read p99",
    "reads",
    "PodSet 409s on/off",
    "NodeAgent extra on/off",
    "RSS",
)
_COMPACT = ("configuration", "p99", "FIFO peak", "read p99", "PodSet 409s on/off")
_COMPACT_TITLES = {"p99": "staleness p99", "PodSet 409s on/off": "409s, extra on/off"}


def report_table(report: SeedReport, *, compact: bool = False) -> Table:
    """One row per configuration: staleness, FIFO peak, writer and reader figures, the
    operators' 409s and extra pods (protected / unprotected), RSS. ``compact``: only
    staleness p99, FIFO peak, reader p99 and the operators' figures (fits 80 columns)."""
    o = report.options
    title = (
        f"seed scenario: {report.pods:,} pods ({o['owners']} owners x {o['pods_per_owner']}), "
        f"{o['readers']} readers, {o['rate']:.0f} writes/s offered for {o['duration']:.0f} s"
    )
    table = Table(title=title)
    names = _COMPACT if compact else _COLUMNS
    for name in names:
        title = _COMPACT_TITLES.get(name, name) if compact else name
        table.add_column(title, justify="left" if name == "configuration" else "right")
    for r in report.results:
        row = dict(zip(_COLUMNS, _row(r), strict=True))
        if compact:  # PodSet 409s and NodeAgent extra pods, each protected / unprotected
            row["PodSet 409s on/off"] = (
                f"{_pair(r.conflicts_409, 'podset')}, {_pair(r.extra_pods, 'nodeagent')}"
            )
        table.add_row(*(row[name] for name in names))
    return table


def _row(r: ConfigResult) -> list[str]:
    return [
        r.config,
        _ms(r.staleness_p50),
        _ms(r.staleness_p99),
        _ms(r.staleness_max),
        f"{r.fifo_peak:,}",
        f"{r.writer_throughput:,.0f}",
        _ms(r.reader_latency_p50),
        _ms(r.reader_latency_p99),
        f"{r.reader_calls:,}",
        _pair(r.conflicts_409, "podset"),
        _pair(r.extra_pods, "nodeagent"),
        f"{r.rss_bytes / 2**20:,.0f} MiB",
    ]


def plot_report(report: SeedReport, path: str | Path) -> Path:
    """FIFO depth and staleness over time, one line per configuration, log scale; writes
    a PNG to ``path``. Needs matplotlib (``pip install aioinformer[demo]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for r in report.results:
        if r.fifo_depth:
            t, depth = zip(*r.fifo_depth, strict=True)
            top.plot(t, [max(d, 0.8) for d in depth], label=r.config)
        if r.staleness_series:
            t, stale = zip(*r.staleness_series, strict=True)
            bottom.plot(t, [max(s, 1e-4) for s in stale], label=r.config)
    top.set_yscale("log")
    top.set_ylabel("FIFO depth")
    top.legend(loc="upper left", fontsize="small")
    bottom.set_yscale("log")
    bottom.set_ylabel("staleness (s)")
    bottom.set_xlabel("seconds since the load started")
    o = report.options
    fig.suptitle(f"{report.pods:,} pods, {o['readers']} readers, {o['rate']:.0f} writes/s offered")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
