"""A failing reconcile is visible: a Warning Event ``ReconcileError`` on its object (the
error's type and message, cleaned of credentials; once per distinct error per key, then
at most every 60 s however fast it is retried, counted into one Event), a per-controller
``aioinformer_reconcile_errors_total`` by error type, and one traceback per distinct
error (type and code path, not message or key), not one per retry.

Over real HTTP against KubeSim, on virtual time (looptime): minutes of retries every
0.1 s take their real values without being waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from aioinformer import (
    Client,
    Controller,
    ControllerOptions,
    EventRecorder,
    InformerFactory,
    Invalid,
    Manager,
    Result,
)
from aioinformer._runtime.controller import ERROR_EVENT_INTERVAL
from aioinformer.testing import KubeSim, eventually
from tests.support import FixedLimiter, configmap

pytestmark = pytest.mark.looptime

Reconcile = Callable[[str], Awaitable[Result | None]]


@contextlib.asynccontextmanager
async def running(
    api: Any, reconcile: Reconcile, retry: float = 0.1, **options: Any
) -> AsyncIterator[tuple[Controller, EventRecorder]]:
    """A controller "test" on the ConfigMaps of "default" (a failed key retried after
    ``retry`` seconds), with an event recorder, all on the loop's clock, running while the
    block runs."""
    loop = asyncio.get_running_loop()
    factory = InformerFactory(api, "default", pipeline="loop", clock=loop.time)
    recorder = EventRecorder(Client(api), "test", clock=loop.time)
    c = Controller(
        "test",
        reconcile,
        primary=factory.informer("v1", "configmaps"),
        primary_kind="ConfigMap",
        options=ControllerOptions(rate_limiter=FixedLimiter(retry), **options),
        clock=loop.time,
        events=recorder,
    )
    async with factory, recorder:
        await factory.wait_for_sync(timeout=30)
        async with c:
            yield c, recorder
        await recorder.flush()


def warnings(sim: KubeSim, name: str) -> list[dict[str, Any]]:
    events = sim.list("events", "default")
    return [e for e in events if e["involvedObject"]["name"] == name and e["type"] == "Warning"]


def errors(c: Controller, error: str) -> float:
    labels = {"controller": "test", "error": error}
    return c.metrics.registry.get_sample_value("aioinformer_reconcile_errors_total", labels) or 0


async def test_a_key_failing_for_minutes_is_one_warning_event_counted_once_a_minute(
    sim: KubeSim, api: Any
) -> None:
    """Retried every 0.5 s for 150 s (300 failures): one Event, recorded at the first
    failure and again at 60 s and 120 s (count 3), its message the error's type and text
    without the token it echoed; the other key is untouched."""
    sim.create("configmaps", configmap("bad"), "default")
    sim.create("configmaps", configmap("good"), "default")

    async def reconcile(key: str) -> None:
        if key == "default/bad":
            raise RuntimeError(f"the server refused token {sim.token}")

    async with running(api, reconcile, retry=0.5) as (c, recorder):
        start = asyncio.get_running_loop().time()
        await eventually(lambda: c.statistics().errors >= 300, "300 failures", timeout=300,
                         interval=1.0)  # fmt: skip
        assert asyncio.get_running_loop().time() - start < 3 * ERROR_EVENT_INTERVAL
    (event,) = warnings(sim, "bad")
    assert event["reason"] == "ReconcileError" and event["count"] == 3
    assert event["message"] == "RuntimeError: the server refused token <redacted>"
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["source"]["component"] == "test"
    assert recorder.recorded == 3  # not one per retry
    assert warnings(sim, "good") == []
    assert errors(c, "RuntimeError") == c.statistics().errors


async def test_another_error_is_told_at_once_and_a_success_resets_the_key(
    sim: KubeSim, api: Any
) -> None:
    """A key failing a new way records the new error at once (another Event); after a
    success, the next failure is recorded at once too. A timeout is an error of its own."""
    sim.create("configmaps", configmap("k"), "default")
    answers: list[Exception | Result] = [
        RuntimeError("first"),
        RuntimeError("first"),
        KeyError("spec"),
        Result(requeue_after=1.0),  # a success
        RuntimeError("first"),
    ]
    calls = {"n": 0}

    async def reconcile(key: str) -> Result | None:
        calls["n"] += 1
        if calls["n"] > len(answers):
            await asyncio.sleep(10)  # then: too slow
        answer = answers[calls["n"] - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async with running(api, reconcile, reconcile_timeout=5.0) as (c, recorder):
        await eventually(lambda: errors(c, "timeout") >= 1, "a timeout")
        await eventually(lambda: recorder.recorded == 4, "four events")
    messages = sorted((e["message"], e["count"]) for e in warnings(sim, "k"))
    assert messages == [
        ("KeyError: 'spec'", 1),
        ("RuntimeError: first", 2),  # at once again after the success: counted in
        ("reconcile timed out after 5.0s (reconcile_timeout)", 1),
    ]
    assert (errors(c, "RuntimeError"), errors(c, "KeyError")) == (3, 1)


async def test_error_events_can_be_turned_off(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("quiet"), "default")

    async def reconcile(key: str) -> None:
        raise RuntimeError("broken")

    async with running(api, reconcile, error_events=False) as (c, recorder):
        await eventually(lambda: c.statistics().errors >= 10, "ten failures")
    assert recorder.recorded == 0 and warnings(sim, "quiet") == []
    assert errors(c, "RuntimeError") == c.statistics().errors


async def test_one_traceback_per_distinct_error_not_per_key_or_message(
    sim: KubeSim, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Ten keys failing with the same error (its message naming the key and the attempt)
    log one traceback; the same type raised elsewhere in the code, or an API error of
    another status code at the same call, is another error and logs its own."""
    for i in range(10):
        sim.create("configmaps", configmap(f"k{i}"), "default")
    n = {"calls": 0}

    def parse(key: str) -> None:
        raise ValueError(f"{key}: attempt {n['calls']}: cannot parse")

    def validate(key: str) -> None:
        raise ValueError(f"{key}: attempt {n['calls']}: invalid")

    def refuse(key: str, code: int) -> None:
        raise Invalid(code, "Invalid", f"{key} refused", verb="create", resource="pods",
                      namespace="default")  # fmt: skip

    async def reconcile(key: str) -> None:
        n["calls"] += 1
        index = int(key.rpartition("k")[2])
        if index < 6:
            parse(key)
        elif index < 8:
            validate(key)
        else:
            refuse(key, 422 if index == 8 else 400)

    async with running(api, reconcile, error_events=False) as (c, _):
        await eventually(lambda: c.statistics().errors >= 200, "200 failures")
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info and "reconcile of" in r.msg]
    assert len(tracebacks) == 4, tracebacks
    assert sum("cannot parse" in m for m in tracebacks) == 1
    assert sum("invalid" in m for m in tracebacks) == 1
    assert sum("Invalid(" in m for m in tracebacks) == 2


async def test_the_manager_gives_each_controller_a_recorder(sim: KubeSim) -> None:
    """Made by the manager, a controller records its errors with the manager's recorder
    of its name (the one the operator made, when it made one), so ``rbac`` lists events;
    with ``error_events=False`` it has none."""
    async with sim.api_client() as api:
        m = Manager(api)
        cms = m.informer("v1", "configmaps", namespace="default")

        async def reconcile(key: str) -> None:
            return None

        mine = m.event_recorder("mine")
        a = m.controller("mine", reconcile, primary=cms)
        b = m.controller("other", reconcile, primary=cms)
        off = m.controller("off", reconcile, primary=cms,
                           options=ControllerOptions(error_events=False))  # fmt: skip
        assert a.events is mine and b.events is not None and b.events.component == "other"
        assert off.events is None
        assert m.event_recorders == [mine, b.events]
