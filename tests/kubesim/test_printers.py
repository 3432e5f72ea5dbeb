"""The built-in printers' cells for the states the recordings do not show, as v1.28's
printers.go computes them (pod status reasons, restarts, readiness gates, services,
endpoints, events, nodes, workloads), and the column sets of every printed kind."""

from __future__ import annotations

import time
from typing import Any

import pytest

from aioinformer.testing._kubesim.gotime import format_time
from aioinformer.testing._kubesim.printers import (
    default_printer,
    label_selector_string,
    printer_for,
)

NOW = time.time()
import datetime  # noqa: E402

AGO_5M = format_time(datetime.datetime.fromtimestamp(NOW - 300, datetime.UTC))


def cells(group: str, plural: str, obj: dict[str, Any]) -> list[Any]:
    printer = printer_for(group, plural)
    assert printer is not None
    out = printer.cells(obj, NOW)
    assert len(out) == len(printer.columns())
    return out


def pod(status: dict[str, Any], spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    base_spec = {"containers": [{"name": "a"}, {"name": "b"}]}
    return {
        "metadata": {"name": "p", "creationTimestamp": AGO_5M, **meta},
        "spec": {**base_spec, **(spec or {})},
        "status": status,
    }


def running(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}}


@pytest.mark.parametrize(
    ("status", "spec", "meta", "want"),
    [
        (
            {"phase": "Running", "containerStatuses": [running("a"), running("b")]},
            None,
            {},
            ["2/2", "Running", "0"],
        ),
        (
            {
                "phase": "Running",
                "containerStatuses": [
                    running("a"),
                    {
                        "name": "b",
                        "restartCount": 4,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"finishedAt": AGO_5M}},
                    },
                ],
            },
            None,
            {},
            ["1/2", "CrashLoopBackOff", "4 (5m ago)"],
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 2}}}],
            },
            None,
            {},
            ["0/2", "ExitCode:2", "0"],
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [{"name": "a", "state": {"terminated": {"signal": 9}}}],
            },
            None,
            {},
            ["0/2", "Signal:9", "0"],
        ),
        (
            {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running("b"),
                ],
            },
            None,
            {},
            ["1/2", "NotReady", "0"],
        ),
        (
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                    {"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}},
                ],
            },
            {"initContainers": [{"name": "i1"}, {"name": "i2"}]},
            {},
            ["0/2", "Init:1/2", "0"],
        ),
        (
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "i1", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
                ],
            },
            {"initContainers": [{"name": "i1"}]},
            {},
            ["0/2", "Init:ImagePullBackOff", "0"],
        ),
        (
            {
                "phase": "Running",
                "initContainerStatuses": [
                    {"name": "side", "started": True, "ready": True, "state": {"running": {}}}
                ],
                "containerStatuses": [running("a"), running("b")],
            },
            {"initContainers": [{"name": "side", "restartPolicy": "Always"}]},
            {},
            ["3/3", "Running", "0"],
        ),
        (
            {"phase": "Running", "containerStatuses": [running("a"), running("b")]},
            None,
            {"deletionTimestamp": AGO_5M},
            ["2/2", "Terminating", "0"],
        ),
        (
            {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                ],
            },
            None,
            {},
            ["0/2", "SchedulingGated", "0"],
        ),
        ({"phase": "Failed", "reason": "Evicted"}, None, {}, ["0/2", "Evicted", "0"]),
    ],
)
def test_pod_status_column(
    status: dict[str, Any], spec: Any, meta: dict[str, Any], want: list[str]
) -> None:
    got = cells("", "pods", pod(status, spec, **meta))
    assert got[1:4] == want
    assert got[4] == "5m0s" or got[4].startswith("5m")


def test_pod_wide_cells_and_row_conditions() -> None:
    p = pod(
        {
            "phase": "Succeeded",
            "podIPs": [{"ip": "10.0.0.7"}],
            "nominatedNodeName": "n2",
            "conditions": [{"type": "g1", "status": "True"}, {"type": "g2", "status": "False"}],
        },
        {"nodeName": "n1", "readinessGates": [{"conditionType": "g1"}, {"conditionType": "g2"}]},
    )
    assert cells("", "pods", p)[5:] == ["10.0.0.7", "n1", "n2", "1/2"]
    printer = printer_for("", "pods")
    assert printer is not None and printer.conditions is not None
    assert printer.conditions(p) == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert printer.conditions(pod({"phase": "Running"})) == []


def test_workload_cells() -> None:
    template = {
        "spec": {"containers": [{"name": "a", "image": "i1"}, {"name": "b", "image": "i2"}]}
    }
    sel = {
        "matchLabels": {"app": "x"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    meta = {"name": "w", "creationTimestamp": AGO_5M}
    rs = {
        "metadata": meta,
        "spec": {"replicas": 3, "selector": sel, "template": template},
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    assert cells("apps", "replicasets", rs)[1:4] == [3, 2, 1]
    assert cells("apps", "replicasets", rs)[5:] == ["a,b", "i1,i2", "app=x,!gone,tier in (a,b)"]
    sts = {
        "metadata": meta,
        "spec": {"replicas": 3, "template": template},
        "status": {"readyReplicas": 2},
    }
    assert cells("apps", "statefulsets", sts)[1] == "2/3"
    ds = {
        "metadata": meta,
        "spec": {"template": {"spec": {**template["spec"], "nodeSelector": {"b": "2", "a": "1"}}}},
        "status": {"desiredNumberScheduled": 4, "numberReady": 3},
    }
    assert cells("apps", "daemonsets", ds)[1:7] == [4, 0, 3, 0, 0, "a=1,b=2"]
    assert cells("apps", "daemonsets", ds)[-1] == "<none>"  # no selector
    cr = {
        "metadata": {
            **meta,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": True}
            ],
        },
        "revision": 7,
    }
    assert cells("apps", "controllerrevisions", cr)[1:3] == ["statefulset.apps/web", 7]
    assert label_selector_string({}) == ""


@pytest.mark.parametrize(
    ("spec", "status", "want"),
    [
        (
            {
                "type": "ClusterIP",
                "clusterIPs": ["10.96.0.1"],
                "ports": [{"port": 443, "protocol": "TCP"}],
            },
            {},
            ["ClusterIP", "10.96.0.1", "<none>", "443/TCP"],
        ),
        (
            {
                "type": "NodePort",
                "clusterIPs": ["10.96.0.2"],
                "ports": [
                    {"port": 80, "nodePort": 30080, "protocol": "TCP"},
                    {"port": 53, "protocol": "UDP"},
                ],
            },
            {},
            ["NodePort", "10.96.0.2", "<none>", "80:30080/TCP,53/UDP"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.96.0.3"], "ports": []},
            {},
            ["LoadBalancer", "10.96.0.3", "<pending>", "<none>"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.96.0.3"], "externalIPs": ["1.2.3.4"]},
            {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}},
            ["LoadBalancer", "10.96.0.3", "5.6.7.8,1.2.3.4", "<none>"],
        ),
        (
            {"type": "ExternalName", "externalName": "example.com"},
            {},
            ["ExternalName", "<none>", "example.com", "<none>"],
        ),
    ],
)
def test_service_cells(spec: dict[str, Any], status: dict[str, Any], want: list[str]) -> None:
    svc = {
        "metadata": {"name": "s", "creationTimestamp": AGO_5M},
        "spec": {**spec, "selector": {"app": "x"}},
        "status": status,
    }
    got = cells("", "services", svc)
    assert got[1:5] == want and got[6] == "app=x"


def test_endpoints_nodes_events_and_counts() -> None:
    meta = {"name": "o", "creationTimestamp": AGO_5M}
    ep = {
        "metadata": meta,
        "subsets": [
            {"addresses": [{"ip": f"10.0.0.{i}"} for i in range(5)], "ports": [{"port": 80}]}
        ],
    }
    assert cells("", "endpoints", ep)[1] == "10.0.0.0:80,10.0.0.1:80,10.0.0.2:80 + 2 more..."
    assert cells("", "endpoints", {"metadata": meta})[1] == "<none>"
    node = {
        "metadata": {
            **meta,
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"},
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "addresses": [{"type": "ExternalIP", "address": "1.1.1.1"}],
        },
    }
    got = cells("", "nodes", node)
    assert got[1:3] == ["NotReady,SchedulingDisabled", "control-plane,infra"]
    assert got[5:] == ["<none>", "1.1.1.1", "<unknown>", "<unknown>", "<unknown>"]
    ev = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
        "reason": "Pulled",
        "type": "Normal",
        "message": " done \n",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": AGO_5M,
        "lastTimestamp": AGO_5M,
        "count": 3,
    }
    got = cells("", "events", ev)
    assert got[1:] == [
        "Normal",
        "Pulled",
        "pod/p",
        "spec.containers{c}",
        "kubelet, n1",
        "done",
        got[7],
        3,
        "e1",
    ]
    assert got[0] == got[7] and got[0].startswith("5m")
    single = {
        "metadata": {"name": "e2"},
        "regarding": {"kind": "Node", "name": "n"},
        "note": "x",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "c",
    }
    got = cells("events.k8s.io", "events", single)
    assert got[3] == "node/n" and got[5] == "c" and got[6] == "x" and got[8] == 1
    assert (
        cells("", "configmaps", {"metadata": meta, "data": {"a": "1"}, "binaryData": {"b": ""}})[1]
        == 2
    )
    assert cells("", "secrets", {"metadata": meta, "type": "Opaque", "data": {"a": ""}})[1:3] == [
        "Opaque",
        1,
    ]
    assert (
        cells("", "namespaces", {"metadata": meta, "status": {"phase": "Terminating"}})[1]
        == "Terminating"
    )
    assert cells("coordination.k8s.io", "leases", {"metadata": meta, "spec": {}})[1] == ""
    assert cells("", "serviceaccounts", {"metadata": meta, "secrets": [{"name": "t"}]})[1] == 1


def test_columns_of_every_printed_kind_are_documented() -> None:
    kinds = [
        ("", "pods"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apps", "controllerrevisions"),
        ("", "services"),
        ("", "endpoints"),
        ("", "nodes"),
        ("", "events"),
        ("", "persistentvolumeclaims"),
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("coordination.k8s.io", "leases"),
    ]
    for group, plural in kinds:
        printer = printer_for(group, plural)
        assert printer is not None, plural
        cols = printer.columns()
        assert all(c.description for c in cols), plural
        assert "Possible enum values" not in "".join(c.description for c in cols)
        assert sum(c.format == "name" for c in cols) == 1, plural
    svc = [c.name for c in printer_for("", "services").columns()]  # type: ignore[union-attr]
    assert svc == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    crd = default_printer()
    assert [(c.name, c.type) for c in crd.columns()] == [("Name", "string"), ("Created At", "date")]
    assert crd.cells({"metadata": {"name": "x", "creationTimestamp": AGO_5M}}, NOW) == ["x", AGO_5M]
