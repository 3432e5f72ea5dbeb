"""The core/v1 printers' cells for the states the recordings do not show, as v1.28's
printers.go computes them (services, endpoints, nodes, events, counts), the registry, and
the column sets of every printed kind."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest

from kubesim.apis.builtin import builtin_registry
from kubesim.encoding.gotime import format_time
from kubesim.machinery.printing import Printer, default_printer

NOW = time.time()
AGO_5M = format_time(datetime.datetime.fromtimestamp(NOW - 300, datetime.UTC))


def printer_for(group: str, plural: str) -> Printer | None:
    """The printer of the built-in kind ``plural.group`` (its strategy's)."""
    rt = next(rt for rt in builtin_registry().all() if (rt.group, rt.plural) == (group, plural))
    return rt.strategy.printer(rt)


def cells(group: str, plural: str, obj: dict[str, Any]) -> list[Any]:
    """A registered printer's cells for ``obj`` (one per column)."""
    printer = printer_for(group, plural)
    assert printer is not None
    out = printer.cells(obj, NOW)
    assert len(out) == len(printer.columns())
    return out


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
