"""The plot of a :class:`ContentionReport` (matplotlib); the table is the command line's
(``aioinformer._cli.contention_table``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aioinformer._harness.contention import ConfigResult, ContentionReport

__all__ = ["plot_report"]


_COLORS = {
    "locked+scan": "#d62728",
    "locked+index": "#ff9896",
    "snapshot+scan": "#1f77b4",
    "snapshot+index": "#2ca02c",
}


def plot_report(report: ContentionReport, path: str | Path) -> Path:
    """One figure, a panel per metric on linear scales: FIFO depth and staleness over the
    load, one line per configuration, the worst configuration's peak annotated; then the
    operators' 409s and extra pods with and without protection; a caption saying what to
    look at. Writes a PNG to ``path``. Needs matplotlib (``pip install aioinformer[demo]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = sorted(report.results, key=lambda r: r.config.startswith("snapshot"))
    fig, (depth_ax, stale_ax, ops_ax) = plt.subplots(
        3, 1, figsize=(10, 10), gridspec_kw={"height_ratios": [3, 3, 2]}
    )
    for r in results:  # the snapshot store's lines last: on top, where they lie flat
        color = _COLORS.get(r.config)
        if r.fifo_depth:
            times, depths = zip(*r.fifo_depth, strict=True)
            depth_ax.plot(times, depths, label=r.config, color=color, linewidth=2)
        if r.lag_series:
            times, lags = zip(*r.lag_series, strict=True)
            stale_ax.plot(times, lags, label=r.config, color=color, linewidth=2)
    worst = max(report.results, key=lambda r: r.staleness_p99, default=None)
    if worst is not None:
        _annotate_peak(depth_ax, worst.fifo_depth, f"{worst.config}: {{:,.0f}} deltas waiting")
        _annotate_peak(
            stale_ax, worst.lag_series, f"{worst.config}: the cache {{:.2f}} s behind the server"
        )
    depth_ax.set_ylabel("FIFO depth (deltas)")
    depth_ax.set_ylim(bottom=0)
    depth_ax.set_xlabel("seconds since the load started (then the drain)")
    depth_ax.legend(loc="upper left", fontsize="small")
    stale_ax.set_ylabel("cache behind the server (s)")
    stale_ax.set_ylim(bottom=0)
    stale_ax.set_xlabel("seconds since the load started (then the drain)")
    _plot_operators(ops_ax, report.results)
    o = report.options
    fig.suptitle(
        f"{report.pods:,} pods, {o['readers']} readers, {o['rate']:.0f} writes/s offered "
        f"for {o['duration']:.0f} s per configuration"
    )
    worst_name = worst.config if worst is not None else "the locked store"
    caption = (
        f"What to look at: {worst_name} (red) falls behind: its FIFO fills and its readers act "
        "on pods seconds old,\nwhile the snapshot store's lines (blue, green) stay flat near "
        "zero. Below: the operators without their freshness\nprotection (hatched) create "
        "pods that exist already (409s) and duplicate pods; protected, they make none."
    )
    fig.text(0.01, 0.005, caption, fontsize=9, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _annotate_peak(ax: Any, series: Sequence[tuple[float, float]], text: str) -> None:
    """An arrow to the highest point of ``series``, labelled ``text`` (formatted with it)."""
    if series:
        t, peak = max(series, key=lambda s: s[1])
        ax.annotate(
            text.format(peak), xy=(t, peak), xytext=(0.35, 0.85), textcoords="axes fraction",
            arrowprops={"arrowstyle": "->"}, fontsize=10,
        )  # fmt: skip


def _plot_operators(ax: object, results: list[ConfigResult]) -> None:
    """Grouped bars: per configuration, PodSet 409s and NodeAgent extra pods, protected
    (solid) and unprotected (hatched)."""
    import matplotlib.axes

    assert isinstance(ax, matplotlib.axes.Axes)
    bars = (
        ("PodSet 409s, protected", "conflicts_409", "podset/protected", "", "#9467bd"),
        ("PodSet 409s, unprotected", "conflicts_409", "podset/unprotected", "//", "#9467bd"),
        ("NodeAgent extra, protected", "extra_pods", "nodeagent/protected", "", "#8c564b"),
        ("NodeAgent extra, unprotected", "extra_pods", "nodeagent/unprotected", "//", "#8c564b"),
    )
    width = 0.2
    for i, (label, attr, key, hatch, color) in enumerate(bars):
        values = [getattr(r, attr).get(key, 0) for r in results]
        xs = [n + (i - 1.5) * width for n in range(len(results))]
        ax.bar(xs, values, width, label=label, hatch=hatch, color=color,
               edgecolor="black", alpha=0.8)  # fmt: skip
        for x, v in zip(xs, values, strict=True):
            ax.text(x, v, str(v), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(results)), [r.config for r in results])
    ax.set_ylabel("operator mistakes")
    ax.legend(loc="upper right", fontsize="x-small")
