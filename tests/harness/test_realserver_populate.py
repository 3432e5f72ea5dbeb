"""bench/realserver.py's population (PodPopulator) over real HTTP against KubeSim: every
pod created as generated, with its status written, through a bounded number of requests
in flight; a busy server's answers (429, 5xx) are tried again, any other error stops it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim
from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import realserver

NS = "populated"


def pods(n: int) -> list[dict[str, Any]]:
    return [
        realistic_pod(NS, f"sts-{i % 2}", i, node=f"node-{i % 3}", phase="Running")
        for i in range(n)
    ]


async def populate(kubesim: KubeSim, made: list[dict[str, Any]], concurrency: int) -> Any:
    kubesim.create("namespaces", {"metadata": {"name": NS}})
    async with kubesim.api_client() as api:
        writer = await realserver.PodPopulator.connect(api, NS, concurrency)
        async with writer:
            assert await writer.populate(iter(made)) == len(made)
    return writer


async def test_every_pod_is_created_as_generated_with_its_status(kubesim: KubeSim) -> None:
    made = pods(12)
    writer = await populate(kubesim, made, concurrency=4)
    stored = {p["metadata"]["name"]: p for p in kubesim.list("pods", NS)}
    assert sorted(stored) == sorted(p["metadata"]["name"] for p in made)
    for pod in made:
        got = stored[pod["metadata"]["name"]]
        assert got["spec"]["nodeName"] == pod["spec"]["nodeName"]
        assert got["metadata"]["labels"] == pod["metadata"]["labels"]
        assert got["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]
        assert got["status"]["phase"] == "Running"
        assert got["status"]["conditions"] == pod["status"]["conditions"]
    assert writer.last_rv == max(int(p["metadata"]["resourceVersion"]) for p in stored.values())
    assert writer.retried == 0


async def test_busy_answers_are_tried_again(kubesim: KubeSim) -> None:
    kubesim.fail_next(2, 503, path_contains=f"/{NS}/pods", verbs=["create"])
    kubesim.fail_next(1, 429, path_contains="/status", verbs=["patch"])
    writer = await populate(kubesim, pods(5), concurrency=2)
    assert len(kubesim.list("pods", NS)) == 5
    assert all(p["status"]["phase"] == "Running" for p in kubesim.list("pods", NS))
    assert writer.retried == 3


async def test_a_pod_that_exists_already_stops_the_population(kubesim: KubeSim) -> None:
    """A 409 on a first create is not ours (only a create tried again may find its own
    pod made): the population stops, naming the request."""
    made = pods(3)
    kubesim.create("namespaces", {"metadata": {"name": NS}})
    kubesim.create("pods", made[1], NS)
    async with kubesim.api_client() as api:
        async with await realserver.PodPopulator.connect(api, NS, 2) as writer:
            with pytest.raises(RuntimeError, match=f"POST /api/v1/namespaces/{NS}/pods: 409"):
                await writer.populate(made)


def test_a_populator_needs_a_request_in_flight() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        realserver.PodPopulator(None, "http://127.0.0.1:1", NS, 0)  # type: ignore[arg-type]
