"""What ``python -m aioinformer demo`` prints when its output is piped (the scenario replaced
by a canned report, the rest of the command real): every column of the table, whatever
rich's default width; fitted to ``$COLUMNS`` when that is set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aioinformer._cli import demo
from aioinformer._cli.contention_table import CONTENTION_COLUMNS
from aioinformer._cli.main import build_parser
from aioinformer._harness import contention_report
from aioinformer._harness.contention import (
    CONFIGURATIONS,
    ConfigResult,
    ContentionOptions,
    ContentionReport,
)


def canned(config: str, n: int) -> ConfigResult:
    return ConfigResult(
        config=config, objects=20_000, sync_seconds=1.0, changes=8000, offered_rate=1000.0,
        sim_rate=990.0, staleness_p50=0.01 * n, staleness_p99=0.5 * n, staleness_max=n,
        fifo_peak=1000 * n, writer_throughput=900.0, reader_latency_p50=0.001,
        reader_latency_p99=0.004, reader_calls=12_345, rss_bytes=300 * 2**20,
        conflicts_409={"podset/protected": 0, "podset/unprotected": n},
        extra_pods={"nodeagent/protected": 0, "nodeagent/unprotected": n},
        fifo_depth=[(0.0, 0), (1.0, 1000 * n)], lag_series=[(0.0, 0.0), (1.0, 0.5 * n)],
    )  # fmt: skip


async def fake_contention(options: ContentionOptions, progress: Any) -> ContentionReport:
    """The scenario's report without running it (the progress told as it would be)."""
    progress("setup", {"pods": 20_000})
    for config in options.configurations:
        for step in ("sync", "load", "drain"):
            progress(config, {"step": step})
    results = [canned(c, n) for n, c in enumerate(options.configurations, start=1)]
    return ContentionReport(dict(vars(options)), {}, 20_000, 1.0, 2**30, results)


def run_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``demo`` in process (its standard output is pytest's capture: not a terminal); the
    plot is not drawn (``test_contention_report`` reads its figure)."""
    monkeypatch.setattr(demo, "run_contention", fake_contention)
    monkeypatch.setattr(contention_report, "plot_report", lambda report, path: Path(path))
    args = build_parser().parse_args(["demo", "--no-operators", "--plot", str(tmp_path / "p.png")])
    assert demo.run_demo(args) == 0


def header_cells(text: str) -> list[str]:
    """The header row of the table in ``text`` (rich's heavy vertical bars)."""
    rows = [line for line in text.splitlines() if line.startswith("┃")]
    assert len(rows) == 1, f"the header is on one line: {rows}"
    return [cell.strip() for cell in rows[0].strip("┃").split("┃")]


def test_piped_the_table_shows_every_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    run_demo(tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert header_cells(out) == [column.header for column, _ in CONTENTION_COLUMNS]
    assert "not shown" not in out
    assert f"plot written to {tmp_path / 'p.png'}" in " ".join(out.split())
    body = [line for line in out.splitlines() if line.startswith("│")]
    assert [line.split("│")[1].strip() for line in body] == list(CONFIGURATIONS)
    assert "12,345" in out and "300 MiB" in out  # (reads and RSS: columns a pipe used to lose)
    notes = out.partition("The columns:")[2]
    assert all(f"  {column.header}: " in notes for column, _ in CONTENTION_COLUMNS)
    wide = [line for line in notes.splitlines() if len(line) > 80]
    assert not wide, f"the notes are still wrapped to 80 columns: {wide}"


def test_piped_with_columns_set_the_table_fits_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    run_demo(tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "not shown at this width: " in " ".join(out.split())
    assert len(header_cells(out)) < len(CONTENTION_COLUMNS)
