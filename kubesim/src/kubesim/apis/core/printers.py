"""kube-apiserver's built-in table printers: the columns and cells ``kubectl get`` shows.

One printer per kind (pods, deployments, replicasets, statefulsets, daemonsets, services,
endpoints, configmaps, secrets, serviceaccounts, persistentvolumeclaims, nodes, namespaces,
events, leases, controllerrevisions), as v1.28's ``printers.go`` defines them: column names,
types, priorities (1 = what ``-o wide`` adds; the server always sends every column) and
descriptions, and cells computed from the object the same way, with the same JSON types
(integers stay integers even in a column typed "string", as recorded in 24c). Kinds
without a printer get the default table (Name, Created At). Recorded: 24a-24d, 16d, 16e.
This module has the core/v1 printers and the registry; the pod printer is in
:mod:`._podprinter`, apps/v1's in :mod:`._appsprinters`, autoscaling's, certificates',
flowcontrol's and apiregistration's in :mod:`._groupprinters`, what they share in
:mod:`._columns`.

Column descriptions are the API types' field documentation (from the recorded OpenAPI, the
"Possible enum values" appendix left out) or the printer's own text; where v1.28 documents
a column with a type it no longer serves (extensions/v1beta1), the text is that type's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesim.apis.apps.printers import APPS_PRINTERS
from kubesim.apis.autoscaling.horizontalpodautoscaler.printer import GROUP_PRINTERS
from kubesim.apis.core.event.conversion import V1_TO_CORE
from kubesim.apis.core.pod.printer import POD_PRINTER
from kubesim.encoding.gotime import age
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

__all__ = ["Column", "Printer", "default_printer", "doc", "printer_for"]

# -- core ----------------------------------------------------------------------------------------


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


def _endpoints_cells(obj: Obj, now: float) -> Cells:
    shown: list[str] = []
    count, more = 0, False
    for subset in (mapping_of(s) for s in list_of(obj.get("subsets"))):
        addresses = [str_of(mapping_of(a).get("ip")) for a in list_of(subset.get("addresses"))]
        ports: list[Mapping[str, Any] | None] = [
            mapping_of(p) for p in list_of(subset.get("ports"))
        ]
        for port in ports or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == 3:
                    more = True
                    break
                if port is None:
                    shown.append(ip)
                else:
                    host = f"[{ip}]" if _is_ipv6(ip) else ip
                    shown.append(f"{host}:{int_of(port.get('port'))}")
    text = ",".join(shown) if list_of(obj.get("subsets")) else "<none>"
    if more:
        text = f"{text} + {count - 3} more..."
    return [name_of(obj), text, created_age(obj, now)]


def _is_ipv6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return ":" in ip


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


def _event_columns() -> list[Column]:
    ev = CORE + "Event"
    return [
        Column("Last Seen", "string", doc(ev, "lastTimestamp")),
        Column("Type", "string", doc(ev, "type")),
        Column("Reason", "string", doc(ev, "reason")),
        Column("Object", "string", doc(ev, "involvedObject")),
        Column("Subobject", "string", doc(CORE + "ObjectReference", "fieldPath"), 1),
        Column("Source", "string", doc(ev, "source"), 1),
        Column("Message", "string", doc(ev, "message")),
        Column("First Seen", "string", doc(ev, "firstTimestamp"), 1),
        Column("Count", "string", doc(ev, "count"), 1),
        Column("Name", "string", doc("ObjectMeta", "name"), 1, "name"),
    ]


def _event_cells(obj: Obj, now: float) -> Cells:
    if "regarding" in obj or "note" in obj:
        obj = {V1_TO_CORE.get(k, k): v for k, v in obj.items()}  # one storage, printed alike
    first = str_of(obj.get("firstTimestamp"))
    first_seen = age(first or str_of(obj.get("eventTime")), now)
    last = str_of(obj.get("lastTimestamp"))
    last_seen = age(last, now) if last else first_seen
    count = int_of(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last_seen = age(str_of(series.get("lastObservedTime")), now)
        count = int_of(series.get("count"))
    elif not count:
        count = 1
    ref = mapping_of(obj.get("involvedObject"))
    kind = str_of(ref.get("kind")).lower()
    target = f"{kind}/{str_of(ref.get('name'))}" if ref.get("name") else kind
    source = mapping_of(obj.get("source"))
    component = str_of(source.get("component")) or str_of(obj.get("reportingComponent"))
    host = str_of(source.get("host")) or str_of(obj.get("reportingInstance"))
    return [
        last_seen,
        str_of(obj.get("type")),
        str_of(obj.get("reason")),
        target,
        str_of(ref.get("fieldPath")),
        f"{component}, {host}" if host else component,
        str_of(obj.get("message")).strip(),
        first_seen,
        count,
        name_of(obj),
    ]


def _simple(
    extra: Sequence[Column | Callable[[], Column]], cell: Callable[[Obj], Cells]
) -> Printer:
    """A printer of Name, ``extra`` columns (cells from ``cell``), Age."""

    def columns() -> list[Column]:
        return [name_column(), *(c if isinstance(c, Column) else c() for c in extra), age_column()]

    def cells(obj: Obj, now: float) -> Cells:
        return [name_of(obj), *cell(obj), created_age(obj, now)]

    return Printer(columns, cells)


def _pvc_columns() -> list[Column]:
    st, sp = CORE + "PersistentVolumeClaimStatus", CORE + "PersistentVolumeClaimSpec"
    return [
        name_column(),
        Column("Status", "string", doc(st, "phase")),
        Column("Volume", "string", doc(sp, "volumeName")),
        Column("Capacity", "string", doc(st, "capacity")),
        Column("Access Modes", "string", doc(st, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        age_column(),
        Column("VolumeMode", "string", doc(sp, "volumeMode"), 1),
    ]


_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX"}


def _pvc_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    phase = (
        "Terminating"
        if mapping_of(obj.get("metadata")).get("deletionTimestamp")
        else str_of(status.get("phase"))
    )
    capacity = modes = ""
    if spec.get("volumeName"):
        have = set(list_of(status.get("accessModes")))
        order = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
        modes = ",".join(_ACCESS.get(m, "RWOP") for m in order if m in have)
        capacity = str(mapping_of(status.get("capacity")).get("storage", ""))
    klass = str_of(spec.get("storageClassName")) or str_of(
        mapping_of(mapping_of(obj.get("metadata")).get("annotations")).get(
            "volume.beta.kubernetes.io/storage-class"
        )
    )
    mode = str_of(spec.get("volumeMode")) or "<unset>"
    return [
        name_of(obj),
        phase,
        str_of(spec.get("volumeName")),
        capacity,
        modes,
        klass,
        created_age(obj, now),
        mode,
    ]


# -- registry ------------------------------------------------------------------------------------


def _count(key: str) -> Callable[[Obj], Cells]:
    return lambda o: [len(list_of(o.get(key))) if key == "secrets" else len(mapping_of(o.get(key)))]


_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): POD_PRINTER,
    **{("apps", plural): printer for plural, printer in APPS_PRINTERS.items()},
    ("", "services"): Printer(_service_columns, _service_cells),
    ("", "endpoints"): Printer(
        lambda: [
            name_column(),
            Column("Endpoints", "string", doc(CORE + "Endpoints", "subsets")),
            age_column(),
        ],
        _endpoints_cells,
    ),
    ("", "nodes"): Printer(_node_columns, _node_cells),
    ("", "events"): Printer(_event_columns, _event_cells),
    ("events.k8s.io", "events"): Printer(_event_columns, _event_cells),
    ("", "persistentvolumeclaims"): Printer(_pvc_columns, _pvc_cells),
    ("", "namespaces"): _simple(
        [Column("Status", "string", "The status of the namespace")],
        lambda o: [str_of(status_of(o).get("phase"))],
    ),
    ("", "configmaps"): _simple(
        [lambda: Column("Data", "string", doc(CORE + "ConfigMap", "data"))],
        lambda o: [len(mapping_of(o.get("data"))) + len(mapping_of(o.get("binaryData")))],
    ),
    ("", "secrets"): _simple(
        [
            lambda: Column("Type", "string", doc(CORE + "Secret", "type")),
            lambda: Column("Data", "string", doc(CORE + "Secret", "data")),
        ],
        lambda o: [str_of(o.get("type")), len(mapping_of(o.get("data")))],
    ),
    ("", "serviceaccounts"): _simple(
        [lambda: Column("Secrets", "string", doc(CORE + "ServiceAccount", "secrets"))],
        _count("secrets"),
    ),
    ("coordination.k8s.io", "leases"): _simple(
        [
            lambda: Column(
                "Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")
            )
        ],
        lambda o: [str_of(spec_of(o).get("holderIdentity"))],
    ),
}


def _default_columns() -> list[Column]:
    return [
        name_column(),
        Column("Created At", "date", doc("ObjectMeta", "creationTimestamp")),
    ]


def default_printer() -> Printer:
    """The default table convertor's: Name and Created At (the timestamp as stored)."""
    return Printer(
        _default_columns,
        lambda o, _now: [name_of(o), mapping_of(o.get("metadata")).get("creationTimestamp")],
    )


def printer_for(group: str, plural: str, version: str = "") -> Printer | None:
    """The built-in printer of ``plural.group`` (in ``version``, where the columns differ
    between versions), or None (then the default table)."""
    found = _PRINTERS.get((group, plural))
    if found is None:
        found = GROUP_PRINTERS.get((group, plural, version)) or GROUP_PRINTERS.get(
            (group, plural, "")
        )
    return found
