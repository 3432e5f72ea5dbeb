"""``python -m aioinformer soak`` at a tiny scale, through the real command line, and its
report fitted to 80 columns and to a wide terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from aioinformer.__main__ import main
from aioinformer._cli.soak import soak_report
from aioinformer.testing._faultmix import FaultMix, FaultMixResult
from tests.support import run_cli

pytestmark = pytest.mark.timeout(120)

NEVER = """
def build(manager): pass
async def progress(client): return "{name} never converges", False
"""


async def soak(*args: str, columns: int = 80) -> tuple[int, str]:
    result = await run_cli("soak", *args, columns=columns, timeout=100)
    return result.code, result.out + result.err


def fits(text: str, columns: int) -> None:
    wide = [line for line in text.splitlines() if len(line) > columns]
    assert not wide, f"lines wider than {columns} columns: {wide}"


async def test_soak_runs_seeds_and_prints_a_summary(tmp_path: Path) -> None:
    """Two seeds with the example operators, 0.04 minutes of workload split in two (1.2 s,
    48 steps each), at 80 columns: a table with a row per seed and a total, the faults by
    kind, JSON results, exit 0."""
    out_json = tmp_path / "soak.json"
    code, out = await soak("--seeds", "2", "--first-seed", "11", "--minutes", "0.04",
                           "--json", str(out_json))  # fmt: skip
    assert code == 0, out
    fits(out, 80)
    assert "2 seeds, 1.2 s of workload each; operators: podset, nodeagent" in out
    assert "aioinformer soak: seeded fault mixes" in out
    for header in ("seed", "faults injected", "relists", "restarts", "result"):
        assert header in out
    assert "2/2 seeds converged" in out
    results = json.loads(out_json.read_text())
    assert [r["seed"] for r in results] == [11, 12]
    assert all(r["converged"] and r["steps"] == 48 for r in results)
    assert all(set(r["operators"]) == {"podset", "nodeagent"} for r in results)
    for r in results:
        assert f"seed {r['seed']}: 48 steps, {sum(r['faults'].values())} faults, converged" in out
    totals: dict[str, int] = {}
    for r in results:
        for kind, n in r["faults"].items():
            totals[kind] = totals.get(kind, 0) + n
    by_kind = " ".join(out.split()).split("faults by kind: ")[1].split()
    assert sorted(by_kind[: len([n for n in totals.values() if n])]) == sorted(
        f"{kind}={n}" for kind, n in totals.items() if n
    )


async def test_soak_exits_1_when_a_seed_does_not_converge(tmp_path: Path) -> None:
    for name in ("podset", "nodeagent"):
        (tmp_path / f"{name}.py").write_text(NEVER.format(name=name))
    code, out = await soak("--seeds", "1", "--minutes", "0.01", "--converge-timeout", "0.3",
                           "--examples", str(tmp_path))  # fmt: skip
    assert code == 1, out
    fits(out, 80)
    assert "NOT converged" in out and "0/1 seeds converged; not: 1" in out
    assert "seed 1: operator podset: podset never converges" in out
    assert "seed 1 faults: " in out


def test_an_example_that_is_not_one_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "podset.py").write_text("def build(manager): pass\n")  # no progress()
    assert main(["soak", "--seeds", "1", "--examples", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "python -m aioinformer soak: podset: an example defines build(manager) and "
        "progress(client)\n"
    )


def test_soak_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--seeds", "0"]) == 2
    assert main(["soak", "--minutes", "0"]) == 2
    assert main(["soak", "--fault-rate", "2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == 3 * [
        "python -m aioinformer soak: need --seeds >= 1, --minutes > 0 and 0 <= --fault-rate <= 1"
    ]


def result(seed: int, converged: bool = True, **faults: int) -> FaultMixResult:
    return FaultMixResult(
        seed=seed, steps=12000, plan_digest="0" * 12, faults=faults, writes={"create": 1},
        relists=1234, watch_restarts=5678, converged=converged,
        differences=[] if converged else ["[pods] default/web-0: missing in informer 'pods[default]'"],
        workload_seconds=300.0, converge_seconds=12.5,
    )  # fmt: skip


@pytest.mark.parametrize("columns", [80, 200])
def test_the_report_fits_the_terminal(columns: int) -> None:
    """Every fault kind injected, five-digit counts, a seed that did not converge with
    brackets in its differences: each line fits, nothing is lost."""
    every = {kind: 100 + i for i, kind in enumerate(FaultMix.fault_kinds)}
    results = [result(seed, **every) for seed in range(1, 11)]
    results.append(result(11, converged=False, drop=3, http_500=1))
    console = Console(file=io.StringIO(), width=columns, color_system=None)
    soak_report(console, results)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    fits(text, columns)
    flat = " ".join(text.split())
    totals = {kind: sum(r.faults.get(kind, 0) for r in results) for kind in every}
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])  # most frequent first
    by_kind = " ".join(f"{kind}={n}" for kind, n in ranked)
    assert f"faults by kind: {by_kind}" in flat
    assert "seed 11 faults: drop=3 http_500=1" in flat
    assert "seed 11: [pods] default/web-0: missing in informer 'pods[default]'" in flat
    assert "10/11 seeds converged; not: 11" in flat
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("faults by kind: "))
    assert not lines[start + 2].startswith("  ")  # a line or two, with four-digit counts
    rows = [line for line in lines if line.startswith("│")]
    assert (
        len(rows) == 12 and "NOT converged" in rows[10] and rows[11].split("│")[1].strip() == "all"
    )
    if columns >= 120:
        assert "not shown" not in text and "workload s" in text and "watch restarts" in text
