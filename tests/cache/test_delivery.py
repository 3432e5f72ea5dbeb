"""How publishes reach the caller's loop (aioinformer/_cache/informer.py's ``_published``
and ``_deliver``): woken once per batch of publishes when a subscriber or a freshness
waiter is there, and not at all when nothing waits; subscribers and waiters that come
later still see every change and every publish they need. Real HTTP against KubeSim,
with the pipeline on its thread and on the caller's loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from aioinformer import InformerFactory, WatchOptions
from aioinformer._cache.informer import Informer
from aioinformer._core.errors import FreshnessTimeout
from aioinformer.testing import KubeSim, eventually
from tests.support import pod

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)


@pytest.fixture(params=["thread", "loop"])
async def factory(sim: KubeSim, request: pytest.FixtureRequest) -> AsyncIterator[InformerFactory]:
    async with sim.api_client() as api:
        async with InformerFactory(api, watch_options=FAST, pipeline=request.param) as f:
            yield f


def count_wakeups(informer: Informer) -> list[int]:
    """Count the informer's wake-ups of the caller's loop from now on (its host's notify)."""
    host = informer._host
    calls = [0]
    notify = host.notify

    def counting(fn: Callable[[], object]) -> None:
        calls[0] += 1
        notify(fn)

    host.notify = counting  # type: ignore[method-assign]
    return calls


def has_pods(informer: Informer, names: list[str]) -> Callable[[], bool]:
    return lambda: all(informer.snapshot().get(f"default/{n}") is not None for n in names)


async def test_a_publish_nobody_waits_for_does_not_wake_the_callers_loop(
    sim: KubeSim, factory: InformerFactory
) -> None:
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    wakeups = count_wakeups(pods)
    names = [f"quiet-{i}" for i in range(5)]
    for name in names:
        sim.create("pods", pod(name), "default")
    await eventually(has_pods(pods, names), "the pods published", timeout=10)
    assert wakeups[0] == 0  # no subscriber, no waiter: nothing on the caller's loop to do
    # a waiter is woken by the next publish that satisfies it
    made = sim.create("pods", pod("awaited"), "default")
    snap = await pods.wait_for_rv(made["metadata"]["resourceVersion"], timeout=10)
    assert snap.get("default/awaited") is not None and wakeups[0] >= 1


async def test_a_subscriber_after_quiet_publishes_gets_every_later_change_in_order(
    sim: KubeSim, factory: InformerFactory
) -> None:
    pods = factory.informer("v1", "pods")
    await factory.wait_for_sync(timeout=10)
    for i in range(3):
        sim.create("pods", pod(f"before-{i}"), "default")
    await eventually(has_pods(pods, [f"before-{i}" for i in range(3)]), timeout=10)
    seen: list[tuple[str, str, str]] = []  # (kind, name, value of the "step" label)
    pods.add_handler(
        on_add=lambda o: seen.append(("add", o.name, o.labels.get("step", ""))),
        on_update=lambda _old, new: seen.append(("update", new.name, new.labels["step"])),
        on_delete=lambda o: seen.append(("delete", o.name, "")),
    )
    for step in range(4):
        sim.patch("pods", "before-1", {"metadata": {"labels": {"step": str(step)}}}, "default")
    sim.delete("pods", "before-2", "default")
    await eventually(lambda: ("delete", "before-2", "") in seen, timeout=10)
    initial = sorted(seen[:3])
    assert initial == [("add", f"before-{i}", "") for i in range(3)]
    assert seen[3:] == [
        *(("update", "before-1", str(step)) for step in range(4)),
        ("delete", "before-2", ""),
    ]


async def test_a_condition_met_between_its_check_and_the_waiters_registration_returns(
    sim: KubeSim,
) -> None:
    """The writer looks for waiters only after it has published: a wait whose condition
    turns true after its first check but before its waiter is registered (a publish the
    writer saw no waiter for) must see it on its own, not wait for another publish (an
    informer that never runs: no other publish can come)."""
    async with sim.api_client() as api:
        pods = InformerFactory(api).informer("v1", "pods")
        checks = [0]

        def ready() -> bool:  # false until the waiter is registered (its 2 checks before)
            checks[0] += 1
            return checks[0] > 2

        try:
            await pods._wait(ready, 1.0, lambda: "the condition")
        except FreshnessTimeout:
            pytest.fail("the wait missed a condition met before its waiter was registered")
        assert checks[0] == 3
