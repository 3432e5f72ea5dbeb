"""The EventRecorder over real HTTP against KubeSim: core/v1 Events the server accepts,
identical events aggregated into one with a count, a per-object rate limit, nothing raised
into the caller, what is recorded sent when it stops, and events recorded in a reconcile
sent outside it (the manager runs its recorders)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client as client_module

from aioinformer import Client, ClosedError, ConfigError, EventRecorder, Manager, Result
from aioinformer._runtime import events as events_module
from aioinformer.testing import KubeSim, eventually


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def client(sim: KubeSim) -> AsyncIterator[Client]:
    async with sim.api_client() as api:
        yield Client(api, field_manager="tests")


def about(sim: KubeSim, name: str) -> list[dict[str, Any]]:
    return [e for e in sim.list("events", "default") if e["involvedObject"].get("name") == name]


async def test_events_are_recorded_and_identical_ones_aggregated(
    sim: KubeSim, client: Client
) -> None:
    made = await client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "default"},
        }
    )
    clock = Clock()
    recorder = EventRecorder(client, "web-controller", host="replica-1", clock=clock)
    async with recorder:
        recorder.record(made, "Normal", "Synced", "all pods ready")
        recorder.record(made, "Normal", "Synced", "all pods ready")
        recorder.record(made, "Warning", "Failed", "image pull failed")
        await recorder.flush()
        got = {e["reason"]: e for e in about(sim, "web")}
        clock.now += events_module.AGGREGATION_WINDOW + 1  # outside the window: a new Event
        recorder.record(made, "Normal", "Synced", "all pods ready")
    assert set(got) == {"Synced", "Failed"}
    synced = got["Synced"]
    assert synced["count"] == 2 and synced["type"] == "Normal"
    assert (
        synced["involvedObject"]["uid"] == made.uid
        and synced["involvedObject"]["kind"] == "ConfigMap"
    )
    assert synced["source"] == {"component": "web-controller", "host": "replica-1"}
    assert synced["metadata"]["name"].startswith("web.")
    assert synced["firstTimestamp"] and synced["lastTimestamp"]
    # (the last one was sent when the recorder stopped)
    assert sorted(e["count"] for e in about(sim, "web") if e["reason"] == "Synced") == [1, 2]
    assert (recorder.recorded, recorder.dropped, recorder.failed) == (4, 0, 0)


async def test_a_flood_about_one_object_is_rate_limited(sim: KubeSim, client: Client) -> None:
    clock = Clock()
    recorder = EventRecorder(client, "loop", clock=clock)
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "u1"}}
    async with recorder:
        for i in range(events_module.BURST + 10):
            recorder.record(obj, "Warning", "Looping", f"attempt {i}")
        clock.now += events_module.REFILL_SECONDS  # one more token
        recorder.record(obj, "Warning", "Looping", "later")
    sent = about(sim, "node-1")
    assert len(sent) == events_module.BURST + 1 and recorder.dropped == 10
    assert {e["metadata"]["namespace"] for e in sent} == {"default"}  # a cluster-scoped object


async def test_names_stay_valid_and_failures_are_counted_not_raised(
    sim: KubeSim, client: Client
) -> None:
    recorder = EventRecorder(client, "c")
    long_name = "x" * 253
    with pytest.raises(ClosedError, match="not running"):
        await recorder.flush()
    async with recorder:
        recorder.record(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": long_name, "namespace": "default"},
            },
            "Normal",
            "Long",
            "a name at the limit",
        )
        recorder.record(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ns-gone", "namespace": "no-such-ns"},
            },
            "Normal",
            "Lost",
            "its namespace does not exist",
        )
    with pytest.raises(ClosedError):  # stopped: it takes no more
        recorder.record(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "Normal", "R", "m"
        )
    names = [e["metadata"]["name"] for e in about(sim, long_name)]
    assert len(names) == 1 and len(names[0]) <= 253
    assert recorder.failed == 1  # the 404 was logged and counted, nothing raised
    with pytest.raises(ConfigError, match="'Normal' or 'Warning'"):
        EventRecorder(client, "c").record(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
            "Info",
            "R",
            "m",  # type: ignore[arg-type]
        )


async def test_events_recorded_in_a_reconcile_are_sent_outside_it(sim: KubeSim) -> None:
    """An event is advisory: recorded by a reconcile whose key is lost right after, it is
    still sent (the recorder's writes are no reconcile's, so they are not fenced)."""
    holds = {"yes": True}
    async with sim.api_client() as api:
        m = Manager(api)
        cms = m.informer("v1", "configmaps", namespace="default")
        recorder = m.event_recorder("cm")

        async def reconcile(key: str) -> Result | None:
            owner = cms.snapshot().get(key)
            assert owner is not None
            recorder.record(owner, "Normal", "Seen", "seen by the reconcile")
            holds["yes"] = False
            return None

        ctl = m.controller("cm", reconcile, primary=cms)
        ctl._may_act = lambda key: holds["yes"]
        sim.create("configmaps", {"metadata": {"name": "e"}}, "default")
        async with m:
            await eventually(lambda: recorder.recorded == 1, "the event recorded")
            await recorder.flush()
            assert (recorder.failed, recorder.dropped) == (0, 0)
            assert [e["reason"] for e in about(sim, "e")] == ["Seen"]
        assert m.event_recorders == [recorder]


async def test_a_server_refusing_every_event_is_one_warning(
    sim: KubeSim, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator without RBAC for events (every create answered 403): 50 events are
    all counted in ``failed`` and logged once (then summarized every 10 s), not 50 times."""
    nobody = sim.add_user("nobody")
    cfg = sim.client_configuration()
    cfg.api_key = {"BearerToken": nobody}
    async with client_module.ApiClient(configuration=cfg) as api:
        recorder = EventRecorder(Client(api), "c")
        async with recorder:
            for i in range(50):
                body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}}
                recorder.record({**body, "metadata": {**body["metadata"], "namespace": "default"}},
                                "Normal", "Tried", "something")  # fmt: skip
            await recorder.flush()
    assert recorder.failed == 50
    logged = [r for r in caplog.records if "an event was not recorded" in r.getMessage()]
    assert len(logged) == 1 and "403" in logged[0].getMessage(), logged


async def test_messages_are_cleaned_of_credentials_and_cut_to_the_limit(
    sim: KubeSim, client: Client
) -> None:
    """An error's text recorded as it is: the client's token it echoes is redacted, and a
    message longer than the API's limit (1024 bytes) is cut at a character, not refused."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "m", "namespace": "default"},
    }
    made = await client.create(cm)
    recorder = EventRecorder(client, "c")
    async with recorder:
        recorder.record(made, "Warning", "Echo", f"the server said: token {sim.token} refused")
        recorder.record(made, "Warning", "Long", "é" * 2000)  # 2 bytes each
        recorder.record(made, "Normal", "Short", "é" * 512)  # at the limit: kept whole
    got = {e["reason"]: e["message"] for e in about(sim, "m")}
    assert sim.token not in got["Echo"] and "<redacted>" in got["Echo"]
    long = got["Long"]
    assert long.endswith("...") and long[:-3] == "é" * 510
    assert len(long.encode()) <= events_module.MESSAGE_LIMIT
    assert got["Short"] == "é" * 512
