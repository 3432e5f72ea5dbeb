"""``python -m aioinformer soak`` at a tiny scale, through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aioinformer.__main__ import main
from tests.support import run_python

pytestmark = pytest.mark.timeout(120)

NEVER = """
class _Never:
    name = "{name}"
    async def install(self, api): pass
    def build(self, manager): pass
    async def progress(self, api): return "{name} never converges", False
EXAMPLE = _Never()
"""


async def soak(*args: str) -> tuple[int, str]:
    code, out, err = await run_python("-m", "aioinformer", "soak", *args, timeout=100,
                                      env={"COLUMNS": "200"})  # fmt: skip
    return code, out + err


async def test_soak_runs_seeds_and_prints_a_summary(tmp_path: Path) -> None:
    """Two seeds with the example operators, 0.04 minutes of workload split in two (1.2 s,
    48 steps each): a table with a row per seed and a total, JSON results, exit 0."""
    out_json = tmp_path / "soak.json"
    code, out = await soak("--seeds", "2", "--first-seed", "11", "--minutes", "0.04",
                           "--json", str(out_json))  # fmt: skip
    assert code == 0, out
    assert "2 seeds, 1.2 s of workload each; operators: podset, nodeagent" in out
    assert "aioinformer soak: seeded fault mixes" in out
    for header in ("faults injected", "relists", "watch restarts", "result"):
        assert header in out
    assert "2/2 seeds converged" in out
    results = json.loads(out_json.read_text())
    assert [r["seed"] for r in results] == [11, 12]
    assert all(r["converged"] and r["steps"] == 48 for r in results)
    assert all(set(r["operators"]) == {"podset", "nodeagent"} for r in results)
    for r in results:
        assert f"seed {r['seed']}: 48 steps, {sum(r['faults'].values())} faults, converged" in out


async def test_soak_exits_1_when_a_seed_does_not_converge(tmp_path: Path) -> None:
    for name in ("podset", "nodeagent"):
        (tmp_path / f"{name}.py").write_text(NEVER.format(name=name))
    code, out = await soak("--seeds", "1", "--minutes", "0.01", "--converge-timeout", "0.3",
                           "--examples", str(tmp_path))  # fmt: skip
    assert code == 1, out
    assert "NOT converged" in out and "0/1 seeds converged; not: 1" in out
    assert "seed 1: operator podset: podset never converges" in out


def test_soak_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--seeds", "0"]) == 2
    assert main(["soak", "--minutes", "0"]) == 2
    assert "need --seeds >= 1" in capsys.readouterr().out
