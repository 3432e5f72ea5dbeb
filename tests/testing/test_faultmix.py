"""Seeded fault mixes (aioinformer.testing.FaultMix): the plan is a function of the seed,
and under every fault kind the informers, their handlers and the example operators
converge exactly (over real HTTP against KubeSim)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from aioinformer import ConfigError
from aioinformer.testing import FaultMix, FaultMixResult, FaultStep, example_operators
from aioinformer.testing._faultmix import _diff

pytestmark = pytest.mark.timeout(120)

CI_SEEDS = (1, 2, 3)
STEPS = 120
FAULT_RATE = 0.15
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_plan_is_a_function_of_the_seed_and_settings() -> None:
    ops = example_operators(EXAMPLES)
    plan = FaultMix(seed=7, steps=300, operators=ops).plan()
    assert plan == FaultMix(seed=7, steps=300, operators=ops).plan()
    assert plan != FaultMix(seed=8, steps=300, operators=ops).plan()
    assert FaultMix(seed=7, steps=100, operators=ops).plan() == plan[:100]
    assert all(isinstance(step, FaultStep) for step in plan)
    faults = Counter(step.fault for step in plan if step.fault is not None)
    assert set(faults) == set(FaultMix.fault_kinds)
    assert 15 <= sum(faults.values()) <= 45  # fault_rate 0.1 of 300 steps
    ops_used = {step.op for step in plan}
    assert {"create", "update", "status", "relabel", "delete", "kill", "remove_node"} <= ops_used
    assert {step.kind for step in plan} == {"pods", "widgets", "nodes"}
    without = FaultMix(seed=7, steps=300).plan()
    assert not {"kill", "add_node", "remove_node"} & {step.op for step in without}
    assert len(FaultMix.lasting(7, 10.0).plan()) == 400
    assert len(FaultMix.lasting(7, 0.01).plan()) == 20


def test_the_ci_seeds_cover_every_fault_kind() -> None:
    ops = example_operators(EXAMPLES)
    kinds = {
        step.fault
        for seed in CI_SEEDS
        for step in FaultMix(seed, steps=STEPS, fault_rate=FAULT_RATE, operators=ops).plan()
    }
    assert kinds - {None} == set(FaultMix.fault_kinds)


@pytest.mark.parametrize("seed", CI_SEEDS)
async def test_everything_converges_under_a_seeded_fault_mix(seed: int) -> None:
    """Pods, a selector, metadata-only, one namespace and a CRD informer equal the server,
    their handlers' views equal their caches with per-key RVs never going backwards, and
    PodSet and NodeAgent reach exactly their pods."""
    ops = example_operators(EXAMPLES)
    assert [op.name for op in ops] == ["podset", "nodeagent"]
    mix = FaultMix(seed, steps=STEPS, fault_rate=FAULT_RATE, operators=ops)
    result = await mix.run()
    assert isinstance(result, FaultMixResult)
    assert result.converged, "\n".join(result.differences)
    assert result.differences == []
    planned = Counter(step.fault for step in mix.plan() if step.fault is not None)
    assert result.faults == dict(planned)  # every planned fault was injected
    assert result.steps == STEPS and sum(result.writes.values()) > STEPS // 3
    assert result.relists > 0 and result.watch_restarts > 0
    assert set(result.operators) == {"podset", "nodeagent"}
    assert result.operators["podset"].startswith("podset default/web: 3 wanted, 3 pods, 3 ready")


async def test_a_run_that_does_not_converge_says_why() -> None:
    """An operator that never converges: the result says no and names it with its last
    progress line."""

    class Never:
        name = "never"

        async def install(self, api: object) -> None:
            pass

        def build(self, manager: object) -> None:
            pass

        async def progress(self, api: object) -> tuple[str, bool]:
            return "still waiting", False

    result = await FaultMix(5, steps=20, operators=[Never()], converge_timeout=0.5).run()
    assert not result.converged
    assert result.differences[-1] == "operator never: still waiting"  # caches may lag too
    assert result.operators == {"never": "still waiting"}


def test_differences_name_missing_extra_and_stale_keys() -> None:
    have = {"a/x": 5, "a/y": 7, "a/z": 1}
    want = {"a/x": 5, "a/y": 9, "a/w": 3}
    assert _diff("pods", have, want, "server") == [
        "pods: missing a/w (rv 3)",
        "pods: extra a/z (rv 1)",
        "pods: a/y at rv 7, server at 9",
    ]
    assert _diff("pods", have, have, "server") == []


def test_example_operators_need_the_examples_directory(tmp_path: Path) -> None:
    assert example_operators(tmp_path / "missing") == []
    assert [op.name for op in example_operators(EXAMPLES, ["podset"])] == ["podset"]
    names = ["podset", "nodeagent", "configmap_mirror", "website"]
    assert [op.name for op in example_operators(EXAMPLES, names)] == names
    (tmp_path / "plain.py").write_text("def build(manager): pass\n")  # no progress()
    with pytest.raises(ConfigError, match=r"^plain: an example defines build\(manager\) and pro"):
        example_operators(tmp_path, ["plain"])
    with pytest.raises(ConfigError, match="no such file"):
        example_operators(tmp_path, ["absent"])
