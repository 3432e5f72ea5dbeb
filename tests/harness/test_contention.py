"""bench/contention.py and ``python -m aioinformer demo`` at a tiny scale, through their real
entry points: every configuration produces every figure, the JSON has ConfigResult's keys,
the protected example operators get no 409 and leave no extra pod, and the plot is a PNG."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from aioinformer._cli.contention_table import CONTENTION_COLUMNS
from aioinformer._harness.contention import (
    CONFIGURATIONS,
    ConfigResult,
    ContentionOptions,
    split_staleness,
    staleness_of,
    summarise,
)

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_KEYS = {
    "podset/protected",
    "podset/unprotected",
    "nodeagent/protected",
    "nodeagent/unprotected",
}
TINY = ["--owners", "2", "--pods", "50", "--duration", "1.5", "--rate", "200", "--nodes", "2"]
TINY += ["--podsets", "1", "--replicas", "2"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.timeout(300)


def run(args: list[str], cwd: Path) -> str:
    """Run a command with this checkout's aioinformer first on the path; fail on errors;
    its standard output (a pipe: not a terminal)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def check_report(report: dict[str, Any], configs: tuple[str, ...]) -> None:
    pods = report["options"]["owners"] * report["options"]["pods_per_owner"]
    assert report["pods"] == pods
    assert [r["config"] for r in report["results"]] == list(configs)
    keys = {f.name for f in fields(ConfigResult)}
    for r in report["results"]:
        name = r["config"]
        assert set(r) == keys, name
        assert r["objects"] >= pods, name  # the seeded pods plus the operators' own
        assert r["sync_seconds"] > 0 and r["changes"] > 0 and r["sim_rate"] > 0, name
        assert r["writer_throughput"] > 0 and r["reader_calls"] > 0 and r["rss_bytes"] > 0, name
        for key in ("staleness_p50", "staleness_p99", "staleness_max"):
            assert isinstance(r[key], float) and r[key] >= 0, (name, key)
        assert r["staleness_p50"] <= r["staleness_p99"] <= r["staleness_max"], name
        # every change crossed the socket, so the wire part is never zero
        assert 0 < r["wire_p50"] <= r["wire_p99"] <= r["staleness_max"], name
        assert 0 <= r["informer_p50"] <= r["informer_p99"] <= r["staleness_max"], name
        assert r["reader_latency_p50"] <= r["reader_latency_p99"], name
        # every change went through the FIFO: its peak over the load is at least 1, on
        # the pipeline thread too (which drains it between the depth samples)
        assert isinstance(r["fifo_peak"], int) and r["fifo_peak"] >= 1, name
        assert r["fifo_depth"] and r["staleness_series"] and r["own_latency_series"], name
        assert all(v >= 0 for _, v in r["own_latency_series"]), name
        assert set(r["conflicts_409"]) == OPERATOR_KEYS, name
        assert set(r["extra_pods"]) == OPERATOR_KEYS, name
        assert r["conflicts_409"]["podset/protected"] == 0, name
        assert r["conflicts_409"]["nodeagent/protected"] == 0, name
        assert r["extra_pods"]["podset/protected"] == 0, name
        assert r["extra_pods"]["nodeagent/protected"] == 0, name
        assert r["operators_converged"] is True, name


def test_the_contention_script_runs_every_configuration(tmp_path: Path) -> None:
    out, png = tmp_path / "contention.json", tmp_path / "contention.png"
    run(
        [str(ROOT / "bench" / "contention.py"), *TINY, "--json", str(out), "--plot", str(png)], ROOT
    )
    check_report(json.loads(out.read_bytes()), CONFIGURATIONS)
    assert png.read_bytes().startswith(PNG_MAGIC)


def test_demo_command(tmp_path: Path) -> None:
    out, png = tmp_path / "demo.json", tmp_path / "demo.png"
    args = ["-m", "aioinformer", "demo", *TINY, "--configs", "snapshot+index"]
    printed = run([*args, "--json", str(out), "--plot", str(png)], tmp_path)
    check_report(json.loads(out.read_bytes()), ("snapshot+index",))
    assert png.read_bytes().startswith(PNG_MAGIC)
    # piped: one progress line per phase (so a log shows it is alive), then the table and
    # what its columns mean
    lines = printed.splitlines()
    phases = [line for line in lines if line.startswith("snapshot+index: ")]
    assert phases == [f"snapshot+index: {step}" for step in ("sync", "load", "drain")], lines
    assert any(line.startswith("setup: creating 100 pods") for line in lines)
    notes = printed.partition("The columns:")[2]
    wide = [line for line in notes.splitlines() if len(line) > 80]
    assert not wide, f"the notes are wrapped to the 80 columns of a pipe: {wide}"
    for column, meaning in CONTENTION_COLUMNS[:5]:  # (those that always stay)
        names = {column.header, column.short} - {""}  # (a narrow table abbreviates)
        assert any(f"{n}: {meaning}" in " ".join(notes.split()) for n in names), names


def test_demo_help_shows_every_default_in_plain_text() -> None:
    import argparse

    from aioinformer._cli.demo import add_demo_parser

    parser = argparse.ArgumentParser(prog="python -m aioinformer")
    add_demo_parser(parser.add_subparsers())
    demo = parser._subparsers._group_actions[0].choices["demo"]  # type: ignore[union-attr]
    text = demo.format_help()
    for action in demo._actions:
        if action.default not in (None, False) and action.dest != "help":
            assert f"(default: {action.default})" in " ".join(text.split()), action.dest
    assert ":func:" not in text and "``" not in text and ":class:" not in text


def test_split_staleness_adds_up_per_change() -> None:
    commits = [(10, 1.0), (11, 1.5), (12, 2.0), (13, 3.0)]
    receipts = [(10, 1.2), (11, 1.6), (11, 9.0), (12, 2.5)]  # 11 again after a relist; 13 never
    publishes = [(1.25, 10), (1.9, 11), (4.0, 14)]
    wire, informer = split_staleness(commits, receipts, publishes)
    assert wire == pytest.approx([0.2, 0.1, 0.5])
    assert informer == pytest.approx([0.05, 0.3, 1.5])
    total = [s for _, s in staleness_of(commits[:3], publishes)]
    assert [w + i for w, i in zip(wire, informer, strict=True)] == pytest.approx(total)


def test_the_own_latency_series_is_the_worst_read_to_publish_per_interval() -> None:
    """Each event received during the load, timed from its watcher's read to the first
    publish holding it, the worst per sample interval (by the read's time); reads outside
    the load and events never published are left out."""
    raw = {
        "t_start": 1.0,
        "t_end": 3.0,
        # rv 9 read before the load; 13 never published
        "receipts": [(9, 0.5), (10, 1.1), (11, 1.2), (12, 2.4), (13, 2.9)],
        "publishes": [(0.6, 9), (1.15, 10), (1.5, 11), (2.41, 12)],
        "samples": [[1.0, 0, 0.0, 0], [3.0, 0, 0.0, 3]],
        "fifo_peak": 1,
        "latencies": [0.001],
        "applied": 3,
        "objects": 3,
        "rss_bytes": 1,
    }
    options = ContentionOptions(sample_interval=1.0)
    result = summarise("snapshot+index", options, {"synced": 0.5}, raw, [(10, 1.05)])
    (first, worst), (second, last) = result.own_latency_series
    assert (first, second) == (1.0, 2.0)  # the intervals [1, 2) and [2, 3) of the load
    assert worst == pytest.approx(0.3) and last == pytest.approx(0.01)  # rv 11; rv 12


def test_the_fifo_peak_is_the_fifos_own_not_the_samples() -> None:
    """A pipeline thread drains the FIFO between the depth samples (all 0 here): the
    figure is the peak the FIFO's puts counted over the load."""
    raw = {
        "t_start": 1.0,
        "t_end": 3.0,
        "publishes": [(1.6, 10)],
        "receipts": [(10, 1.55)],
        "samples": [[1.0, 0, 0.0, 0], [2.0, 0, 0.0, 1], [3.0, 0, 0.0, 1]],
        "fifo_peak": 7,
        "latencies": [0.001],
        "applied": 1,
        "objects": 1,
        "rss_bytes": 1,
    }
    result = summarise("snapshot+index", ContentionOptions(), {"synced": 0.5}, raw, [(10, 1.5)])
    assert result.fifo_peak == 7
    assert [d for _, d in result.fifo_depth] == [0, 0, 0]


def test_report_table_fits_the_terminal_and_explains_its_columns() -> None:
    """The demo's table: every column when the terminal is wide; at 80 columns the
    staleness p99, FIFO peak and the operators' 409s and extra pods still in; a note for
    each column shown and none for a column left out."""
    from rich.console import Console

    from aioinformer._cli.contention_table import column_notes, report_table
    from aioinformer._harness.contention import ContentionOptions, ContentionReport

    result = ConfigResult(
        config="snapshot+index",
        objects=10,
        sync_seconds=0.1,
        changes=5,
        offered_rate=10.0,
        sim_rate=9.0,
        staleness_p50=0.02,
        staleness_p99=0.075,
        staleness_max=0.7,
        fifo_peak=52,
        writer_throughput=9.0,
        reader_latency_p50=0.001,
        reader_latency_p99=0.0034,
        reader_calls=7,
        rss_bytes=2**20,
        conflicts_409={"podset/protected": 0, "podset/unprotected": 3},
        extra_pods={"nodeagent/protected": 0, "nodeagent/unprotected": 4},
    )
    options = dict(vars(ContentionOptions()))
    report = ContentionReport(options, {}, 10, 1.0, 2**20, [result])
    for width in (200, 80):
        console = Console(file=io.StringIO(), width=width, record=True)
        table = report_table(report, console)
        console.print(table)
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        assert "snapshot+index" in text and "75.0 ms" in text and "52" in text
        assert "0 / 3" in text and "0 / 4" in text
        assert ("700.0 ms" in text) == (width == 200)  # staleness max only when wide
        notes = column_notes(table)
        assert len(notes) == len(table.columns)
        assert any("freshness protection on / off" in n for n in notes)
        assert any(n.startswith("  RSS: ") for n in notes) == (width == 200)
