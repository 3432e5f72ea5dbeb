"""Services: their strategy (addresses and node ports: :mod:`kubesim.apis.core.service.ips`).

* names are DNS-1035 labels (stricter than RFC 1123, as upstream);
* defaults: ports' protocol and targetPort, type ClusterIP, session affinity None, the
  internal traffic policy, ``status.loadBalancer`` on create, keys in Go struct order;
* on create the service REST allocates the cluster IP and node ports
  (:func:`~kubesim.apis.core.service.ips.allocate`), on update keeps them
  (:func:`~kubesim.apis.core.service.ips.keep_allocated`);
* the table (Type, Cluster-IP, External-IP, Port(s), Age, Selector); a completed DELETE
  answers the object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.core.service.ips import allocate, keep_allocated
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.printing import (
    CORE,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    format_labels,
    int_of,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)
from kubesim.machinery.validation import Cause, NameRule
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["ServiceStrategy"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _service_columns() -> list[Column]:
    spec = CORE + "ServiceSpec"
    return [
        name_column(),
        Column("Type", "string", doc(spec, "type")),
        Column("Cluster-IP", "string", doc(spec, "clusterIP")),
        Column("External-IP", "string", doc(spec, "externalIPs")),
        Column("Port(s)", "string", doc(spec, "ports")),
        age_column(),
        Column("Selector", "string", doc(spec, "selector"), 1),
    ]


def _load_balancer_ips(status: Obj) -> str:
    ingress = [
        mapping_of(i) for i in list_of(mapping_of(status.get("loadBalancer")).get("ingress"))
    ]
    return ",".join(str_of(i.get("ip")) or str_of(i.get("hostname")) for i in ingress if i)


def _external_ip(spec: Obj, status: Obj) -> str:
    external = [str(ip) for ip in list_of(spec.get("externalIPs"))]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        lb = _load_balancer_ips(status)
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if kind == "ExternalName":
        return str_of(spec.get("externalName"))
    return "<unknown>"


def _service_cells(obj: Obj, now: float) -> Cells:
    spec = spec_of(obj)
    ips = list_of(spec.get("clusterIPs"))
    ports = []
    for p in (mapping_of(p) for p in list_of(spec.get("ports"))):
        node = int_of(p.get("nodePort"))
        proto = str_of(p.get("protocol"))
        ports.append(
            f"{int_of(p.get('port'))}:{node}/{proto}"
            if node
            else f"{int_of(p.get('port'))}/{proto}"
        )
    return [
        name_of(obj),
        str_of(spec.get("type")),
        str(ips[0]) if ips else "<none>",
        _external_ip(spec, status_of(obj)),
        ",".join(ports) or "<none>",
        created_age(obj, now),
        format_labels(mapping_of(spec.get("selector"))),
    ]


def _default_service(obj: dict[str, Any], creating: bool) -> None:
    spec = sub(obj, "spec")
    for port in map(_d, _l(spec.get("ports"))):
        port.setdefault("protocol", "TCP")
        if "port" in port:
            port.setdefault("targetPort", port["port"])
        order_keys(port, ("name", "protocol", "appProtocol", "port", "targetPort", "nodePort"))
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    order = "ports selector clusterIP clusterIPs type externalIPs sessionAffinity"
    order_keys(spec, (*order.split(), "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"))
    if creating:
        obj["status"] = {"loadBalancer": {}}


class ServiceStrategy(Strategy):
    """Services (see the module docstring)."""

    name_rule: NameRule = "dns1035"
    returns_deleted_object = True
    table = Printer(_service_columns, _service_cells)

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_service(obj, creating)
        super().default(rt, obj, creating=creating)

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        return allocate(obj, stored())

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        return keep_allocated(old, new)
