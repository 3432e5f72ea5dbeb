"""What a resource's objects are: the apiVersion, kind and scope a list or watch of it may
carry, so that an answer about something else (a proxy, a misrouted request, a server
that answers ConfigMaps to a pods request) is refused instead of cached.

A resource's kind is, in order: the one its caller gives; the kind of the built-in
resource (:data:`BUILTIN`); what discovery says (``/apis/GROUP/VERSION``, asked once);
else, while discovery cannot answer, any kind whose regular English plural is the
resource's name (``Gateway`` -> ``gateways``, ``NetworkPolicy`` -> ``networkpolicies``:
how CRDs are named almost always).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aioinformer._core.objects import KubeObject

__all__ = ["BUILTIN", "METADATA_KIND", "Expected", "regular_plural"]

METADATA_KIND = ("meta.k8s.io/v1", "PartialObjectMetadata")
"""The apiVersion and kind of the objects of a metadata-only list or watch."""

BUILTIN: Mapping[tuple[str, str], str] = {
    ("", "pods"): "Pod",
    ("", "services"): "Service",
    ("", "endpoints"): "Endpoints",
    ("", "configmaps"): "ConfigMap",
    ("", "secrets"): "Secret",
    ("", "serviceaccounts"): "ServiceAccount",
    ("", "namespaces"): "Namespace",
    ("", "nodes"): "Node",
    ("", "events"): "Event",
    ("", "persistentvolumes"): "PersistentVolume",
    ("", "persistentvolumeclaims"): "PersistentVolumeClaim",
    ("", "replicationcontrollers"): "ReplicationController",
    ("", "resourcequotas"): "ResourceQuota",
    ("", "limitranges"): "LimitRange",
    ("", "podtemplates"): "PodTemplate",
    ("apps", "deployments"): "Deployment",
    ("apps", "replicasets"): "ReplicaSet",
    ("apps", "statefulsets"): "StatefulSet",
    ("apps", "daemonsets"): "DaemonSet",
    ("apps", "controllerrevisions"): "ControllerRevision",
    ("batch", "jobs"): "Job",
    ("batch", "cronjobs"): "CronJob",
    ("coordination.k8s.io", "leases"): "Lease",
    ("discovery.k8s.io", "endpointslices"): "EndpointSlice",
    ("events.k8s.io", "events"): "Event",
    ("networking.k8s.io", "ingresses"): "Ingress",
    ("networking.k8s.io", "networkpolicies"): "NetworkPolicy",
    ("policy", "poddisruptionbudgets"): "PodDisruptionBudget",
    ("rbac.authorization.k8s.io", "roles"): "Role",
    ("rbac.authorization.k8s.io", "rolebindings"): "RoleBinding",
    ("rbac.authorization.k8s.io", "clusterroles"): "ClusterRole",
    ("rbac.authorization.k8s.io", "clusterrolebindings"): "ClusterRoleBinding",
    ("apiextensions.k8s.io", "customresourcedefinitions"): "CustomResourceDefinition",
    ("storage.k8s.io", "storageclasses"): "StorageClass",
    ("autoscaling", "horizontalpodautoscalers"): "HorizontalPodAutoscaler",
}
"""The kinds of Kubernetes' built-in resources, by (group, plural)."""


def regular_plural(kind: str) -> str:
    """The plural a resource of ``kind`` is named by, by the English rules CRDs follow."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return low[:-1] + "ies"
    return low + "s"


class Expected:
    """What one resource's list and watch may carry (see the module docstring):
    :meth:`foreign` says why an object is not one of the resource's ("" if it is).

    ``kind`` None while unknown (then the plural rule applies); ``namespace`` the one
    watched (None: all); ``labels`` the label selector's predicate (None: no selector).
    """

    def __init__(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        kind: str | None,
        namespace: str | None,
        labels: Callable[[Mapping[str, str]], bool] | None,
        metadata_only: bool,
    ) -> None:
        self.group = group
        self.plural = plural
        self.api_version = f"{group}/{version}" if group else version
        self.kind = kind or BUILTIN.get((group, plural))
        self.namespace = namespace
        self.labels = labels
        self.metadata_only = metadata_only

    def kind_ok(self, kind: str) -> bool:
        """Whether ``kind`` (not empty) may be the resource's."""
        if self.metadata_only and kind == METADATA_KIND[1]:
            return True
        if self.kind is not None:
            return kind == self.kind
        return regular_plural(kind) == self.plural

    def list_kind_ok(self, list_kind: str) -> bool:
        """Whether a list of ``list_kind`` ("" when it says none) may be the resource's."""
        if not list_kind:
            return True
        return list_kind.endswith("List") and self.kind_ok(list_kind[:-4])

    def api_version_ok(self, api_version: str) -> bool:
        if not api_version or api_version == self.api_version:
            return True
        return self.metadata_only and api_version == METADATA_KIND[0]

    def foreign(self, obj: KubeObject) -> str:
        """Why ``obj`` is not one of the resource's objects ("" when it may be)."""
        if (
            obj.kind == self.kind
            and obj.api_version == self.api_version
            and self.labels is None
            and (not self.namespace or obj.namespace == self.namespace)
        ):
            return ""  # (the usual case, on the hot path of every event)
        if not self.api_version_ok(obj.api_version):
            return f"of apiVersion {obj.api_version[:64]!r}, not {self.api_version!r}"
        if obj.kind and not self.kind_ok(obj.kind):
            want = repr(self.kind) if self.kind else f"the kind of {self.plural!r}"
            return f"a {obj.kind[:64]!r}, not {want}"
        if self.namespace and obj.namespace != self.namespace:
            return f"in namespace {obj.namespace[:64]!r}, not {self.namespace!r}"
        if self.labels is not None and not self.labels(obj.labels):
            return "its labels do not match the label selector"
        return ""
