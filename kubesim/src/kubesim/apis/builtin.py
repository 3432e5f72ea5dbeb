"""The built-in types KubeSim serves, each with its kind's strategy: v1.28's scheme.

:data:`BUILTIN_RESOURCES` lists every built-in group/version/resource (docs/kubesim.md has
the table) with its names, scope, subresources and the strategy of its kind (one object per
kind, shared by the versions serving it); :func:`builtin_registry` is a registry serving
them. Kinds without rules of their own get the default strategy; the kinds whose only rule
is keeping ``metadata.generation`` (PodDisruptionBudgets, Ingresses, NetworkPolicies,
EndpointSlices) share one.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiextensions.crd import CustomResourceDefinitionStrategy
from kubesim.apis.apiregistration.apiservice import APIServiceStrategy
from kubesim.apis.apps.controllerrevision import ControllerRevisionStrategy
from kubesim.apis.apps.daemonset import DaemonSetStrategy
from kubesim.apis.apps.deployment import DeploymentStrategy
from kubesim.apis.apps.replicaset import ReplicaSetStrategy
from kubesim.apis.apps.statefulset import StatefulSetStrategy
from kubesim.apis.authorization.reviews import (
    LocalSubjectAccessReviewStrategy,
    SelfSubjectAccessReviewStrategy,
    SelfSubjectReviewStrategy,
    SelfSubjectRulesReviewStrategy,
    SubjectAccessReviewStrategy,
)
from kubesim.apis.autoscaling.horizontalpodautoscaler.strategy import (
    HorizontalPodAutoscalerStrategy,
)
from kubesim.apis.batch.cronjob import CronJobStrategy
from kubesim.apis.batch.job import JobStrategy
from kubesim.apis.certificates.certificatesigningrequest.strategy import (
    CertificateSigningRequestStrategy,
)
from kubesim.apis.coordination.lease import LeaseStrategy
from kubesim.apis.core.configmap import ConfigMapStrategy
from kubesim.apis.core.endpoints import EndpointsStrategy
from kubesim.apis.core.event.strategy import EventStrategy
from kubesim.apis.core.namespace import NamespaceStrategy
from kubesim.apis.core.node import NodeStrategy
from kubesim.apis.core.persistentvolume import PersistentVolumeStrategy
from kubesim.apis.core.persistentvolumeclaim import PersistentVolumeClaimStrategy
from kubesim.apis.core.pod.strategy import PodStrategy
from kubesim.apis.core.podtemplate import PodTemplateStrategy
from kubesim.apis.core.replicationcontroller import ReplicationControllerStrategy
from kubesim.apis.core.secret import SecretStrategy
from kubesim.apis.core.service.strategy import ServiceStrategy
from kubesim.apis.core.serviceaccount import ServiceAccountStrategy
from kubesim.apis.flowcontrol.flowschema import FlowSchemaStrategy
from kubesim.apis.flowcontrol.prioritylevelconfiguration import (
    PriorityLevelConfigurationStrategy,
)
from kubesim.registry.resource import SCALE, STATUS_VERBS, ResourceType, Strategy, Subresource
from kubesim.registry.types import ResourceRegistry

__all__ = ["BUILTIN_RESOURCES", "builtin_registry"]


class _KeepsGeneration(Strategy):
    """A kind whose only rule of its own: the server keeps ``metadata.generation``."""

    uses_generation = True


_GENERATION = _KeepsGeneration()
CONFIG_MAPS = ConfigMapStrategy()
ENDPOINTS = EndpointsStrategy()
EVENTS = EventStrategy()
NAMESPACES = NamespaceStrategy()
NODES = NodeStrategy()
PERSISTENT_VOLUME_CLAIMS = PersistentVolumeClaimStrategy()
PERSISTENT_VOLUMES = PersistentVolumeStrategy()
PODS = PodStrategy()
POD_TEMPLATES = PodTemplateStrategy()
REPLICATION_CONTROLLERS = ReplicationControllerStrategy()
SECRETS = SecretStrategy()
SERVICE_ACCOUNTS = ServiceAccountStrategy()
SERVICES = ServiceStrategy()
CONTROLLER_REVISIONS = ControllerRevisionStrategy()
DAEMON_SETS = DaemonSetStrategy()
DEPLOYMENTS = DeploymentStrategy()
REPLICA_SETS = ReplicaSetStrategy()
STATEFUL_SETS = StatefulSetStrategy()
CRON_JOBS = CronJobStrategy()
JOBS = JobStrategy()
LEASES = LeaseStrategy()
HORIZONTAL_POD_AUTOSCALERS = HorizontalPodAutoscalerStrategy()
CERTIFICATE_SIGNING_REQUESTS = CertificateSigningRequestStrategy()
FLOW_SCHEMAS = FlowSchemaStrategy()
PRIORITY_LEVELS = PriorityLevelConfigurationStrategy()
API_SERVICES = APIServiceStrategy()
CUSTOM_RESOURCE_DEFINITIONS = CustomResourceDefinitionStrategy()


def _rt(gv: str, plural: str, kind: str, *, ns: bool = True, **kw: Any) -> ResourceType:
    group, _, version = gv.rpartition("/")
    return ResourceType(group, version, plural, kw.pop("singular", kind.lower()), kind, ns, **kw)


_ALL = ("all",)
_AUTHZ = "authorization.k8s.io/v1"
#: The review resources (create only, never stored).
_REVIEWS = tuple(
    _rt(gv, plural, kind, ns=ns, has_status=False, verbs=("create",), strategy=strategy)
    for gv, plural, kind, ns, strategy in (
        (
            "authentication.k8s.io/v1",
            "selfsubjectreviews",
            "SelfSubjectReview",
            False,
            SelfSubjectReviewStrategy(),
        ),
        (
            _AUTHZ,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            True,
            LocalSubjectAccessReviewStrategy(),
        ),
        (
            _AUTHZ,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            False,
            SelfSubjectAccessReviewStrategy(),
        ),
        (
            _AUTHZ,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            False,
            SelfSubjectRulesReviewStrategy(),
        ),
        (
            _AUTHZ,
            "subjectaccessreviews",
            "SubjectAccessReview",
            False,
            SubjectAccessReviewStrategy(),
        ),
    )
)
BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _rt(
        "v1", "configmaps", "ConfigMap", short_names=("cm",), has_status=False, strategy=CONFIG_MAPS
    ),
    _rt(
        "v1",
        "endpoints",
        "Endpoints",
        singular="endpoints",
        short_names=("ep",),
        has_status=False,
        strategy=ENDPOINTS,
    ),
    _rt("v1", "events", "Event", short_names=("ev",), has_status=False, strategy=EVENTS),
    _rt(
        "v1",
        "namespaces",
        "Namespace",
        ns=False,
        short_names=("ns",),
        extra_subresources=(Subresource("finalize", "Namespace", ("update",)),),
        strategy=NAMESPACES,
    ),
    _rt("v1", "nodes", "Node", ns=False, short_names=("no",), strategy=NODES),
    _rt(
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        short_names=("pvc",),
        strategy=PERSISTENT_VOLUME_CLAIMS,
    ),
    _rt(
        "v1",
        "pods",
        "Pod",
        short_names=("po",),
        categories=_ALL,
        extra_subresources=(Subresource("binding", "Binding", ("create",)),),
        strategy=PODS,
    ),
    _rt("v1", "secrets", "Secret", has_status=False, strategy=SECRETS),
    _rt(
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        short_names=("sa",),
        has_status=False,
        strategy=SERVICE_ACCOUNTS,
    ),
    _rt("v1", "services", "Service", short_names=("svc",), categories=_ALL, strategy=SERVICES),
    _rt(
        "apps/v1",
        "controllerrevisions",
        "ControllerRevision",
        has_status=False,
        strategy=CONTROLLER_REVISIONS,
    ),
    _rt(
        "apps/v1",
        "daemonsets",
        "DaemonSet",
        short_names=("ds",),
        categories=_ALL,
        strategy=DAEMON_SETS,
    ),
    _rt(
        "apps/v1",
        "deployments",
        "Deployment",
        short_names=("deploy",),
        categories=_ALL,
        extra_subresources=(SCALE,),
        strategy=DEPLOYMENTS,
    ),
    _rt(
        "apps/v1",
        "replicasets",
        "ReplicaSet",
        short_names=("rs",),
        categories=_ALL,
        extra_subresources=(SCALE,),
        strategy=REPLICA_SETS,
    ),
    _rt(
        "apps/v1",
        "statefulsets",
        "StatefulSet",
        short_names=("sts",),
        categories=_ALL,
        extra_subresources=(SCALE,),
        strategy=STATEFUL_SETS,
    ),
    _rt("v1", "limitranges", "LimitRange", short_names=("limits",), has_status=False),
    _rt(
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        ns=False,
        short_names=("pv",),
        strategy=PERSISTENT_VOLUMES,
    ),
    _rt("v1", "podtemplates", "PodTemplate", has_status=False, strategy=POD_TEMPLATES),
    _rt(
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        short_names=("rc",),
        categories=_ALL,
        extra_subresources=(SCALE,),
        strategy=REPLICATION_CONTROLLERS,
    ),
    _rt("v1", "resourcequotas", "ResourceQuota", short_names=("quota",)),
    _rt(
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        ns=False,
        categories=("api-extensions",),
        has_status=False,
    ),
    _rt(
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        ns=False,
        categories=("api-extensions",),
        has_status=False,
    ),
    *_REVIEWS,
    _rt(
        "batch/v1", "cronjobs", "CronJob", short_names=("cj",), categories=_ALL, strategy=CRON_JOBS
    ),
    _rt("batch/v1", "jobs", "Job", categories=_ALL, strategy=JOBS),
    _rt(
        "discovery.k8s.io/v1",
        "endpointslices",
        "EndpointSlice",
        has_status=False,
        strategy=_GENERATION,
    ),
    _rt("networking.k8s.io/v1", "ingressclasses", "IngressClass", ns=False, has_status=False),
    _rt("networking.k8s.io/v1", "ingresses", "Ingress", short_names=("ing",), strategy=_GENERATION),
    _rt(
        "networking.k8s.io/v1",
        "networkpolicies",
        "NetworkPolicy",
        short_names=("netpol",),
        has_status=False,
        strategy=_GENERATION,
    ),
    _rt(
        "events.k8s.io/v1",
        "events",
        "Event",
        short_names=("ev",),
        has_status=False,
        storage_group="",
        strategy=EVENTS,
    ),
    _rt("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", ns=False, has_status=False),
    _rt(
        "policy/v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        short_names=("pdb",),
        strategy=_GENERATION,
    ),
    *(
        _rt("rbac.authorization.k8s.io/v1", plural, kind, ns=ns, has_status=False)
        for plural, kind, ns in (
            ("clusterrolebindings", "ClusterRoleBinding", False),
            ("clusterroles", "ClusterRole", False),
            ("rolebindings", "RoleBinding", True),
            ("roles", "Role", True),
        )
    ),
    _rt(
        "scheduling.k8s.io/v1",
        "priorityclasses",
        "PriorityClass",
        ns=False,
        short_names=("pc",),
        has_status=False,
    ),
    _rt("storage.k8s.io/v1", "csidrivers", "CSIDriver", ns=False, has_status=False),
    _rt("storage.k8s.io/v1", "csinodes", "CSINode", ns=False, has_status=False),
    _rt(
        "storage.k8s.io/v1",
        "storageclasses",
        "StorageClass",
        ns=False,
        short_names=("sc",),
        has_status=False,
    ),
    _rt("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", ns=False),
    _rt("coordination.k8s.io/v1", "leases", "Lease", has_status=False, strategy=LEASES),
    *(
        _rt(
            f"autoscaling/{version}",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            short_names=("hpa",),
            categories=_ALL,
            storage_version="v2",
            strategy=HORIZONTAL_POD_AUTOSCALERS,
        )
        for version in ("v2", "v1")
    ),
    _rt(
        "certificates.k8s.io/v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        ns=False,
        short_names=("csr",),
        extra_subresources=(Subresource("approval", "CertificateSigningRequest", STATUS_VERBS),),
        strategy=CERTIFICATE_SIGNING_REQUESTS,
    ),
    *(
        _rt(
            f"flowcontrol.apiserver.k8s.io/{version}",
            plural,
            kind,
            ns=False,
            storage_version="v1beta3",
            strategy=strategy,
        )
        for version in ("v1beta3", "v1beta2")
        for plural, kind, strategy in (
            ("flowschemas", "FlowSchema", FLOW_SCHEMAS),
            ("prioritylevelconfigurations", "PriorityLevelConfiguration", PRIORITY_LEVELS),
        )
    ),
    _rt(
        "apiregistration.k8s.io/v1",
        "apiservices",
        "APIService",
        ns=False,
        singular="apiservice",
        categories=("api-extensions",),
        strategy=API_SERVICES,
    ),
    _rt(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        ns=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        strategy=CUSTOM_RESOURCE_DEFINITIONS,
    ),
)


def builtin_registry() -> ResourceRegistry:
    """A registry serving :data:`BUILTIN_RESOURCES`."""
    return ResourceRegistry(BUILTIN_RESOURCES)
