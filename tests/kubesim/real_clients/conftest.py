"""Fixtures of the client tests: one ``python -m aioinformer sim`` per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kubesim.real_clients.simproc import CLUSTER, SimProcess, sim_process


@pytest.fixture(scope="module")
def cli_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """The sim as a user starts it (https, its kubeconfig), with one node and the
    scheduler/kubelet emulation; shared by the tests of a module, stopped after them."""
    with sim_process(tmp_path_factory.mktemp("sim"), *CLUSTER) as sim:
        yield sim
