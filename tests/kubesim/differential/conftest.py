"""The ``target`` fixture: every scenario on a fresh KubeSim, and on the cluster
``$AIOINFORMER_TEST_KUBECONFIG`` names (skipped, with the reason, when it is not set)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from aioinformer.testing import KubeSim
from tests.kubesim.differential.scenario import Scenario
from tests.kubesim.differential.scenarios import SCENARIOS
from tests.kubesim.differential.targets import (
    NOT_SET,
    ClusterTarget,
    KubeSimTarget,
    Target,
    cluster_kubeconfig,
    connection_from_kubeconfig,
    kubesim_options,
)

TARGETS = ("kubesim", "cluster")


def cluster_skip(scenario: Scenario) -> str | None:
    """Why ``scenario`` cannot run on the configured cluster, if that is known before
    asking the cluster (whether its settings are the recording server's is asked then)."""
    if cluster_kubeconfig() is None:
        return NOT_SET
    if scenario.users():
        users = ", ".join(sorted(scenario.users()))
        return f"needs the recording's other identities ({users}), which the kubeconfig lacks"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" not in metafunc.fixturenames:
        return
    params = []
    for scenario in SCENARIOS:
        for name in TARGETS:
            marks: list[pytest.MarkDecorator] = []
            if name == "kubesim" and scenario.kubesim_differs:
                marks.append(pytest.mark.xfail(strict=True, reason=scenario.kubesim_differs))
            if name == "cluster" and (why := cluster_skip(scenario)):
                marks.append(pytest.mark.skip(reason=why))
            params.append(pytest.param(scenario, name, marks=marks, id=f"{scenario.name}-{name}"))
    metafunc.parametrize(("scenario", "target"), params, indirect=["target"])


@pytest.fixture
async def target(request: pytest.FixtureRequest, scenario: Scenario) -> AsyncIterator[Target]:
    """A fresh KubeSim configured as the recording's server, or the configured cluster
    (the scenario skipped, saying which, where the cluster's settings are not those of the
    recording's server that the answers depend on)."""
    if request.param == "kubesim":
        async with KubeSim(**kubesim_options(scenario.record)) as sim:
            yield KubeSimTarget(sim)
        return
    kubeconfig = cluster_kubeconfig()
    assert kubeconfig is not None
    cluster = ClusterTarget(await connection_from_kubeconfig(kubeconfig))
    if scenario.needs and (why := (await cluster.settings()).unmet(scenario.needs)):
        pytest.skip(why)
    yield cluster
