"""The simulation finds what each invariant guards against: an operator with one known
bug (tests/simulation/operators.py) breaks that invariant within a few seeds, and the
violation names the replicas, keys and resourceVersions involved. (The reference operator
on the fixed runtime breaks none: test_seeds.py.)"""

from __future__ import annotations

from collections.abc import Callable, Collection

from aioinformer import Manager
from aioinformer.testing import Simulation, SimulationResult
from aioinformer.testing._sim_invariants import Invariants
from tests.simulation import operators

SEARCH = 30
"""Seeds tried at most to find a bug; the first that shows it ends the search."""


def _first_broken(
    build: Callable[[Manager], None], invariant: str, faults: Collection[str], **options: object
) -> SimulationResult:
    tried = []
    for seed in range(SEARCH):
        result = Simulation(build, operators.WORKLOAD, seed, faults=faults, **options).run()  # type: ignore[arg-type]
        if invariant in result.broken:
            return result
        tried.append(result.report(limit=2))
    raise AssertionError(f"no seed of {SEARCH} broke {invariant}:\n" + "\n".join(tried))


def test_a_lost_create_made_again_is_a_duplicate_child() -> None:
    # the incident's duplicate pod: the server applied the create, its answer was lost,
    # and the watch shows the pod late: without expectations the retry creates another
    result = _first_broken(
        operators.no_expectations, "duplicate-child", ("lost_answer", "watch_lag")
    )
    assert result.duplicate_children >= 1
    found = next(v for v in result.violations if v.invariant == "duplicate-child")
    assert "live children, at most" in found.detail and "created by replica-" in found.detail
    assert result.faults.get("lost_answer", 0) >= 1


def test_a_reconcile_before_its_own_write_is_seen_is_stale() -> None:
    result = _first_broken(operators.no_freshness, "stale-snapshot", ("watch_lag",))
    assert result.stale_reconciles >= 1
    found = next(v for v in result.violations if v.invariant == "stale-snapshot")
    assert "before its own write of" in found.detail


def test_a_write_by_a_replica_that_does_not_hold_the_lease_is_a_second_writer() -> None:
    result = _first_broken(operators.handler_writer, "two-writers", ("latency",))
    assert result.conflicting_writes >= 1
    found = next(v for v in result.violations if v.invariant == "two-writers")
    assert "while replica-" in found.detail and "held Lease" in found.detail


def test_an_object_never_done_is_unreconciled_at_the_end() -> None:
    result = Simulation(operators.idle, operators.WORKLOAD, 1, duration=10.0, settle=20.0).run()
    assert result.broken == ["unreconciled"], result.report()
    assert all("not done (0 children)" in v.detail for v in result.violations)
    assert result.virtual_seconds >= 30.0


def test_a_busy_loop_ends_the_run_as_a_runaway() -> None:
    result = Simulation(operators.busy, operators.WORKLOAD, 1, max_steps=100_000).run()
    assert "runaway" in result.broken, result.report()
    assert result.virtual_seconds < 60.0


def test_two_replicas_holding_one_lease_is_counted_while_it_lasts() -> None:
    times = iter(float(t) for t in range(100))
    inv = Invariants(
        clock=lambda: next(times), identities={"a": "a", "b": "b"}, primary_store="configmaps",
        primary_kind="ConfigMap", primary_group="", child_store=None, expected_children=None,
        guard_of=lambda _key: "lease", lease_namespace="ns",
    )  # fmt: skip
    inv.sampled({"lease": ["a"]})
    inv.sampled({"lease": ["a", "b"]})
    inv.sampled({"lease": ["a", "b"]})
    inv.sampled({"lease": ["b"]})
    inv.sampled({"lease": ["a", "b"]})
    assert [v.invariant for v in inv.violations] == ["two-holders", "two-holders"]
    assert inv.overlap == 0.3
