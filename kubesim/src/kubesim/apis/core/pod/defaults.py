"""Defaulting for KubeSim (pure functions, no I/O): what kube-apiserver v1.28 fills in.

:func:`apply_defaults` mutates a request object in place as decoding (``SetDefaults_*``), the
create strategy and admission would, with keys in Go struct order as the recorded responses
show them. It never validates or rejects anything, so it may run before or after
:func:`._validation.validate_create`. :func:`default_pod_spec` and :func:`qos_class` are the
pieces that Pod update validation reuses; :data:`WORKLOAD_PLURALS` names the apps workloads
defaulted here (validation and ``metadata.generation`` treat the same set specially).
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import default_hpa, is_hpa
from kubesim.apis.batch.job import BATCH_DEFAULTERS

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType

__all__ = ["WORKLOAD_PLURALS", "apply_defaults", "default_pod_spec", "qos_class"]

_POD_SPEC_ORDER = (
    "volumes initContainers containers ephemeralContainers restartPolicy "
    "terminationGracePeriodSeconds activeDeadlineSeconds dnsPolicy nodeSelector "
    "serviceAccountName serviceAccount automountServiceAccountToken nodeName hostNetwork "
    "hostPID hostIPC shareProcessNamespace securityContext imagePullSecrets hostname subdomain "
    "affinity schedulerName tolerations hostAliases priorityClassName priority dnsConfig "
    "readinessGates runtimeClassName enableServiceLinks preemptionPolicy overhead "
    "topologySpreadConstraints setHostnameAsFQDN os hostUsers schedulingGates resourceClaims"
).split()
_CONTAINER_ORDER = (
    "name image command args workingDir ports envFrom env resources resizePolicy restartPolicy "
    "volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle "
    "terminationMessagePath terminationMessagePolicy imagePullPolicy securityContext stdin "
    "stdinOnce tty"
).split()
_WORKLOAD_DEFAULTS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    # plural: (spec defaults, spec key order, status on create)
    "deployments": (
        {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
        "replicas selector template strategy minReadySeconds revisionHistoryLimit paused "
        "progressDeadlineSeconds",
        {},
    ),
    "statefulsets": (
        {"replicas": 1, "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10},
        "replicas selector template volumeClaimTemplates serviceName podManagementPolicy "
        "updateStrategy revisionHistoryLimit minReadySeconds "
        "persistentVolumeClaimRetentionPolicy ordinals",
        {"replicas": 0, "availableReplicas": 0},
    ),
    "daemonsets": (
        {"revisionHistoryLimit": 10},
        "selector template updateStrategy minReadySeconds revisionHistoryLimit",
        {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        },
    ),
    "replicasets": ({"replicas": 1}, "replicas minReadySeconds selector template", {"replicas": 0}),
}

#: The update strategies apps/v1 defaults (``SetDefaults_Deployment`` & co.): key, the
#: default type, and what a ``RollingUpdate`` of each gets.
_STRATEGIES: dict[str, tuple[str, dict[str, Any]]] = {
    "deployments": ("strategy", {"maxUnavailable": "25%", "maxSurge": "25%"}),
    "statefulsets": ("updateStrategy", {"partition": 0}),
    "daemonsets": ("updateStrategy", {"maxUnavailable": 1, "maxSurge": 0}),
}

WORKLOAD_PLURALS = frozenset(_WORKLOAD_DEFAULTS)
"""The apps/v1 plurals with workload defaults (Deployment, StatefulSet, DaemonSet, ReplicaSet)."""


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _order(d: dict[str, Any], order: Sequence[str]) -> None:
    """Reorder *d* in place: keys of *order* first, in that order, then the rest as they were."""
    rank = {k: i for i, k in enumerate(order)}
    items = sorted(d.items(), key=lambda kv: rank.get(kv[0], len(rank)))
    d.clear()
    d.update(items)


def _sub(parent: dict[str, Any], key: str) -> dict[str, Any]:
    if not isinstance(parent.get(key), dict):
        parent[key] = {}
    return parent[key]  # type: ignore[no-any-return]


def _pull_policy(image: str) -> str:
    """``SetDefaults_Container``: Always for ``:latest`` or an untagged, undigested image
    (an image that does not parse, e.g. empty or with capitals, gets IfNotPresent)."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if ":" in last else name
    parses = bool(repo) and repo == repo.lower()
    return "Always" if parses and (tag == "latest" or not (tag or digest)) else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any], *, pod: bool = False) -> None:
    """``SetDefaults_PodSpec`` and ``SetDefaults_Container`` (pods and pod templates); with
    ``pod`` also ``SetDefaults_Pod``'s ``enableServiceLinks``, which a template does not get."""
    for c in (
        c for k in ("initContainers", "containers", "ephemeralContainers") for c in _l(spec.get(k))
    ):
        if isinstance(c, dict):
            c["resources"] = c.get("resources") or {}
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("imagePullPolicy", _pull_policy(str(c.get("image") or "")))
            for port in map(_d, _l(c.get("ports"))):
                port.setdefault("protocol", "TCP")
            _order(c, _CONTAINER_ORDER)
    if spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for k, v in (
        ("restartPolicy", "Always"),
        ("terminationGracePeriodSeconds", 30),
        ("dnsPolicy", "ClusterFirst"),
    ):
        spec.setdefault(k, v)
    spec["securityContext"] = spec.get("securityContext") or {}
    spec.setdefault("schedulerName", "default-scheduler")
    if pod:
        spec.setdefault("enableServiceLinks", True)
    _order(spec, _POD_SPEC_ORDER)


def qos_class(spec: Mapping[str, Any]) -> str:
    """Pod QoS from cpu/memory requests and limits: BestEffort with none, Guaranteed when every
    container limits both and its requests (defaulting to the limits) equal them, else
    Burstable. Quantities are compared as written, so ``1`` != ``1000m`` (approximation)."""
    any_set, guaranteed = False, True
    for c in _l(spec.get("containers")) + _l(spec.get("initContainers")):
        res = _d(_d(c).get("resources"))
        lim, req = (
            {
                k: v
                for k, v in _d(res.get(f)).items()
                if k in ("cpu", "memory") and str(v) not in ("0", "0m")
            }
            for f in ("limits", "requests")
        )
        any_set = any_set or bool(lim or req)
        guaranteed = (
            guaranteed
            and set(lim) == {"cpu", "memory"}
            and all(req.get(k, v) == v for k, v in lim.items())
        )
    return "Guaranteed" if any_set and guaranteed else "Burstable" if any_set else "BestEffort"


def _default_pod_conditions(status: dict[str, Any]) -> None:
    """A PodCondition's probe and transition times are non-pointer metav1.Time fields:
    unset, they are written as ``null`` (06: a status patch with ``{type, status}``)."""
    for cond in map(_d, _l(status.get("conditions"))):
        cond.setdefault("lastProbeTime", None)
        cond.setdefault("lastTransitionTime", None)
        _order(cond, ("type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message"))


def _default_pod(obj: dict[str, Any], creating: bool) -> None:
    spec = _sub(obj, "spec")
    default_pod_spec(spec, pod=True)
    for res in (
        _d(_d(c).get("resources"))
        for c in _l(spec.get("containers")) + _l(spec.get("initContainers"))
    ):
        if isinstance(res.get("limits"), dict):  # SetDefaults_Pod: requests default to limits
            res["requests"] = res["limits"] | _d(res.get("requests"))
            _order(res, ("limits", "requests", "claims"))
    if not creating:
        _default_pod_conditions(_d(obj.get("status")))
        return
    tols = [
        t for t in _l(spec.get("tolerations")) if isinstance(t, dict)
    ]  # DefaultTolerationSeconds
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(
            t.get("key") in (taint, None, "") and t.get("effect") in ("NoExecute", None, "")
            for t in tols
        ):
            tols.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            )
    spec["tolerations"] = tols
    classes = {"": 0, "system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
    if "priority" not in spec and str(spec.get("priorityClassName") or "") in classes:  # Priority
        spec["priority"] = classes[str(spec.get("priorityClassName") or "")]
    if "priority" in spec:
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    _order(spec, _POD_SPEC_ORDER)
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def _default_namespace(obj: dict[str, Any], creating: bool) -> None:
    meta = _sub(obj, "metadata")
    if meta.get("name"):
        _sub(meta, "labels")["kubernetes.io/metadata.name"] = meta["name"]
    if creating:
        fins = _l(_sub(obj, "spec").get("finalizers"))
        obj["spec"]["finalizers"] = fins if "kubernetes" in fins else [*fins, "kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif isinstance(obj.get("status"), dict):
        obj["status"].setdefault("phase", "Active")


def status_kept_on_create(rt: ResourceType) -> bool:
    """Whether the create strategy keeps the status in the body: a Node's (the kubelet
    registers its node with one; 24a), where other types start from none."""
    return not rt.custom and (rt.group, rt.plural) == ("", "nodes")


def admit_create(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The mutating admission a create through the API gets (not an object stored as
    given): TaintNodesByCondition taints a new Node ``node.kubernetes.io/not-ready``
    NoSchedule until the node lifecycle controller sees it ready (24a)."""
    if rt.custom or (rt.group, rt.plural) != ("", "nodes"):
        return
    spec = _sub(obj, "spec")
    taints = _l(spec.get("taints"))
    if not any(_d(t).get("key") == "node.kubernetes.io/not-ready" for t in taints):
        spec["taints"] = [*taints, {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]


def _default_node(obj: dict[str, Any], creating: bool) -> None:
    _sub(obj, "spec")
    status = _sub(obj, "status")
    if "capacity" in status:
        status.setdefault("allocatable", copy.deepcopy(status["capacity"]))
    _sub(status, "daemonEndpoints").setdefault("kubeletEndpoint", {"Port": 0})
    info = _sub(status, "nodeInfo")
    keys = (
        "machineID systemUUID bootID kernelVersion osImage containerRuntimeVersion kubeletVersion"
    )
    for k in (*keys.split(), "kubeProxyVersion", "operatingSystem", "architecture"):
        info.setdefault(k, "")
    order = "capacity allocatable phase conditions addresses daemonEndpoints nodeInfo images"
    _order(status, (*order.split(), "volumesInUse", "volumesAttached", "config"))


def _default_service(obj: dict[str, Any], creating: bool) -> None:
    spec = _sub(obj, "spec")
    for port in map(_d, _l(spec.get("ports"))):
        port.setdefault("protocol", "TCP")
        if "port" in port:
            port.setdefault("targetPort", port["port"])
        _order(port, ("name", "protocol", "appProtocol", "port", "targetPort", "nodePort"))
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    order = "ports selector clusterIP clusterIPs type externalIPs sessionAffinity"
    _order(spec, (*order.split(), "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"))
    if creating:
        obj["status"] = {"loadBalancer": {}}


def _default_pvc(obj: dict[str, Any], creating: bool) -> None:
    """``SetDefaults_PersistentVolumeClaim(Spec)``: volumeMode Filesystem, phase Pending."""
    spec = _sub(obj, "spec")
    spec.setdefault("volumeMode", "Filesystem")
    order = "accessModes selector resources volumeName storageClassName volumeMode"
    _order(spec, (*order.split(), "dataSource", "dataSourceRef"))
    status = {} if creating else _sub(obj, "status")
    status.setdefault("phase", "Pending")
    obj["status"] = status


def _default_secret(obj: dict[str, Any], creating: bool) -> None:
    string_data = obj.pop("stringData", None)
    for k, v in _d(string_data).items():  # v1 conversion folds stringData into data
        _sub(obj, "data")[k] = base64.b64encode(str(v).encode()).decode()
    obj.setdefault("type", "Opaque")


def _default_crd(obj: dict[str, Any], creating: bool) -> None:
    spec = _sub(obj, "spec")
    names = _sub(spec, "names")
    if names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    _order(names, ("plural", "singular", "shortNames", "kind", "listKind", "categories"))
    spec.setdefault("conversion", {"strategy": "None"})
    versions = [v for v in _l(spec.get("versions")) if isinstance(v, dict)]
    for v in versions:
        _order(v, "name served storage deprecated deprecationWarning schema subresources".split())
    _order(spec, ("group", "names", "scope", "versions", "conversion", "preserveUnknownFields"))
    if creating:
        stored = [v.get("name") for v in versions if v.get("storage")]
        obj["status"] = {
            "conditions": None,
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": stored,
        }


_DEFAULTERS = {
    "pods": _default_pod,
    "namespaces": _default_namespace,
    "nodes": _default_node,
    "services": _default_service,
    "persistentvolumeclaims": _default_pvc,
    "secrets": _default_secret,
}


def default_status(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Default what a status write (the /status subresource) may leave unset: a Pod's
    condition times (``null``)."""
    if rt.group == "" and rt.plural == "pods" and not rt.custom:
        _default_pod_conditions(_d(obj.get("status")))


def apply_defaults(rt: ResourceType, obj: dict[str, Any], *, creating: bool = True) -> None:
    """Default *obj* in place as request decoding, and (``creating``) the create strategy and
    admission, would: Pod container/spec defaults, the two NoExecute tolerations, priority 0 and
    ``status {phase: Pending, qosClass}`` as recorded; the Namespace name label, ``kubernetes``
    finalizer and Active phase; a Node status skeleton; the apps workloads' replicas, history,
    progress deadline, update strategies and StatefulSet PVC retention policy; Jobs,
    CronJobs and ReplicationControllers (:mod:`._batch_defaults`); HPAs (:mod:`._hpa`); a PVC's
    volumeMode and Pending phase; a few Service/Secret/CRD defaults (a Service's addresses
    are allocated by ``_service_ips``). ``creating`` also resets status as PrepareForCreate
    does (custom resources with a status subresource lose ``status``); pass ``creating=False``
    on updates. Keys follow the Go struct order. Leaves uid, resourceVersion, generation and
    timestamps to the storage layer."""
    if rt.custom:
        if creating and rt.has_status:
            obj.pop("status", None)
        return
    if rt.group == "apps" and rt.plural in _WORKLOAD_DEFAULTS:
        defaults, order, status = _WORKLOAD_DEFAULTS[rt.plural]
        spec = _sub(obj, "spec")
        for k, v in defaults.items():
            spec.setdefault(k, v)
        if rt.plural in _STRATEGIES:
            key, rolling = _STRATEGIES[rt.plural]
            strategy = _sub(spec, key)
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                _sub(strategy, "rollingUpdate")
                strategy["rollingUpdate"] = rolling | strategy["rollingUpdate"]
            _order(strategy, ("type", "rollingUpdate"))
        if rt.plural == "statefulsets":
            policy = _sub(spec, "persistentVolumeClaimRetentionPolicy")
            policy.update({k: policy.get(k) or "Retain" for k in ("whenDeleted", "whenScaled")})
        template_meta = _sub(_sub(spec, "template"), "metadata")
        template_meta.setdefault("creationTimestamp", None)
        _order(template_meta, ("name", "namespace", "creationTimestamp", "labels", "annotations"))
        default_pod_spec(_sub(spec["template"], "spec"))
        _order(spec, order.split())
        if creating:
            obj["status"] = dict(status)
    elif (rt.group, rt.plural) in BATCH_DEFAULTERS:
        BATCH_DEFAULTERS[rt.group, rt.plural](obj, creating, default_pod_spec)
    elif is_hpa(rt):
        default_hpa(rt, obj, creating)
    elif rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
        _default_crd(obj, creating)
    elif rt.group == "" and rt.plural in _DEFAULTERS:
        _DEFAULTERS[rt.plural](obj, creating)
    _order(obj, ("kind", "apiVersion", "metadata", "spec", "status"))
