"""``ControllerOptions(resync_period=S)``, as docs/writing-an-operator.md states it: every
S seconds, the first time S seconds after the controller started, every cached primary
object's key is reconciled again, without any change; a key already queued is queued once.
On virtual time (looptime): the periods are asserted to the instant."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.testing import KubeSim, eventually
from tests.runtime.test_controller import Reconciles, gaps, running
from tests.support import configmap

pytestmark = pytest.mark.looptime


async def test_every_cached_primary_is_reconciled_again_every_period(
    sim: KubeSim, api: Any
) -> None:
    for name in ("a", "b"):
        sim.create("configmaps", configmap(name), "default")
    rec = Reconciles()
    async with running(api, rec, resync_period=30.0) as c:
        await eventually(
            lambda: rec.count("default/a") == 3 and rec.count("default/b") == 3,
            "two resyncs",
            timeout=90,
            interval=0.5,
        )
        assert gaps(rec.at("default/a")) == [30.0, 30.0]
        assert gaps(rec.at("default/b")) == [30.0, 30.0]
        assert c.queue.statistics().adds_total == 6  # (each key once at the start and per resync)


async def test_without_a_resync_period_nothing_comes_back(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("a"), "default")
    rec = Reconciles()
    async with running(api, rec) as c:
        await eventually(lambda: rec.count("default/a") == 1, "the first reconcile")
        with pytest.raises(AssertionError):
            await eventually(lambda: rec.count("default/a") > 1, "another", timeout=300, interval=5)
        assert c.queue.statistics().adds_total == 1
