"""The demo's plot, read from the matplotlib figure (its lines, legends and caption, not its
pixels): every configuration's line can be told apart and stays visible where the lines
coincide, each panel has a legend, the stores that keep up get a panel at their own scale,
and the caption names every line as it is drawn."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib
import matplotlib.colors
import matplotlib.pyplot as plt
import pytest

from aioinformer._harness.contention import (
    CONFIGURATIONS,
    ConfigResult,
    ContentionOptions,
    ContentionReport,
)
from aioinformer._harness.contention_report import OWN_LATENCY_FLOOR_MS, report_figure

matplotlib.use("Agg")

DASHES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dot"}
MARKERS = {"o": "circles", "s": "squares", "^": "triangles"}
NAMES = {matplotlib.colors.to_hex(c): n.removeprefix("tab:") for n, c in
         matplotlib.colors.TABLEAU_COLORS.items()}  # fmt: skip


def result(config: str, peak: float) -> ConfigResult:
    """A configuration whose FIFO depth and staleness rise to ``peak`` and drain."""
    shape = [min(i, 20 - i, 8) / 8 for i in range(21)]
    return ConfigResult(
        config=config, objects=100, sync_seconds=0.1, changes=50, offered_rate=10.0,
        sim_rate=10.0, staleness_p50=peak / 2, staleness_p99=peak, staleness_max=peak,
        fifo_peak=int(peak * 1000), writer_throughput=10.0, reader_latency_p50=0.001,
        reader_latency_p99=0.002, reader_calls=10, rss_bytes=2**20,
        conflicts_409={"podset/protected": 0, "podset/unprotected": 2},
        extra_pods={"nodeagent/protected": 0, "nodeagent/unprotected": 1},
        fifo_depth=[(i * 0.5, int(s * peak * 1000)) for i, s in enumerate(shape)],
        lag_series=[(i * 0.5, s * peak) for i, s in enumerate(shape)],
        own_latency_series=[(i * 0.5, s * peak / 10) for i, s in enumerate(shape)],
    )  # fmt: skip


@pytest.fixture(scope="module")
def figure() -> Iterator[tuple[ContentionReport, object]]:
    """The incident's store far behind; upstream's fix and the snapshot store that scans
    exactly on the same line (the case where one hid the other). Drawn once: the tests
    only read it."""
    peaks = {"locked+scan": 4.0, "locked+index": 0.05, "snapshot+scan": 0.05,
             "snapshot+index": 0.01}  # fmt: skip
    options = dict(vars(ContentionOptions(owners=2, pods_per_owner=50)))
    report = ContentionReport(
        options, {}, 100, 1.0, 2**20, [result(c, peaks[c]) for c in CONFIGURATIONS]
    )
    fig = report_figure(report)
    yield report, fig
    plt.close(fig)  # type: ignore[arg-type]


def described(line: object) -> str:
    """How a caption should name ``line``: its colour, dashes and markers as drawn."""
    colour = NAMES[matplotlib.colors.to_hex(line.get_color())]  # type: ignore[attr-defined]
    parts = [colour, DASHES[line.get_linestyle()]]  # type: ignore[attr-defined]
    marker = line.get_marker()  # type: ignore[attr-defined]
    if marker not in (None, "None", ""):
        parts.append(MARKERS[marker])
    return ", ".join(parts)


def test_every_line_can_be_told_apart_and_shows_where_lines_coincide(
    figure: tuple[ContentionReport, object],
) -> None:
    _report, fig = figure
    depth_ax, stale_ax, _zoom_ax, own_ax, _ops_ax = fig.axes  # type: ignore[attr-defined]
    for ax in (depth_ax, stale_ax, own_ax):
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(lines) == set(CONFIGURATIONS)
        looks = {described(line) for line in lines.values()}
        assert len(looks) == len(CONFIGURATIONS), looks  # colour, dashes or markers differ
        # from the bottom up, each line is thinner than every line under it: where they
        # coincide, each shows around those drawn over it
        stacked = sorted(lines.values(), key=lambda line: line.get_zorder())
        widths = [line.get_linewidth() for line in stacked]
        assert widths == sorted(widths, reverse=True) and len(set(widths)) == len(widths)
        assert len({line.get_zorder() for line in stacked}) == len(stacked)
        legend = ax.get_legend()
        assert legend is not None, ax.get_ylabel()
        assert [t.get_text() for t in legend.get_texts()] == [line.get_label() for line in stacked]


def test_the_stores_that_keep_up_have_a_panel_at_their_own_scale(
    figure: tuple[ContentionReport, object],
) -> None:
    _report, fig = figure
    _depth_ax, stale_ax, zoom_ax, _own_ax, _ops_ax = fig.axes  # type: ignore[attr-defined]
    shown = {line.get_label() for line in zoom_ax.get_lines()}
    assert shown == {"locked+index", "snapshot+scan", "snapshot+index"}
    assert zoom_ax.get_legend() is not None
    assert zoom_ax.get_ylim()[1] < 0.1 < stale_ax.get_ylim()[1]  # 0.05 s is not a flat line
    assert "without locked+scan" in zoom_ax.get_ylabel()


def test_the_caption_names_every_line_as_it_is_drawn(
    figure: tuple[ContentionReport, object],
) -> None:
    _report, fig = figure
    (text,) = (t.get_text() for t in fig.texts if t.get_text().startswith("Lines: "))  # type: ignore[attr-defined]
    caption = " ".join(text.split())
    for line in fig.axes[0].get_lines():  # type: ignore[attr-defined]
        assert f"{line.get_label()} ({described(line)})" in caption, (line.get_label(), caption)
    assert "What to look at: locked+scan (red) falls furthest behind" in caption


def test_the_informers_own_latency_has_a_panel_of_its_own(
    figure: tuple[ContentionReport, object],
) -> None:
    """Read -> publish per configuration, in milliseconds on a log scale (microseconds and
    seconds in one panel), every line labelled, the caption saying what it is."""
    report, fig = figure
    own_ax = fig.axes[3]  # type: ignore[attr-defined]
    assert own_ax.get_yscale() == "log" and "own latency (ms)" in own_ax.get_ylabel()
    lines = {line.get_label(): line for line in own_ax.get_lines()}
    assert set(lines) == set(CONFIGURATIONS) and own_ax.get_legend() is not None
    for r in report.results:  # drawn in ms, a zero at the floor of the log scale
        _times, drawn = lines[r.config].get_data()
        assert max(drawn) == pytest.approx(max(v for _, v in r.own_latency_series) * 1000)
        assert min(drawn) == OWN_LATENCY_FLOOR_MS
    (text,) = (t.get_text() for t in fig.texts if t.get_text().startswith("Lines: "))  # type: ignore[attr-defined]
    assert "the informer's own latency, from its watcher's read of an event" in " ".join(
        text.split()
    )
