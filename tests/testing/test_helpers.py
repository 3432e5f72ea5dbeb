"""``eventually`` (what a falsy result and an exception mean) and KubeSim's ``find`` (None
for an object not there yet), the reads a test polls with.

On virtual time (looptime): the timeouts are the defaults and pass without waiting."""

from __future__ import annotations

import asyncio

import pytest

from aioinformer import NotFound
from aioinformer.testing import KubeSim, eventually
from kubesim import KubeSimApiError

pytestmark = pytest.mark.looptime


async def test_a_falsy_result_is_not_yet_and_the_timeout_says_what_was_awaited() -> None:
    results = iter([None, 0, {}, [], {"found": 1}])
    await eventually(lambda: next(results), "the fifth check")
    with pytest.raises(AssertionError, match=r"timed out after 10s waiting for a miracle$"):
        await eventually(lambda: False, "a miracle")


async def test_an_exception_ends_the_wait_at_once_unless_retry_on_names_it() -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(KeyError):
        await eventually(lambda: {}["absent"], "a key")
    assert loop.time() == start  # not retried: a bug in the test ends it at once

    calls = []

    async def check() -> bool:
        calls.append(1)
        assert len(calls) >= 3, "not yet"
        return True

    await eventually(check, "the third check", retry_on=AssertionError)
    assert len(calls) == 3

    def never() -> bool:
        raise LookupError("x is not there")

    with pytest.raises(
        AssertionError, match=r"waiting for x \(last check raised LookupError"
    ) as err:
        await eventually(never, "x", retry_on=(LookupError, NotFound))
    assert isinstance(err.value.__cause__, LookupError)


async def test_find_says_none_for_an_object_not_there_yet(sim: KubeSim) -> None:
    """``sim.find`` is None while the object is absent, so ``eventually`` polls it; ``get``
    raises 404 as the API server answers; a resource not served raises for both."""
    assert sim.find("statefulsets", "orders", "default") is None
    with pytest.raises(KubeSimApiError) as err:
        sim.get("statefulsets", "orders", "default")
    assert err.value.code == 404

    async def later() -> None:
        await asyncio.sleep(1.0)
        sim.create("configmaps", {"metadata": {"name": "orders"}}, "default")

    creating = asyncio.create_task(later())
    await eventually(lambda: sim.find("configmaps", "orders", "default"), "the ConfigMap")
    await creating
    found = sim.find("configmaps", "orders", "default")
    assert found is not None and found["metadata"]["name"] == "orders"
    with pytest.raises(KeyError):
        sim.find("nosuchthings", "orders", "default")
