"""Every scenario of :mod:`tests.kubesim.differential.scenarios` on every target."""

from __future__ import annotations

from tests.kubesim.differential.runner import Run, replay
from tests.kubesim.differential.scenario import Scenario
from tests.kubesim.differential.targets import Target
from tests.kubesim.replay import Replayer


async def test_scenario_answers_as_recorded(scenario: Scenario, target: Target) -> None:
    """The recording's exchanges, sent again after its state is prepared, get the recorded
    answers (normalised as the scenario states)."""
    async with target.session() as http:
        run = Run(scenario, target, http, Replayer(http))
        try:
            await replay(run)
        finally:
            await target.cleanup(run.made)
    assert run.compared > 0, f"{scenario.name}: every exchange was left out"
