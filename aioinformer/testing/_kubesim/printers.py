"""kube-apiserver's built-in table printers: the columns and cells ``kubectl get`` shows.

One printer per kind (pods, deployments, replicasets, statefulsets, daemonsets, services,
endpoints, configmaps, secrets, serviceaccounts, persistentvolumeclaims, nodes, namespaces,
events, leases, controllerrevisions), as v1.28's ``printers.go`` defines them: column names,
types, priorities (1 = what ``-o wide`` adds; the server always sends every column) and
descriptions, and cells computed from the object the same way, with the same JSON types
(integers stay integers even in a column typed "string", as recorded in 24c). Kinds
without a printer get the default table (Name, Created At). Recorded: 24a-24d, 16d, 16e.

Column descriptions are the API types' field documentation (from the recorded OpenAPI, the
"Possible enum values" appendix left out) or the printer's own text; where v1.28 documents
a column with a type it no longer serves (extensions/v1beta1), the text is that type's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from aioinformer.testing._kubesim.gotime import age

__all__ = ["Column", "Printer", "default_printer", "label_selector_string", "printer_for"]

Obj = Mapping[str, Any]
Cells = list[Any]


@dataclass(frozen=True)
class Column:
    """One ``columnDefinitions`` entry."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True)
class Printer:
    """The columns of a kind, its cells for one object, and (pods only) row conditions."""

    columns: Callable[[], list[Column]]
    cells: Callable[[Obj, float], Cells]
    conditions: Callable[[Obj], list[dict[str, str]]] | None = None


# -- documentation ---------------------------------------------------------------------------


@cache
def _definitions() -> Mapping[str, Any]:
    from aioinformer.testing._kubesim.openapi import recorded_definitions

    return recorded_definitions()


def doc(definition: str, field: str) -> str:
    """The OpenAPI description of ``definition.field`` as Go's SwaggerDoc has it."""
    prefix = "io.k8s.apimachinery.pkg.apis.meta.v1." if definition[0].isupper() else ""
    try:
        text = _definitions()[prefix + definition]["properties"][field]["description"]
    except KeyError:
        return ""
    return str(text).split("\n\nPossible enum values:", 1)[0]


def _name() -> Column:
    return Column("Name", "string", doc("ObjectMeta", "name"), format="name")


def _age() -> Column:
    return Column("Age", "string", doc("ObjectMeta", "creationTimestamp"))


_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."
_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."
_DEPLOYMENT_SELECTOR = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
    "the ones affected by this deployment."
)
_REPLICASET_SELECTOR = (
    "Selector is a label query over pods that should match the replica count. If the selector "
    "is empty, it is defaulted to the labels present on the pod template. Label keys and values "
    "that must match in order to be controlled by this replica set. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_DAEMONSET_SELECTOR = (
    "A label query over pods that are managed by the daemon set. Must match in order to be "
    "controlled. If empty, defaulted to labels on Pod template. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)


# -- helpers -----------------------------------------------------------------------------------


def _d(v: object) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _s(v: object) -> str:
    return v if isinstance(v, str) else ""


def _created(obj: Obj, now: float) -> str:
    return age(_s(_d(obj.get("metadata")).get("creationTimestamp")), now)


def format_labels(labels: Mapping[str, Any]) -> str:
    """``labels.FormatLabels``: ``k=v`` sorted by key, ``<none>`` when empty."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) or "<none>"


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """``LabelSelectorAsSelector(s).String()``: requirements sorted by key."""
    if not selector:
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in _d(selector.get("matchLabels")).items():
        reqs.append((k, f"{k}={v}"))
    for e in _l(selector.get("matchExpressions")):
        e = _d(e)
        key, op, values = _s(e.get("key")), e.get("operator"), sorted(_l(e.get("values")))
        if op == "In":
            reqs.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def _format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: like the selector string, ``<none>`` when empty."""
    return label_selector_string(selector) or "<none>"


def _containers(template: Obj) -> tuple[str, str]:
    cs = [_d(c) for c in _l(_d(_d(template).get("spec")).get("containers"))]
    return ",".join(_s(c.get("name")) for c in cs), ",".join(_s(c.get("image")) for c in cs)


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _d(obj.get("spec"))


def _status(obj: Obj) -> Mapping[str, Any]:
    return _d(obj.get("status"))


def _name_of(obj: Obj) -> str:
    return _s(_d(obj.get("metadata")).get("name"))


# -- pods --------------------------------------------------------------------------------------


def _pod_columns() -> list[Column]:
    return [
        _name(),
        Column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the "
            "last container in this pod has restarted.",
        ),
        _age(),
        Column("IP", "string", doc(_CORE + "PodStatus", "podIP"), 1),
        Column("Node", "string", doc(_CORE + "PodSpec", "nodeName"), 1),
        Column("Nominated Node", "string", doc(_CORE + "PodStatus", "nominatedNodeName"), 1),
        Column("Readiness Gates", "string", doc(_CORE + "PodSpec", "readinessGates"), 1),
    ]


def _restartable(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _pod_cells(pod: Obj, now: float) -> Cells:
    spec, status = _spec(pod), _status(pod)
    containers = _l(spec.get("containers"))
    init_specs = {_s(_d(c).get("name")): _d(c) for c in _l(spec.get("initContainers"))}
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last_restart = sidecar_last = ""
    reason = _s(status.get("phase"))
    if status.get("reason"):
        reason = _s(status["reason"])
    conditions = [_d(c) for c in _l(status.get("conditions"))]
    for cond in conditions:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    initializing = False
    init_statuses = [_d(c) for c in _l(status.get("initContainerStatuses"))]
    for i, cs in enumerate(init_statuses):
        restarts += _int(cs.get("restartCount"))
        finished = _s(_d(_d(cs.get("lastState")).get("terminated")).get("finishedAt"))
        last_restart = max(last_restart, finished)
        sidecar = _restartable(init_specs.get(_s(cs.get("name"))))
        if sidecar:
            sidecar_restarts += _int(cs.get("restartCount"))
            sidecar_last = max(sidecar_last, finished)
        state = _d(cs.get("state"))
        term, wait = state.get("terminated"), state.get("waiting")
        if isinstance(term, Mapping) and _int(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(term, Mapping):
            if term.get("reason"):
                reason = "Init:" + _s(term["reason"])
            elif _int(term.get("signal")):
                reason = f"Init:Signal:{_int(term.get('signal'))}"
            else:
                reason = f"Init:ExitCode:{_int(term.get('exitCode'))}"
        elif (
            isinstance(wait, Mapping) and wait.get("reason") and wait["reason"] != "PodInitializing"
        ):
            reason = "Init:" + _s(wait["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed([_d(c) for c in _l(status.get("containerStatuses"))]):
            restarts += _int(cs.get("restartCount"))
            finished = _s(_d(_d(cs.get("lastState")).get("terminated")).get("finishedAt"))
            last_restart = max(last_restart, finished)
            state = _d(cs.get("state"))
            wait, term = _d(state.get("waiting")), state.get("terminated")
            if wait.get("reason"):
                reason = _s(wait["reason"])
            elif isinstance(term, Mapping) and term.get("reason"):
                reason = _s(term["reason"])
            elif isinstance(term, Mapping):
                signal = _int(term.get("signal"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{_int(term.get('exitCode'))}"
            elif cs.get("ready") and isinstance(state.get("running"), Mapping):
                running = True
                ready += 1
        if reason == "Completed" and running:
            has_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            )
            reason = "Running" if has_ready else "NotReady"
    if _d(pod.get("metadata")).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restarts_cell = str(restarts)
    if restarts and last_restart:
        restarts_cell = f"{restarts} ({age(last_restart, now)} ago)"
    ips = _l(status.get("podIPs"))
    ip = _s(_d(ips[0]).get("ip")) if ips else ""
    gates = "<none>"
    if _l(spec.get("readinessGates")):
        wanted = [_s(_d(g).get("conditionType")) for g in _l(spec.get("readinessGates"))]
        true = 0
        for want in wanted:
            match = next((c for c in conditions if c.get("type") == want), None)
            true += 1 if match is not None and match.get("status") == "True" else 0
        gates = f"{true}/{len(wanted)}"
    return [
        _name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        _created(pod, now),
        ip or "<none>",
        _s(spec.get("nodeName")) or "<none>",
        _s(status.get("nominatedNodeName")) or "<none>",
        gates,
    ]


def _pod_conditions(pod: Obj) -> list[dict[str, str]]:
    phase = _status(pod).get("phase")
    if phase == "Succeeded":
        msg = "The pod has completed successfully."
    elif phase == "Failed":
        msg = "The pod failed."
    else:
        return []
    return [{"type": "Completed", "status": "True", "reason": str(phase), "message": msg}]


# -- workloads ---------------------------------------------------------------------------------


def _deployment_columns() -> list[Column]:
    return [
        _name(),
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string", doc(_APPS + "DeploymentStatus", "updatedReplicas")),
        Column("Available", "string", doc(_APPS + "DeploymentStatus", "availableReplicas")),
        _age(),
        Column("Containers", "string", _CONTAINERS, 1),
        Column("Images", "string", _IMAGES, 1),
        Column("Selector", "string", _DEPLOYMENT_SELECTOR, 1),
    ]


def _deployment_cells(obj: Obj, now: float) -> Cells:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_d(spec.get("template")))
    return [
        _name_of(obj),
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _created(obj, now),
        names,
        images,
        label_selector_string(_d(spec.get("selector"))),
    ]


def _replicaset_columns() -> list[Column]:
    return [
        _name(),
        Column("Desired", "integer", doc(_APPS + "ReplicaSetSpec", "replicas")),
        Column("Current", "integer", doc(_APPS + "ReplicaSetStatus", "replicas")),
        Column("Ready", "integer", doc(_APPS + "ReplicaSetStatus", "readyReplicas")),
        _age(),
        Column("Containers", "string", _CONTAINERS, 1),
        Column("Images", "string", _IMAGES, 1),
        Column("Selector", "string", _REPLICASET_SELECTOR, 1),
    ]


def _replicaset_cells(obj: Obj, now: float) -> Cells:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_d(spec.get("template")))
    return [
        _name_of(obj),
        _int(spec.get("replicas")),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _created(obj, now),
        names,
        images,
        _format_label_selector(_d(spec.get("selector"))),
    ]


def _statefulset_columns() -> list[Column]:
    return [
        _name(),
        Column("Ready", "string", "Number of the pod with ready state"),
        _age(),
        Column("Containers", "string", _CONTAINERS, 1),
        Column("Images", "string", _IMAGES, 1),
    ]


def _statefulset_cells(obj: Obj, now: float) -> Cells:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_d(spec.get("template")))
    ready = f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}"
    return [_name_of(obj), ready, _created(obj, now), names, images]


def _daemonset_columns() -> list[Column]:
    ds = _APPS + "DaemonSetStatus"
    return [
        _name(),
        Column("Desired", "integer", doc(ds, "desiredNumberScheduled")),
        Column("Current", "integer", doc(ds, "currentNumberScheduled")),
        Column("Ready", "integer", doc(ds, "numberReady")),
        Column("Up-to-date", "integer", doc(ds, "updatedNumberScheduled")),
        Column("Available", "integer", doc(ds, "numberAvailable")),
        Column("Node Selector", "string", doc(_CORE + "PodSpec", "nodeSelector")),
        _age(),
        Column("Containers", "string", _CONTAINERS, 1),
        Column("Images", "string", _IMAGES, 1),
        Column("Selector", "string", _DAEMONSET_SELECTOR, 1),
    ]


def _daemonset_cells(obj: Obj, now: float) -> Cells:
    spec, status = _spec(obj), _status(obj)
    template = _d(spec.get("template"))
    names, images = _containers(template)
    return [
        _name_of(obj),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        format_labels(_d(_d(template.get("spec")).get("nodeSelector"))),
        _created(obj, now),
        names,
        images,
        _format_label_selector(_d(spec.get("selector"))),
    ]


def _controllerrevision_columns() -> list[Column]:
    return [
        _name(),
        Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", doc(_APPS + "ControllerRevision", "revision")),
        _age(),
    ]


def _controllerrevision_cells(obj: Obj, now: float) -> Cells:
    owner = next(
        (
            _d(o)
            for o in _l(_d(obj.get("metadata")).get("ownerReferences"))
            if _d(o).get("controller")
        ),
        None,
    )
    controller = "<none>"
    if owner is not None:
        group = _s(owner.get("apiVersion")).rpartition("/")[0]
        kind = _s(owner.get("kind")).lower() + (f".{group}" if group else "")
        controller = f"{kind}/{_s(owner.get('name'))}"
    return [_name_of(obj), controller, _int(obj.get("revision")), _created(obj, now)]


# -- core ----------------------------------------------------------------------------------------


def _service_columns() -> list[Column]:
    spec = _CORE + "ServiceSpec"
    return [
        _name(),
        Column("Type", "string", doc(spec, "type")),
        Column("Cluster-IP", "string", doc(spec, "clusterIP")),
        Column("External-IP", "string", doc(spec, "externalIPs")),
        Column("Port(s)", "string", doc(spec, "ports")),
        _age(),
        Column("Selector", "string", doc(spec, "selector"), 1),
    ]


def _load_balancer_ips(status: Obj) -> str:
    ingress = [_d(i) for i in _l(_d(status.get("loadBalancer")).get("ingress"))]
    return ",".join(_s(i.get("ip")) or _s(i.get("hostname")) for i in ingress if i)


def _external_ip(spec: Obj, status: Obj) -> str:
    external = [str(ip) for ip in _l(spec.get("externalIPs"))]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        lb = _load_balancer_ips(status)
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if kind == "ExternalName":
        return _s(spec.get("externalName"))
    return "<unknown>"


def _service_cells(obj: Obj, now: float) -> Cells:
    spec = _spec(obj)
    ips = _l(spec.get("clusterIPs"))
    ports = []
    for p in (_d(p) for p in _l(spec.get("ports"))):
        node = _int(p.get("nodePort"))
        proto = _s(p.get("protocol"))
        ports.append(
            f"{_int(p.get('port'))}:{node}/{proto}" if node else f"{_int(p.get('port'))}/{proto}"
        )
    return [
        _name_of(obj),
        _s(spec.get("type")),
        str(ips[0]) if ips else "<none>",
        _external_ip(spec, _status(obj)),
        ",".join(ports) or "<none>",
        _created(obj, now),
        format_labels(_d(spec.get("selector"))),
    ]


def _endpoints_cells(obj: Obj, now: float) -> Cells:
    shown: list[str] = []
    count, more = 0, False
    for subset in (_d(s) for s in _l(obj.get("subsets"))):
        addresses = [_s(_d(a).get("ip")) for a in _l(subset.get("addresses"))]
        ports: list[Mapping[str, Any] | None] = [_d(p) for p in _l(subset.get("ports"))]
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
                    shown.append(f"{host}:{_int(port.get('port'))}")
    text = ",".join(shown) if _l(obj.get("subsets")) else "<none>"
    if more:
        text = f"{text} + {count - 3} more..."
    return [_name_of(obj), text, _created(obj, now)]


def _is_ipv6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return ":" in ip


def _node_columns() -> list[Column]:
    info = _CORE + "NodeSystemInfo"
    addresses = doc(_CORE + "NodeStatus", "addresses")
    return [
        _name(),
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        _age(),
        Column("Version", "string", doc(info, "kubeletVersion")),
        Column("Internal-IP", "string", addresses, 1),
        Column("External-IP", "string", addresses, 1),
        Column("OS-Image", "string", doc(info, "osImage"), 1),
        Column("Kernel-Version", "string", doc(info, "kernelVersion"), 1),
        Column("Container-Runtime", "string", doc(info, "containerRuntimeVersion"), 1),
    ]


def _node_cells(obj: Obj, now: float) -> Cells:
    status = _status(obj)
    ready = next(
        (_d(c) for c in _l(status.get("conditions")) if _d(c).get("type") == "Ready"), None
    )
    states = []
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        states.append("Unknown")
    if _spec(obj).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in _d(_d(obj.get("metadata")).get("labels")).items():
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]:
            roles.add(k.split("/", 1)[1])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    info = _d(status.get("nodeInfo"))
    addrs = [_d(a) for a in _l(status.get("addresses"))]

    def address(kind: str) -> str:
        return next((_s(a.get("address")) for a in addrs if a.get("type") == kind), "<none>")

    return [
        _name_of(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _created(obj, now),
        _s(info.get("kubeletVersion")),
        address("InternalIP"),
        address("ExternalIP"),
        _s(info.get("osImage")) or "<unknown>",
        _s(info.get("kernelVersion")) or "<unknown>",
        _s(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _event_columns() -> list[Column]:
    ev = _CORE + "Event"
    return [
        Column("Last Seen", "string", doc(ev, "lastTimestamp")),
        Column("Type", "string", doc(ev, "type")),
        Column("Reason", "string", doc(ev, "reason")),
        Column("Object", "string", doc(ev, "involvedObject")),
        Column("Subobject", "string", doc(_CORE + "ObjectReference", "fieldPath"), 1),
        Column("Source", "string", doc(ev, "source"), 1),
        Column("Message", "string", doc(ev, "message")),
        Column("First Seen", "string", doc(ev, "firstTimestamp"), 1),
        Column("Count", "string", doc(ev, "count"), 1),
        Column("Name", "string", doc("ObjectMeta", "name"), 1, "name"),
    ]


#: events.k8s.io/v1 field -> core/v1 field (the two are one storage, printed alike)
_EVENTS_V1 = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "deprecatedSource": "source",
    "reportingController": "reportingComponent",
}


def _event_cells(obj: Obj, now: float) -> Cells:
    if "regarding" in obj or "note" in obj:
        obj = {_EVENTS_V1.get(k, k): v for k, v in obj.items()}
    first = _s(obj.get("firstTimestamp"))
    first_seen = age(first or _s(obj.get("eventTime")), now)
    last = _s(obj.get("lastTimestamp"))
    last_seen = age(last, now) if last else first_seen
    count = _int(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last_seen = age(_s(series.get("lastObservedTime")), now)
        count = _int(series.get("count"))
    elif not count:
        count = 1
    ref = _d(obj.get("involvedObject"))
    kind = _s(ref.get("kind")).lower()
    target = f"{kind}/{_s(ref.get('name'))}" if ref.get("name") else kind
    source = _d(obj.get("source"))
    component = _s(source.get("component")) or _s(obj.get("reportingComponent"))
    host = _s(source.get("host")) or _s(obj.get("reportingInstance"))
    return [
        last_seen,
        _s(obj.get("type")),
        _s(obj.get("reason")),
        target,
        _s(ref.get("fieldPath")),
        f"{component}, {host}" if host else component,
        _s(obj.get("message")).strip(),
        first_seen,
        count,
        _name_of(obj),
    ]


def _simple(
    extra: Sequence[Column | Callable[[], Column]], cell: Callable[[Obj], Cells]
) -> Printer:
    """A printer of Name, ``extra`` columns (cells from ``cell``), Age."""

    def columns() -> list[Column]:
        return [_name(), *(c if isinstance(c, Column) else c() for c in extra), _age()]

    def cells(obj: Obj, now: float) -> Cells:
        return [_name_of(obj), *cell(obj), _created(obj, now)]

    return Printer(columns, cells)


def _pvc_columns() -> list[Column]:
    st, sp = _CORE + "PersistentVolumeClaimStatus", _CORE + "PersistentVolumeClaimSpec"
    return [
        _name(),
        Column("Status", "string", doc(st, "phase")),
        Column("Volume", "string", doc(sp, "volumeName")),
        Column("Capacity", "string", doc(st, "capacity")),
        Column("Access Modes", "string", doc(st, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        _age(),
        Column("VolumeMode", "string", doc(sp, "volumeMode"), 1),
    ]


_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX"}


def _pvc_cells(obj: Obj, now: float) -> Cells:
    spec, status = _spec(obj), _status(obj)
    phase = (
        "Terminating"
        if _d(obj.get("metadata")).get("deletionTimestamp")
        else _s(status.get("phase"))
    )
    capacity = modes = ""
    if spec.get("volumeName"):
        have = set(_l(status.get("accessModes")))
        order = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
        modes = ",".join(_ACCESS.get(m, "RWOP") for m in order if m in have)
        capacity = str(_d(status.get("capacity")).get("storage", ""))
    klass = _s(spec.get("storageClassName")) or _s(
        _d(_d(obj.get("metadata")).get("annotations")).get(
            "volume.beta.kubernetes.io/storage-class"
        )
    )
    mode = _s(spec.get("volumeMode")) or "<unset>"
    return [
        _name_of(obj),
        phase,
        _s(spec.get("volumeName")),
        capacity,
        modes,
        klass,
        _created(obj, now),
        mode,
    ]


# -- registry ------------------------------------------------------------------------------------


def _count(key: str) -> Callable[[Obj], Cells]:
    return lambda o: [len(_l(o.get(key))) if key == "secrets" else len(_d(o.get(key)))]


_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): Printer(_pod_columns, _pod_cells, _pod_conditions),
    ("apps", "deployments"): Printer(_deployment_columns, _deployment_cells),
    ("apps", "replicasets"): Printer(_replicaset_columns, _replicaset_cells),
    ("apps", "statefulsets"): Printer(_statefulset_columns, _statefulset_cells),
    ("apps", "daemonsets"): Printer(_daemonset_columns, _daemonset_cells),
    ("apps", "controllerrevisions"): Printer(
        _controllerrevision_columns, _controllerrevision_cells
    ),
    ("", "services"): Printer(_service_columns, _service_cells),
    ("", "endpoints"): Printer(
        lambda: [
            _name(),
            Column("Endpoints", "string", doc(_CORE + "Endpoints", "subsets")),
            _age(),
        ],
        _endpoints_cells,
    ),
    ("", "nodes"): Printer(_node_columns, _node_cells),
    ("", "events"): Printer(_event_columns, _event_cells),
    ("events.k8s.io", "events"): Printer(_event_columns, _event_cells),
    ("", "persistentvolumeclaims"): Printer(_pvc_columns, _pvc_cells),
    ("", "namespaces"): _simple(
        [Column("Status", "string", "The status of the namespace")],
        lambda o: [_s(_status(o).get("phase"))],
    ),
    ("", "configmaps"): _simple(
        [lambda: Column("Data", "string", doc(_CORE + "ConfigMap", "data"))],
        lambda o: [len(_d(o.get("data"))) + len(_d(o.get("binaryData")))],
    ),
    ("", "secrets"): _simple(
        [
            lambda: Column("Type", "string", doc(_CORE + "Secret", "type")),
            lambda: Column("Data", "string", doc(_CORE + "Secret", "data")),
        ],
        lambda o: [_s(o.get("type")), len(_d(o.get("data")))],
    ),
    ("", "serviceaccounts"): _simple(
        [lambda: Column("Secrets", "string", doc(_CORE + "ServiceAccount", "secrets"))],
        _count("secrets"),
    ),
    ("coordination.k8s.io", "leases"): _simple(
        [
            lambda: Column(
                "Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")
            )
        ],
        lambda o: [_s(_spec(o).get("holderIdentity"))],
    ),
}


def _default_columns() -> list[Column]:
    return [
        _name(),
        Column("Created At", "date", doc("ObjectMeta", "creationTimestamp")),
    ]


def default_printer() -> Printer:
    """The default table convertor's: Name and Created At (the timestamp as stored)."""
    return Printer(
        _default_columns,
        lambda o, _now: [_name_of(o), _d(o.get("metadata")).get("creationTimestamp")],
    )


def printer_for(group: str, plural: str) -> Printer | None:
    """The built-in printer of ``plural.group``, or None (then the default table)."""
    return _PRINTERS.get((group, plural))
