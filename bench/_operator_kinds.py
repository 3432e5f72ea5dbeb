"""The resources a StatefulSet-running operator watches, and a small real object of each.

bench/manager_bench.py gives its Manager the first N of :data:`KINDS`: pods first (the
resource under load), then what a database or message-queue operator built on
controller-runtime (CloudNativePG, Strimzi, a Postgres or Kafka operator) owns or reads:
its StatefulSets, Services and ConfigMaps (N = 4), then Secrets, ServiceAccounts, PVCs,
PodDisruptionBudgets, Roles, RoleBindings, EndpointSlices, Jobs, Leases, Events, Nodes
and Namespaces (N = 16). :func:`body` makes object ``i`` of a kind as such an operator
writes it (a few hundred bytes to a few KB), accepted by KubeSim's validation as by
kube-apiserver's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Kind", "body", "collection_path"]


Fields = dict[str, Any]


def _labels(app: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, "app.kubernetes.io/managed-by": "db-operator"}


def _selector(app: str) -> Fields:
    return {"matchLabels": _labels(app)}


def _pod_template(app: str, restart: str = "Always") -> Fields:
    return {
        "metadata": {"labels": _labels(app)},
        "spec": {
            "restartPolicy": restart,
            "containers": [
                {
                    "name": "db",
                    "image": "registry.example.com/db/server:16.2",
                    "ports": [{"name": "db", "containerPort": 5432}],
                    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
                }
            ],
        },
    }


def _nothing(app: str, ns: str, i: int) -> Fields:
    return {}


def _statefulset(app: str, ns: str, i: int) -> Fields:
    spec = {"serviceName": app, "replicas": 3, "selector": _selector(app)}
    return {"spec": {**spec, "template": _pod_template(app)}}


def _service(app: str, ns: str, i: int) -> Fields:
    ports = [{"name": "db", "port": 5432, "targetPort": 5432}]
    return {"spec": {"selector": _labels(app), "ports": ports}}


def _configmap(app: str, ns: str, i: int) -> Fields:
    return {"data": {"postgresql.conf": "max_connections = 200\nshared_buffers = 128MB\n"}}


def _secret(app: str, ns: str, i: int) -> Fields:
    return {"type": "Opaque", "stringData": {"username": "app", "password": f"secret-{i:06d}"}}


def _pvc(app: str, ns: str, i: int) -> Fields:
    storage = {"requests": {"storage": "10Gi"}}
    return {"spec": {"accessModes": ["ReadWriteOnce"], "resources": storage}}


def _pdb(app: str, ns: str, i: int) -> Fields:
    return {"spec": {"minAvailable": 2, "selector": _selector(app)}}


def _role(app: str, ns: str, i: int) -> Fields:
    rule = {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "watch"]}
    return {"rules": [rule]}


def _rolebinding(app: str, ns: str, i: int) -> Fields:
    return {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": app},
        "subjects": [{"kind": "ServiceAccount", "name": app, "namespace": ns}],
    }


def _endpointslice(app: str, ns: str, i: int) -> Fields:
    ip = f"10.244.{i // 250 % 250}.{i % 250 + 1}"
    return {
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": "db", "port": 5432, "protocol": "TCP"}],
    }


def _job(app: str, ns: str, i: int) -> Fields:
    return {"spec": {"template": _pod_template(app, restart="Never"), "backoffLimit": 2}}


def _lease(app: str, ns: str, i: int) -> Fields:
    return {"spec": {"holderIdentity": f"{app}-0", "leaseDurationSeconds": 15}}


def _event(app: str, ns: str, i: int) -> Fields:
    return {
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": f"{app}-0"},
        "reason": "Started",
        "message": "Started container db",
        "type": "Normal",
        "source": {"component": "kubelet"},
    }


def _node(app: str, ns: str, i: int) -> Fields:
    return {
        "metadata": {"name": f"worker-{i}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _namespace(app: str, ns: str, i: int) -> Fields:
    return {"metadata": {"name": f"tenant-{i}"}}


@dataclass(frozen=True)
class Kind:
    """A resource (``group_version`` and ``plural`` as ``Manager.informer`` takes them)
    and the fields of its objects beyond metadata: ``fields(app, namespace, i)``."""

    group_version: str
    plural: str
    kind: str
    fields: Callable[[str, str, int], Fields]
    namespaced: bool = True


KINDS: tuple[Kind, ...] = (
    Kind("v1", "pods", "Pod", _nothing),  # made by SimProcess.populate, not by body()
    Kind("apps/v1", "statefulsets", "StatefulSet", _statefulset),
    Kind("v1", "services", "Service", _service),
    Kind("v1", "configmaps", "ConfigMap", _configmap),
    Kind("v1", "secrets", "Secret", _secret),
    Kind("v1", "serviceaccounts", "ServiceAccount", _nothing),
    Kind("v1", "persistentvolumeclaims", "PersistentVolumeClaim", _pvc),
    Kind("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", _pdb),
    Kind("rbac.authorization.k8s.io/v1", "roles", "Role", _role),
    Kind("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", _rolebinding),
    Kind("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", _endpointslice),
    Kind("batch/v1", "jobs", "Job", _job),
    Kind("coordination.k8s.io/v1", "leases", "Lease", _lease),
    Kind("v1", "events", "Event", _event),
    Kind("v1", "nodes", "Node", _node, namespaced=False),
    Kind("v1", "namespaces", "Namespace", _namespace, namespaced=False),
)


def collection_path(kind: Kind, namespace: str) -> str:
    """The URL path to POST an object of ``kind`` to (``namespace`` if it is namespaced)."""
    root = "/api/v1" if kind.group_version == "v1" else f"/apis/{kind.group_version}"
    if kind.namespaced:
        return f"{root}/namespaces/{namespace}/{kind.plural}"
    return f"{root}/{kind.plural}"


def body(kind: Kind, namespace: str, i: int) -> Fields:
    """Object ``i`` of ``kind`` (in ``namespace`` when the kind is namespaced)."""
    app = f"db-{i}"
    meta: Fields = {"name": app, "labels": _labels(app)}
    if kind.namespaced:
        meta["namespace"] = namespace
    fields = kind.fields(app, namespace, i)
    meta.update(fields.pop("metadata", {}))
    return {"apiVersion": kind.group_version, "kind": kind.kind, "metadata": meta, **fields}
