"""The plot of a :class:`ContentionReport` (matplotlib); the table is the command line's
(``aioinformer._cli.contention_table``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aioinformer._harness.contention import ConfigResult, ContentionReport

__all__ = ["STYLES", "LineStyle", "caption", "plot_report", "report_figure", "style_of"]


_DASHES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dot"}
_MARKERS = {"o": "circles", "s": "squares", "^": "triangles"}


@dataclass(frozen=True, slots=True)
class LineStyle:
    """How one configuration's lines are drawn; the caption names them from it."""

    color: str
    """A named matplotlib colour (``tab:red``); the caption says ``red``."""
    linestyle: str
    """``-``, ``--``, ``:`` or ``-.`` (solid, dashed, dotted, dash-dot)."""
    linewidth: float
    marker: str
    """A marker every few points ("" for none: ``o`` circles, ``s`` squares, ``^``
    triangles)."""
    meaning: str
    """What the configuration is, in the caption."""

    @property
    def colour(self) -> str:
        """The colour's name in the caption."""
        return self.color.removeprefix("tab:")

    def described(self) -> str:
        """``colour, dashes[, markers]``: how the caption names the line."""
        parts = (self.colour, _DASHES[self.linestyle], _MARKERS.get(self.marker, ""))
        return ", ".join(p for p in parts if p)


STYLES: dict[str, LineStyle] = {
    "locked+scan": LineStyle("tab:red", "-", 4.0, "", "the incident's store"),
    "locked+index": LineStyle(
        "tab:orange", "--", 3.0, "o", "the same store read through the index: upstream's fix"
    ),
    "snapshot+scan": LineStyle("tab:blue", ":", 2.2, "", "immutable snapshots, readers scan"),
    "snapshot+index": LineStyle(
        "tab:green", "-.", 1.4, "", "snapshots and the index: this project"
    ),
}
"""Every configuration's lines: each of its own colour and dashes; the wider a line, the
lower it is drawn, so that where lines coincide (near zero, for every store that keeps up)
each one still shows around those drawn over it; ``locked+index``, the comparison a
reader most wants (upstream's fix against the snapshots), has markers too."""

_OTHER = LineStyle("tab:gray", "-", 1.0, "", "")
"""A configuration :data:`STYLES` does not know (drawn last, on top)."""


def style_of(config: str) -> LineStyle:
    """The style of ``config``'s lines."""
    return STYLES.get(config, _OTHER)


def plot_report(report: ContentionReport, path: str | Path) -> Path:
    """Write :func:`report_figure` as a PNG to ``path``. Needs matplotlib (``pip install
    aioinformer[demo]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = report_figure(report)
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def report_figure(report: ContentionReport) -> Any:
    """One matplotlib figure, a panel per metric on linear scales: FIFO depth and
    staleness over the load, one line per configuration (:data:`STYLES`: every line
    visible where they coincide, a legend in each panel), the worst configuration's peak
    annotated; the staleness of the other configurations again at their own scale (the
    worst one's flattens them against zero); the informer's own latency (watcher read ->
    publish, the one logarithmic panel); then the operators' 409s and extra pods
    with and without protection; a caption naming each line and saying what to look at.
    Close it when done (``matplotlib.pyplot.close``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worst = max(report.results, key=lambda r: r.staleness_p99, default=None)
    others = [r for r in report.results if r is not worst and r.lag_series]
    ratios = [3, 3, 3, 3, 2] if others else [3, 3, 3, 2]
    fig, axes = plt.subplots(
        len(ratios), 1, figsize=(10, 1.2 * sum(ratios) + 1.5), gridspec_kw={"height_ratios": ratios}
    )
    depth_ax, stale_ax, *zoom, own_ax, ops_ax = axes
    _plot_series(depth_ax, report.results, "fifo_depth")
    _plot_series(stale_ax, report.results, "lag_series")
    if worst is not None:
        _annotate_peak(depth_ax, worst.fifo_depth, f"{worst.config}: {{:,.0f}} deltas waiting")
        _annotate_peak(
            stale_ax, worst.lag_series, f"{worst.config}: the cache {{:.2f}} s behind the server"
        )
    labels = [(depth_ax, "FIFO depth (deltas)"), (stale_ax, "cache behind the server (s)")]
    if zoom:  # the stores that keep up, at their own scale: the worst one flattens them
        assert worst is not None
        _plot_series(zoom[0], others, "lag_series")
        labels.append((zoom[0], f"behind the server (s),\nwithout {worst.config}"))
    for ax, label in labels:
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    _plot_own_latency(own_ax, report.results)
    for ax in (*(ax for ax, _ in labels), own_ax):
        ax.set_xlabel("seconds since the load started (then the drain)")
        if ax.get_lines():
            ax.legend(loc="upper left", fontsize="small")
    _plot_operators(ops_ax, report.results)
    o = report.options
    fig.suptitle(
        f"{report.pods:,} pods, {o['readers']} readers, {o['rate']:.0f} writes/s offered "
        f"for {o['duration']:.0f} s per configuration"
    )
    lines = caption(report)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=8.5, va="bottom")
    caption_inches = 0.16 * len(lines) + 0.15
    fig.tight_layout(rect=(0, caption_inches / fig.get_figheight(), 1, 0.97))
    return fig


OWN_LATENCY_FLOOR_MS = 0.001
"""The own-latency panel is logarithmic: a value below this (a publish within a
microsecond of the read) is drawn at it."""


def _plot_own_latency(ax: Any, results: Sequence[ConfigResult]) -> None:
    """The informer's own latency (watcher read -> publish), in milliseconds on a log
    scale (microseconds for a store that keeps up, seconds for one that does not), one
    line per configuration as the other panels draw it."""
    in_ms = [
        replace(r, own_latency_series=[
            (t, max(OWN_LATENCY_FLOOR_MS, v * 1000)) for t, v in r.own_latency_series])
        for r in results
    ]  # fmt: skip
    _plot_series(ax, in_ms, "own_latency_series")
    ax.set_yscale("log")
    ax.set_ylabel("informer's own latency (ms):\nread -> publish, log")


def caption(report: ContentionReport) -> list[str]:
    """The caption's lines: each configuration's line named (colour, dashes, markers) and
    what it is, then what to look at."""
    configs = [r.config for r in report.results]
    named = [f"{c} ({style_of(c).described()})" + (
        f": {style_of(c).meaning}" if style_of(c).meaning else "") for c in configs]  # fmt: skip
    text = "Lines: " + "; ".join(named) + "."
    worst = max(report.results, key=lambda r: r.staleness_p99, default=None)
    if worst is not None:
        text += (
            f" What to look at: {worst.config} ({style_of(worst.config).colour}) falls "
            "furthest behind: its FIFO fills and its readers act on pods seconds old; a line "
            "flat near zero keeps up (where lines coincide, each shows around the thinner "
            "ones drawn over it)."
        )
        if any(r is not worst and r.lag_series for r in report.results):
            text += (
                f" The third panel shows the others without {worst.config}, at their own "
                "scale: upstream's fix against the snapshot stores."
            )
    if any(r.own_latency_series for r in report.results):
        text += (
            " The log-scale panel: the informer's own latency, from its watcher's "
            "read of an event to the publish of the first snapshot holding it (the worst per "
            "sample interval): the part of the staleness the informer itself adds."
        )
    text += (
        " Below: the operators without their freshness protection (hatched) create pods "
        "that exist already (409s) and duplicate pods; protected, they make none."
    )
    return textwrap.wrap(text, 150)


def _plot_series(ax: Any, results: Sequence[ConfigResult], attr: str) -> None:
    """One line per result of its ``attr`` series (``fifo_depth``, ``lag_series``), drawn
    as :data:`STYLES` says: the widest line first, at the bottom, each thinner one over it
    (z-order by width)."""
    ordered = sorted(results, key=lambda r: -style_of(r.config).linewidth)
    for z, r in enumerate(ordered, start=2):
        series = getattr(r, attr)
        if not series:
            continue
        style = style_of(r.config)
        times, values = zip(*series, strict=True)
        ax.plot(
            times, values, label=r.config, color=style.color, linestyle=style.linestyle,
            linewidth=style.linewidth, marker=style.marker or None, markevery=0.08,
            markersize=6, zorder=z,
        )  # fmt: skip


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
