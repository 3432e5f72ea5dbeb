"""The APF configuration controller's objects: what kube-apiserver v1.28 writes at start.

:func:`bootstrap_objects` gives the mandatory and suggested objects (FlowSchemas
``exempt``, ``probes``, ``catch-all``, ``system-nodes``, ``global-default``, ...;
PriorityLevelConfigurations ``exempt``, ``catch-all``, ``system``, ``workload-high``, ...)
with the ``apf.kubernetes.io/autoupdate-spec`` annotation and, on FlowSchemas, the
``Dangling`` condition; their rules follow upstream's bootstrap configuration in shape, not
in every subject. Nothing enforces them: no request is ever queued or rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = ["GROUP", "bootstrap_objects"]

#: The API group of FlowSchemas and PriorityLevelConfigurations.
GROUP: Final = "flowcontrol.apiserver.k8s.io"
_PLC: Final = "prioritylevelconfigurations"
_AUTOUPDATE: Final = {"apf.kubernetes.io/autoupdate-spec": "true"}
_ALL_RESOURCES: Final = {
    "verbs": ["*"],
    "apiGroups": ["*"],
    "resources": ["*"],
    "clusterScope": True,
    "namespaces": ["*"],
}
_ALL_URLS: Final = {"verbs": ["*"], "nonResourceURLs": ["*"]}
_EVERYONE: Final = (("Group", "system:unauthenticated"), ("Group", "system:authenticated"))


def _subjects(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, name in pairs:
        if kind == "ServiceAccount":
            ns, _, sa = name.partition("/")
            out.append({"kind": kind, "serviceAccount": {"namespace": ns, "name": sa}})
        else:
            out.append({"kind": kind, kind.lower(): {"name": name}})
    return out


def _flow_schema(
    name: str,
    level: str,
    precedence: int,
    method: str | None,
    subjects: tuple[tuple[str, str], ...],
    resource_rules: list[dict[str, Any]] | None = None,
    url_rules: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    rule: dict[str, Any] = {"subjects": _subjects(*subjects)}
    rule["resourceRules"] = [dict(_ALL_RESOURCES)] if resource_rules is None else resource_rules
    if url_rules is None or url_rules:
        rule["nonResourceRules"] = [dict(_ALL_URLS)] if url_rules is None else url_rules
    if not rule["resourceRules"]:
        del rule["resourceRules"]
    spec: dict[str, Any] = {
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
    }
    if method:
        spec["distinguisherMethod"] = {"type": method}
    spec["rules"] = [rule]
    return {"metadata": {"name": name, "annotations": dict(_AUTOUPDATE)}, "spec": spec}


def _limited(shares: int, lendable: int, queues: tuple[int, int, int] | None) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "Reject"}
    if queues is not None:
        q, hand, length = queues
        response = {
            "type": "Queue",
            "queuing": {"queues": q, "handSize": hand, "queueLengthLimit": length},
        }
    limited = {
        "nominalConcurrencyShares": shares,
        "limitResponse": response,
        "lendablePercent": lendable,
    }
    return {"type": "Limited", "limited": limited}


_LEVELS: Final = (
    ("exempt", {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
    ("catch-all", _limited(5, 0, None)),
    ("system", _limited(30, 33, (64, 6, 50))),
    ("node-high", _limited(40, 25, (64, 6, 50))),
    ("leader-election", _limited(10, 0, (16, 4, 50))),
    ("workload-high", _limited(40, 50, (128, 6, 50))),
    ("workload-low", _limited(100, 90, (128, 6, 50))),
    ("global-default", _limited(20, 50, (128, 6, 50))),
)


def _leases(verbs: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "verbs": verbs,
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "namespaces": ["*"],
        }
    ]


def _schemas() -> list[dict[str, Any]]:
    probes = [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]
    kcm, sched = ("User", "system:kube-controller-manager"), ("User", "system:kube-scheduler")
    nodes = ("Group", "system:nodes")
    node_rules = [
        {
            "verbs": ["*"],
            "apiGroups": [""],
            "resources": ["nodes", "nodes/status"],
            "clusterScope": True,
        },
        *_leases(["*"]),
    ]
    endpoints = [
        {
            "verbs": ["get", "create", "update"],
            "apiGroups": [""],
            "resources": ["endpoints"],
            "namespaces": ["*"],
        }
    ]
    return [
        _flow_schema("exempt", "exempt", 1, None, (("Group", "system:masters"),)),
        _flow_schema("probes", "exempt", 2, None, _EVERYONE, [], probes),
        _flow_schema(
            "system-leader-election", "leader-election", 100, "ByUser", (kcm, sched),
            _leases(["get", "create", "update"]), [],
        ),
        _flow_schema(
            "endpoint-controller", "workload-high", 150, "ByUser",
            (kcm, ("ServiceAccount", "kube-system/endpoint-controller")), endpoints, [],
        ),
        _flow_schema(
            "workload-leader-election", "leader-election", 200, "ByUser",
            (("ServiceAccount", "kube-system/*"),), _leases(["get", "create", "update"]), [],
        ),
        _flow_schema("system-node-high", "node-high", 400, "ByUser", (nodes,), node_rules, []),
        _flow_schema("system-nodes", "system", 500, "ByUser", (nodes,)),
        _flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace", (kcm,)),
        _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", (sched,)),
        _flow_schema(
            "kube-system-service-accounts", "workload-high", 900, "ByNamespace",
            (("ServiceAccount", "kube-system/*"),),
        ),
        _flow_schema(
            "service-accounts", "workload-low", 9000, "ByUser",
            (("Group", "system:serviceaccounts"),),
        ),
        _flow_schema("global-default", "global-default", 9900, "ByUser", _EVERYONE),
        _flow_schema("catch-all", "catch-all", 10000, "ByUser", _EVERYONE),
    ]  # fmt: skip


def bootstrap_objects(now: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(resource, body)`` of the objects the APF configuration controller writes at start
    (priority levels first), with the status it gives them at ``now``."""
    for name, spec in _LEVELS:
        meta = {"name": name, "annotations": dict(_AUTOUPDATE)}
        yield f"{GROUP}/v1beta3/{_PLC}", {"metadata": meta, "spec": spec, "status": {}}
    for schema in _schemas():
        level = schema["spec"]["priorityLevelConfiguration"]["name"]
        message = (
            f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "and it exists"
        )
        condition = {
            "type": "Dangling",
            "status": "False",
            "lastTransitionTime": now,
            "reason": "Found",
            "message": message,
        }
        yield f"{GROUP}/v1beta3/flowschemas", schema | {"status": {"conditions": [condition]}}
