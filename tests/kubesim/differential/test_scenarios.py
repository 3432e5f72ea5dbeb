"""Every scenario of :mod:`tests.kubesim.differential.scenarios` on every target."""

from __future__ import annotations

from tests.kubesim.differential.runner import Run, replay
from tests.kubesim.differential.scenario import Scenario
from tests.kubesim.differential.scenarios import PODS, SCENARIOS
from tests.kubesim.differential.targets import Target
from tests.kubesim.replay import Replayer


async def test_scenario_answers_as_recorded(scenario: Scenario, target: Target) -> None:
    """The recording's exchanges, sent again after its state is prepared, get the recorded
    answers (normalised as the scenario states); a cluster is left as it was found."""
    async with target.left_as_found() as made, target.session() as http:
        run = Run(scenario, target, http, Replayer(http), made)
        await replay(run)
    assert run.compared > 0, f"{scenario.name}: every exchange was left out"


def test_every_scenario_makes_the_namespaces_it_sends_requests_into() -> None:
    """Each scenario starts from its own state, whatever ran before it: a namespace its
    requests go to was there when they were recorded, so the scenario makes it (a request
    into a missing namespace may be answered 404 before anything the recording shows)."""
    missing = {
        s.name: sorted(s.namespaces_named() - s.namespaces_made())
        for s in SCENARIOS
        if s.namespaces_named() - s.namespaces_made()
    }
    assert missing == {}


def test_every_scenario_that_creates_pods_needs_what_the_recordings_pods_had() -> None:
    """The recordings' pods were admitted without a service account and left alone (no
    scheduler, kubelet or pod GC): where the ServiceAccount admission plugin or the
    controllers run, a pod is changed (or refused, in a namespace no controller gave a
    ``default`` ServiceAccount), so such a scenario is skipped there."""
    assert [s.name for s in SCENARIOS if s.creates_pods() and not set(PODS) <= set(s.needs)] == []
