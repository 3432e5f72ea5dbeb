"""Nodes: their strategy.

* a create keeps the status in the body (the kubelet registers its node with one; 24a),
  and one through the API gets TaintNodesByCondition's ``node.kubernetes.io/not-ready``
  NoSchedule taint until the node lifecycle controller sees it ready;
* defaults: a status skeleton (allocatable from capacity, the kubelet endpoint, every
  ``nodeInfo`` field), keys in Go struct order;
* the table (``kubectl get nodes``: Status, Roles, Age, Version and the wide columns), the
  ``spec.unschedulable`` field selector (no ``metadata.namespace``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.fields import bool_field, field_label_not_supported
from kubesim.machinery.printing import (
    CORE,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["NodeStrategy"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _node_columns() -> list[Column]:
    info = CORE + "NodeSystemInfo"
    addresses = doc(CORE + "NodeStatus", "addresses")
    return [
        name_column(),
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        age_column(),
        Column("Version", "string", doc(info, "kubeletVersion")),
        Column("Internal-IP", "string", addresses, 1),
        Column("External-IP", "string", addresses, 1),
        Column("OS-Image", "string", doc(info, "osImage"), 1),
        Column("Kernel-Version", "string", doc(info, "kernelVersion"), 1),
        Column("Container-Runtime", "string", doc(info, "containerRuntimeVersion"), 1),
    ]


def _node_cells(obj: Obj, now: float) -> Cells:
    status = status_of(obj)
    ready = next(
        (
            mapping_of(c)
            for c in list_of(status.get("conditions"))
            if mapping_of(c).get("type") == "Ready"
        ),
        None,
    )
    states = []
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        states.append("Unknown")
    if spec_of(obj).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in mapping_of(mapping_of(obj.get("metadata")).get("labels")).items():
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]:
            roles.add(k.split("/", 1)[1])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    info = mapping_of(status.get("nodeInfo"))
    addrs = [mapping_of(a) for a in list_of(status.get("addresses"))]

    def address(kind: str) -> str:
        return next((str_of(a.get("address")) for a in addrs if a.get("type") == kind), "<none>")

    return [
        name_of(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        created_age(obj, now),
        str_of(info.get("kubeletVersion")),
        address("InternalIP"),
        address("ExternalIP"),
        str_of(info.get("osImage")) or "<unknown>",
        str_of(info.get("kernelVersion")) or "<unknown>",
        str_of(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _default_node(obj: dict[str, Any], creating: bool) -> None:
    sub(obj, "spec")
    status = sub(obj, "status")
    if "capacity" in status:
        status.setdefault("allocatable", copy.deepcopy(status["capacity"]))
    sub(status, "daemonEndpoints").setdefault("kubeletEndpoint", {"Port": 0})
    info = sub(status, "nodeInfo")
    keys = (
        "machineID systemUUID bootID kernelVersion osImage containerRuntimeVersion kubeletVersion"
    )
    for k in (*keys.split(), "kubeProxyVersion", "operatingSystem", "architecture"):
        info.setdefault(k, "")
    order = "capacity allocatable phase conditions addresses daemonEndpoints nodeInfo images"
    order_keys(status, (*order.split(), "volumesInUse", "volumesAttached", "config"))


class NodeStrategy(Strategy):
    """Nodes (see the module docstring)."""

    keeps_status_on_create = True
    namespace_field_label = False
    table = Printer(_node_columns, _node_cells)

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_node(obj, creating)
        super().default(rt, obj, creating=creating)

    def admit(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """TaintNodesByCondition: a new Node is ``node.kubernetes.io/not-ready``
        NoSchedule until the node lifecycle controller sees it ready (24a)."""
        spec = sub(obj, "spec")
        taints = _l(spec.get("taints"))
        if not any(_d(t).get("key") == "node.kubernetes.io/not-ready" for t in taints):
            spec["taints"] = [
                *taints,
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
            ]

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"spec.unschedulable": bool_field(obj, "spec", "unschedulable")}

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)
