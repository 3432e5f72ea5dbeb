"""A seed is one run: the same seed plays the same plan and the same requests, writes and
violations; the plan is drawn before anything runs, and ``without`` removes fault kinds
from it and nothing else."""

from __future__ import annotations

from aioinformer.testing import Simulation, SimulationResult
from aioinformer.testing._sim_plan import FAULT_KINDS, RUN_FAULTS, draw_plan
from tests.simulation import operators


def _figures(r: SimulationResult) -> tuple[object, ...]:
    return (
        r.plan_digest, r.trace_digest, r.violations, r.writes, r.requests, r.reconciles,
        r.faults, r.overlap_seconds, r.duplicate_children, r.stale_reconciles,
        r.virtual_seconds,
    )  # fmt: skip


def test_a_seed_replays_exactly() -> None:
    # a seed with faults of many kinds and violations (an operator whose handler writes on
    # every replica): the second run matches the first in every figure and violation
    first = Simulation(operators.handler_writer, operators.WORKLOAD, 3).run()
    again = Simulation(operators.handler_writer, operators.WORKLOAD, 3).run()
    assert first.violations, first.report()
    assert len(first.faults) >= 3, first.report()
    assert _figures(again) == _figures(first)
    assert first.replay == again.replay


def test_another_seed_is_another_run() -> None:
    runs = [Simulation.reference(seed, duration=20.0).run() for seed in (1, 2)]
    assert runs[0].plan_digest != runs[1].plan_digest
    assert runs[0].trace_digest != runs[1].trace_digest
    assert all(r.ok for r in runs), "\n".join(r.report() for r in runs)


def test_the_plan_is_drawn_from_the_seed_alone() -> None:
    plan = draw_plan(11, duration=60.0)
    assert draw_plan(11, duration=60.0) == plan
    assert draw_plan(11, duration=60.0).digest == plan.digest
    assert draw_plan(12, duration=60.0).digest != plan.digest
    times = [s.at for s in plan.steps]
    assert times == sorted(times) and all(0 <= t < 60.0 for t in times)
    assert plan.faults <= set(FAULT_KINDS)
    stepped = {s.kind for s in plan.steps} & set(FAULT_KINDS)
    assert stepped == plan.faults - RUN_FAULTS


def test_without_removes_those_faults_and_nothing_else() -> None:
    seed = next(s for s in range(100) if {"freeze", "lost_answer"} <= draw_plan(s).faults)
    plan = draw_plan(seed)
    less = plan.without({"freeze"})
    assert "freeze" not in less.faults and {s.kind for s in less.steps} & {"freeze"} == set()
    assert [s for s in plan.steps if s.kind != "freeze"] == list(less.steps)
    assert less.replicas == plan.replicas and less.primaries == plan.primaries
    unified = draw_plan(seed).without({"duplicate_identity", "clock_rate", "latency"})
    assert all(r.identity == r.name and r.rate == 1.0 and r.latency == 0 for r in unified.replicas)


def test_the_replay_command_names_every_setting() -> None:
    sim = Simulation.reference(
        42, replicas=4, coordination="shards", duration=30.0, faults=("freeze", "reset"),
        without=("reset",),
    )  # fmt: skip
    assert sim.command == (
        "python -m aioinformer soak --simulation --seed 42 --replicas 4 --coordination shards "
        "--duration 30 --faults freeze,reset --without reset"
    )
    assert Simulation.reference(7).command == "python -m aioinformer soak --simulation --seed 7"
