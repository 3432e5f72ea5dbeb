"""The Events of the cluster emulation (kubesim.controllers.pod_events): shaped as 26a records core/v1
Events, found by the field selectors kubectl describe uses, shown by kubectl describe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aioinformer.testing import KubeSim
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.registry.test_listing import pod
from tests.kubesim.replay import recorder, send
from tests.support import transcript


def _two_containers(name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"] = {
        "containers": [
            {"name": "app", "image": "busybox:1.36"},
            {"name": "side", "image": "nginx:1.25"},
        ]
    }
    return body


def _recorded_keys(label: str) -> set[str]:
    exchange = next(e for e in transcript("26a")["more_exchanges"] if e["label"] == label)
    return set(exchange["response"]["body"]) - {"kind", "apiVersion"}  # list items have none


async def test_scheduler_and_kubelet_events(sim: KubeSim) -> None:
    """A pod bound and started by the emulation has Scheduled, then Pulling, Pulled,
    Created and Started per container; listed with kubectl describe's field selector
    (involvedObject name, namespace, uid); the scheduler's Event has the keys 26a shows for
    an events.k8s.io Event read through core/v1, the kubelet's those of a core/v1 Event."""
    sim.add_nodes(1)
    sim.start_cluster(start_delay=0.0)
    created = sim.create("pods", _two_containers("web"), "default")
    await sim.wait_idle()
    uid = created["metadata"]["uid"]
    selector = f"involvedObject.name=web,involvedObject.namespace=default,involvedObject.uid={uid}"
    async with recorder(sim) as http:
        status, listed, _ = await send(
            http, "GET", "/api/v1/namespaces/default/events", query={"fieldSelector": selector}
        )
    assert status == 200
    events = sorted(listed["items"], key=lambda e: e["metadata"]["name"])
    assert [(e["reason"], e["involvedObject"].get("fieldPath")) for e in events] == [
        ("Scheduled", None),
        *[(r, "spec.containers{app}") for r in ("Pulling", "Pulled", "Created", "Started")],
        *[(r, "spec.containers{side}") for r in ("Pulling", "Pulled", "Created", "Started")],
    ]
    scheduled, pulling = events[0], events[1]
    assert scheduled["message"] == "Successfully assigned default/web to node-0"
    assert (scheduled["action"], scheduled["reportingComponent"]) == (
        "Binding",
        "default-scheduler",
    )
    assert scheduled["source"] == {} and scheduled["eventTime"]
    assert pulling["message"] == 'Pulling image "busybox:1.36"'
    assert pulling["source"] == {"component": "kubelet", "host": "node-0"}
    assert (pulling["count"], pulling["eventTime"], pulling["type"]) == (1, None, "Normal")
    assert all(e["metadata"]["name"].startswith("web.") for e in events)
    wire = {k for k in scheduled if k != "metadata"}
    assert {*wire, "metadata"} == _recorded_keys("GET the events.k8s.io Event through core/v1") | {
        "metadata"
    }
    assert {*pulling} == _recorded_keys("GET the core Event through core/v1")


async def test_events_can_be_turned_off(sim: KubeSim) -> None:
    sim.add_nodes(1)
    sim.start_cluster(start_delay=0.0, events=False)
    sim.create("pods", pod("quiet"), "default")
    await sim.wait_idle()
    assert sim.get("pods", "quiet", "default")["status"]["phase"] == "Running"
    assert sim.list("events", "default") == []


async def test_kubectl_describe_pod_shows_the_events(tmp_path: Path) -> None:
    """``kubectl describe pod`` lists the emulation's Events instead of ``<none>``."""
    async with kubectl_sim(tmp_path) as (sim, kubectl):
        sim.add_nodes(1)
        sim.start_cluster(start_delay=0.0)
        sim.create("pods", _two_containers("web"), "default")
        await sim.wait_idle()
        out = await kubectl.ok("describe", "pod", "web")
    events = out.split("Events:", 1)[1]
    assert "<none>" not in events
    assert "Successfully assigned default/web to node-0" in events
    for line in ('Pulling image "busybox:1.36"', "Created container side", "Started container app"):
        assert line in events
