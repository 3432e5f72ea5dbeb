"""The load driver of SimProcess's child (``_simchild.Driver``), in-process."""

from __future__ import annotations

import asyncio
import contextlib

from aioinformer._harness.simchild import Driver
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim, eventually


def ready_status(sim: KubeSim, name: str, ns: str) -> tuple[str, str]:
    pod = sim.get("pods", name, ns)
    (ready,) = [c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready"]
    return pod["metadata"]["resourceVersion"], ready


async def test_churn_flips_only_the_populated_pods() -> None:
    async with KubeSim() as sim:
        driver = Driver(sim)
        assert (await driver.populate(1, 5, namespaces=1, nodes=1))["pods"] == 5
        other = realistic_pod("default", "operator", 0, node="node-0", phase="Running")
        sim.create("pods", other, "default", keep_status=True)
        before = {i: ready_status(sim, f"sts-0-{i}", "sts-ns-0") for i in range(5)}
        other_before = ready_status(sim, "operator-0", "default")
        driver.churn(500)
        try:  # the churn task writes in the background
            await eventually(lambda: driver.churn_writes >= 3, "three churn writes")
        finally:
            driver.churn(0)
            task = driver._churn_task
            assert task is not None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        flipped = [i for i in range(5) if ready_status(sim, f"sts-0-{i}", "sts-ns-0") != before[i]]
        assert flipped  # the populated pods get the kubelet's writes, the other pod none
        assert ready_status(sim, "operator-0", "default") == other_before
