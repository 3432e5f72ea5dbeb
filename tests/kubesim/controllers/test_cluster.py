"""ClusterEmulator: the scheduler, kubelets and pod GC of KubeSim's simulated cluster."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim.controllers.cluster import ClusterEmulator
from kubesim.errors import KubeSimApiError
from kubesim.kubesim import KubeSim
from tests.support import eventually


def pod(name: str, containers: int = 1, **spec: Any) -> dict[str, Any]:
    cs = [{"name": f"c{i}", "image": "busybox:1.36"} for i in range(containers)]
    return {"metadata": {"name": name}, "spec": {"containers": cs, **spec}}


async def settle(sim: KubeSim, timeout: float = 5.0) -> None:
    await asyncio.wait_for(sim.cluster.idle(), timeout)


def pod_events(sim: KubeSim, seq: int, key: str) -> list[tuple[str, dict[str, Any]]]:
    events = sim.api.store(sim.resource("pods")).events_since(seq)
    assert events is not None
    return [(ev.type, ev.obj.decode()) for ev in events if ev.key == key]


async def test_pods_are_bound_round_robin_and_become_running() -> None:
    async with KubeSim() as sim:
        nodes = sim.add_nodes(3)
        assert nodes == ["node-0", "node-1", "node-2"]
        sim.start_cluster(start_delay=0.05)
        for i in range(9):
            sim.create("pods", pod(f"p{i}", containers=2))
        await settle(sim)
        ips = set()
        per_node: dict[str, int] = {}
        node_ips = {n: sim.get("nodes", n)["status"]["addresses"][0]["address"] for n in nodes}
        for i in range(9):
            p = sim.get("pods", f"p{i}", "default")
            node = p["spec"]["nodeName"]
            per_node[node] = per_node.get(node, 0) + 1
            st = p["status"]
            assert st["phase"] == "Running"
            conds = {c["type"]: c for c in st["conditions"]}
            assert set(conds) == {"Initialized", "Ready", "ContainersReady", "PodScheduled"}
            assert all(c["status"] == "True" and c["lastTransitionTime"] for c in conds.values())
            assert st["hostIP"] == node_ips[node]
            assert st["podIP"].startswith("10.244.")
            assert st["podIPs"] == [{"ip": st["podIP"]}]
            assert st["startTime"]
            ips.add(st["podIP"])
            assert [c["name"] for c in st["containerStatuses"]] == ["c0", "c1"]
            for c in st["containerStatuses"]:
                assert c["ready"] is True and c["started"] is True and c["restartCount"] == 0
                assert c["image"] == "docker.io/library/busybox:1.36"
                assert c["imageID"].startswith("docker.io/library/busybox@sha256:")
                assert c["containerID"].startswith("containerd://")
                assert c["state"]["running"]["startedAt"]
        assert len(ips) == 9
        assert per_node == {n: 3 for n in nodes}
        assert sim.cluster.stats()["bound"] == 9
        assert sim.cluster.stats()["started"] == 9


async def test_watch_sees_binding_then_kubelet_status() -> None:
    async with KubeSim(nodes=1) as sim:
        ts = sim.api.store(sim.resource("pods"))
        seq = ts.next_seq
        sim.start_cluster(start_delay=0.05)
        sim.create("pods", pod("w"))
        await settle(sim)
        events = pod_events(sim, seq, "default/w")
        assert [t for t, _ in events] == ["ADDED", "MODIFIED", "MODIFIED"]
        _, bound = events[1]
        assert bound["spec"]["nodeName"] == "node-0"
        assert bound["status"]["phase"] == "Pending"
        assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]
        _, running = events[2]
        assert running["status"]["phase"] == "Running"
        managers = [
            (m["manager"], m.get("subresource")) for m in running["metadata"]["managedFields"]
        ]
        assert ("kubelet", "status") in managers


async def test_phase_selector_watch_over_http(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """10c: a watch on status.phase=Pending sees the pod created, bound, then leave the
    selector (DELETED) when the kubelet reports Running."""
    sim.add_nodes(1)
    sim.start_cluster(start_delay=0.05)
    params = {
        "watch": "1",
        "resourceVersion": str(sim.resource_version),
        "fieldSelector": "status.phase=Pending",
        "timeoutSeconds": "5",
    }
    async with http.get("/api/v1/namespaces/default/pods", params=params) as resp:
        assert resp.status == 200
        sim.create("pods", pod("wire"))
        seen = []
        while len(seen) < 3:
            line = await asyncio.wait_for(resp.content.readline(), 5)
            assert line, "watch closed early"
            ev = orjson.loads(line)
            seen.append((ev["type"], ev["object"]["spec"].get("nodeName")))
    assert seen == [("ADDED", None), ("MODIFIED", "node-0"), ("DELETED", "node-0")]


async def test_nodes_look_like_real_nodes() -> None:
    async with KubeSim() as sim:
        assert sim.add_nodes(2) == ["node-0", "node-1"]
        assert sim.add_nodes(1) == ["node-2"]  # numbering continues
        node = sim.get("nodes", "node-2")
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == "node-2"
        assert labels["kubernetes.io/os"] == "linux"
        st = node["status"]
        for part in ("capacity", "allocatable"):
            assert {"cpu", "memory", "pods"} <= set(st[part])
        conds = {c["type"]: c["status"] for c in st["conditions"]}
        assert conds["Ready"] == "True" and conds["MemoryPressure"] == "False"
        internal = [a["address"] for a in st["addresses"] if a["type"] == "InternalIP"]
        assert len(internal) == 1 and internal[0].startswith("10.0.")
        assert st["nodeInfo"]["kubeletVersion"].startswith("v1.")
        ips = {
            sim.get("nodes", n)["status"]["addresses"][0]["address"]
            for n in ("node-0", "node-1", "node-2")
        }
        assert len(ips) == 3


async def test_without_nodes_pods_stay_pending_until_a_node_appears() -> None:
    async with KubeSim() as sim:
        sim.start_cluster(start_delay=0.05)
        for i in range(3):
            sim.create("pods", pod(f"p{i}"))
        await settle(sim)  # idle: it has seen every pod and nothing can be scheduled
        for i in range(3):
            p = sim.get("pods", f"p{i}", "default")
            assert "nodeName" not in p["spec"]
            assert p["status"]["phase"] == "Pending"
        assert sim.cluster.stats()["bound"] == 0
        sim.add_nodes(1)
        await settle(sim)
        assert all(
            sim.get("pods", f"p{i}", "default")["status"]["phase"] == "Running" for i in range(3)
        )


async def test_pods_of_another_scheduler_are_left_alone() -> None:
    async with KubeSim(nodes=1) as sim:
        sim.start_cluster(start_delay=0.05)
        sim.create("pods", pod("mine"))
        sim.create("pods", pod("theirs", schedulerName="custom"))
        await settle(sim)
        assert sim.get("pods", "mine", "default")["status"]["phase"] == "Running"
        assert "nodeName" not in sim.get("pods", "theirs", "default")["spec"]


async def test_node_created_through_the_api_is_used() -> None:
    async with KubeSim() as sim:
        sim.start_cluster(start_delay=0.05)
        sim.create("pods", pod("p"))
        status = {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.7"}],
        }
        sim.create("nodes", {"metadata": {"name": "worker"}, "status": status}, keep_status=True)
        await settle(sim)
        p = sim.get("pods", "p", "default")
        assert p["spec"]["nodeName"] == "worker"
        assert p["status"]["hostIP"] == "192.168.1.7"


def first_commits(sim: KubeSim, seq: int, done: str) -> list[float]:
    """The commit times (the server's own record) of the first write per pod since
    ``seq`` that made ``done`` true of it: "bound" (spec.nodeName set) or "started"."""
    events = sim.api.store(sim.resource("pods")).events_since(seq)
    assert events is not None
    times, seen = [], set()
    for ev in events:
        obj = ev.obj.decode()
        hit = obj["spec"].get("nodeName") if done == "bound" else obj["status"].get("startTime")
        if ev.type == "MODIFIED" and ev.key not in seen and hit:
            seen.add(ev.key)
            times.append(ev.t)
    return times


def assert_paced(times: list[float], rate: float) -> None:
    """The token bucket's promise, on the server's commit times: any ``n`` consecutive
    writes span at least ``(n - burst) / rate`` seconds (burst: 0.1 s of the rate, plus one
    token for a write committed an instant after the bucket allowed it)."""
    burst = max(1.0, rate * 0.1) + 1
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            n = j - i + 1
            assert times[j] - times[i] >= (n - burst) / rate, (i, j, times[j] - times[i])


async def test_schedule_rate_limits_binding() -> None:
    async with KubeSim(nodes=2) as sim:
        sim.create_many("pods", (pod(f"p{i:03}") for i in range(200)))
        seq = sim.api.store(sim.resource("pods")).next_seq
        sim.start_cluster(schedule_rate=20, start_delay=0.05, start_rate=1000)
        await eventually(lambda: sim.cluster.stats()["bound"] >= 12, "12 pods bound")
        times = first_commits(sim, seq, "bound")
        assert len(times) >= 12
        assert_paced(times, 20)
        assert sim.cluster.stats()["started"] <= sim.cluster.stats()["bound"]


async def test_start_rate_limits_kubelet_updates() -> None:
    async with KubeSim(nodes=2) as sim:
        sim.create_many("pods", (pod(f"p{i:03}") for i in range(200)))
        seq = sim.api.store(sim.resource("pods")).next_seq
        sim.start_cluster(schedule_rate=5000, start_delay=0.0, start_rate=20)
        await eventually(lambda: sim.cluster.stats()["started"] >= 12, "12 pods started")
        times = first_commits(sim, seq, "started")
        assert len(times) >= 12
        assert_paced(times, 20)
        assert sim.cluster.stats()["bound"] == 200  # binding was not held back


async def test_bulk_load_larger_than_the_watch_history() -> None:
    async with KubeSim(nodes=4, history_size=50) as sim:
        sim.start_cluster(schedule_rate=10_000, start_rate=10_000, start_delay=0.0)
        await asyncio.sleep(0)
        sim.create_many("pods", (pod(f"p{i:03}") for i in range(300)))  # evicts history
        await settle(sim, 10.0)
        phases = {p["status"]["phase"] for p in sim.list("pods", "default")}
        assert phases == {"Running"}
        assert sim.cluster.stats()["started"] == 300


async def test_graceful_deletion_completes() -> None:
    async with KubeSim(nodes=1) as sim:
        sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
        sim.create("pods", pod("g"))
        await settle(sim)
        seq = sim.api.store(sim.resource("pods")).next_seq
        sim.delete("pods", "g", "default")  # 30 s grace, capped
        p = sim.get("pods", "g", "default")
        assert p["metadata"]["deletionGracePeriodSeconds"] == 30
        await settle(sim)
        with pytest.raises(KubeSimApiError) as err:
            sim.get("pods", "g", "default")
        assert err.value.code == 404
        events = pod_events(sim, seq, "default/g")
        # 12-delete-preconditions-finalizers: MODIFIED (grace 30), the kubelet's force delete:
        # MODIFIED (grace 0), DELETED
        assert [t for t, _ in events] == ["MODIFIED", "MODIFIED", "DELETED"]
        graces = [o["metadata"]["deletionGracePeriodSeconds"] for _, o in events]
        assert graces == [30, 0, 0]
        assert sim.cluster.stats()["deleted"] == 1


async def test_unscheduled_pod_deletion_needs_no_kubelet() -> None:
    async with KubeSim() as sim:
        sim.start_cluster(start_delay=0.05)
        sim.create("pods", pod("u"))
        sim.delete("pods", "u", "default")
        await settle(sim)
        assert sim.list("pods", "default") == []
        assert sim.cluster.stats()["deleted"] == 0


async def test_remove_node_deletes_its_pods() -> None:
    async with KubeSim(nodes=2) as sim:
        sim.start_cluster(start_delay=0.05)
        for i in range(6):
            sim.create("pods", pod(f"p{i}"))
        await settle(sim)
        on_0 = {
            p["metadata"]["name"] for p in sim.list("pods") if p["spec"]["nodeName"] == "node-0"
        }
        assert len(on_0) == 3
        sim.cluster.remove_node("node-0")
        left = {p["metadata"]["name"] for p in sim.list("pods")}
        assert left == {f"p{i}" for i in range(6)} - on_0
        assert [n["metadata"]["name"] for n in sim.list("nodes")] == ["node-1"]
        assert sim.cluster.stats()["deleted"] == 3
        sim.create("pods", pod("after"))
        await settle(sim)
        assert sim.get("pods", "after", "default")["spec"]["nodeName"] == "node-1"


async def test_node_deleted_through_the_api_takes_its_pods() -> None:
    async with KubeSim(nodes=1) as sim:
        sim.start_cluster(start_delay=0.05)
        sim.create("pods", pod("p"))
        await settle(sim)
        sim.delete("nodes", "node-0")
        await settle(sim)
        assert sim.list("pods") == []


async def test_stop_is_idempotent_and_leaves_no_task() -> None:
    async with KubeSim() as sim:
        await sim.cluster.stop()  # never started
        sim.start_cluster(start_delay=0.05)
        sim.start_cluster(start_delay=0.05)  # already running: no second task
        tasks = [t for t in asyncio.all_tasks() if t.get_name() == "kubesim-cluster"]
        assert len(tasks) == 1
        await sim.cluster.stop()
        await sim.cluster.stop()
        assert tasks[0].done()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "kubesim-cluster"]
        await asyncio.wait_for(sim.cluster.idle(), 1)  # not running: returns at once
        sim.add_nodes(1)
        sim.create("pods", pod("p"))  # no task is left to schedule it (asserted above)
        assert "nodeName" not in sim.get("pods", "p", "default")["spec"]  # off once stopped


async def test_restart_picks_up_existing_pods() -> None:
    async with KubeSim(nodes=1) as sim:
        sim.create("pods", pod("early"))
        sim.start_cluster(start_delay=0.05)
        await settle(sim)
        await sim.cluster.stop()
        sim.create("pods", pod("late"))
        sim.start_cluster(start_delay=0.05)
        await settle(sim)
        for name in ("early", "late"):
            assert sim.get("pods", name, "default")["status"]["phase"] == "Running"


async def test_configure_rejects_bad_rates() -> None:
    async with KubeSim() as sim:
        with pytest.raises(ValueError):
            sim.cluster.configure(schedule_rate=0)
        assert isinstance(sim.cluster, ClusterEmulator)


async def test_kubelets_renew_their_node_leases() -> None:
    """Node heartbeats: each node's Lease in kube-node-lease is created and renewed, so
    the resourceVersion of an idle emulated cluster keeps moving (as a real one's does)."""
    async with KubeSim(nodes=2) as sim:
        sim.start_cluster(start_delay=0.05)
        await eventually(lambda: sim.cluster.heartbeats >= 2, "both kubelets' first heartbeat")
        leases = sim.list("coordination.k8s.io/v1/leases", "kube-node-lease")
        assert sorted(x["metadata"]["name"] for x in leases) == ["node-0", "node-1"]
        assert all(x["spec"]["holderIdentity"] == x["metadata"]["name"] for x in leases)
