"""What KubeSim serves (built-in and CRD-defined resource types) and its discovery documents.

Discovery documents are plain JSON-ready dicts whose keys and ordering match kube-apiserver
v1.28 (see tests/kubesim/conformance/15a-15e and 13d): ``/api``, ``/api/v1``, ``/apis``,
``/apis/<group>``, ``/apis/<group>/<version>``, ``/version`` and aggregated discovery
(``apidiscovery.k8s.io/v2beta1``). Only what the sim can serve is listed: the built-in
kinds of :data:`BUILTIN_RESOURCES` (docs/kubesim.md has the table), the create-only review
resources (``._reviews``), ``*/status``, ``pods/binding``, ``namespaces/finalize`` and
``*/scale`` (the apps workloads, ReplicationControllers and custom resources that declare
it), not ``*/log``, ``*/exec`` and the like.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.machinery.validation import (
    Cause,
    GoRepr,
    go_quote,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    not_supported,
    required,
)

__all__ = [
    "BUILTIN_RESOURCES",
    "CRD_VERBS",
    "SCALE",
    "STANDARD_VERBS",
    "ResourceRegistry",
    "ResourceType",
    "Subresource",
    "resource_types_from_crd",
    "storage_version_hash",
    "validate_crd",
    "version_info",
    "version_sort_key",
]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
#: The verb order the apiextensions discovery controller lists for custom resources (13d).
CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """``discovery.StorageVersionHash``: base64 of the first 8 bytes of
    sha256("group/version/kind"), e.g. ``xPOwRZ+Yhw8=`` for core v1 Pod (as recorded)."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


@dataclass(frozen=True, slots=True)
class Subresource:
    """A served subresource: ``name`` (``status``, ``binding``, ``scale``, ``finalize``), the
    kind its requests and responses carry, its verbs, and the kind's group and version when
    it is not the parent's (``autoscaling/v1`` Scale)."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


#: ``*/scale`` of the apps workloads and of custom resources that declare it.
SCALE = Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served group/version/resource. ``storage_version`` (default: ``version``) feeds
    the storage version hash; ``list_kind_name`` overrides ``kind + "List"`` (CRD listKind);
    ``extra_subresources`` are served besides ``status`` (``has_status``); ``crd_version``
    is a custom type's entry of its CRD's ``spec.versions`` (schema, printer columns,
    subresources), None for built-in types. ``storage_group`` is set on a type served from
    the storage of the same plural in that group (kube-apiserver's cohabiting resources:
    events.k8s.io/v1 Events are core Events, :mod:`._events`); None: a storage of its own."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = True
    custom: bool = False
    verbs: tuple[str, ...] = STANDARD_VERBS
    storage_version: str = ""
    list_kind_name: str = ""
    extra_subresources: tuple[Subresource, ...] = ()
    crd_version: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    storage_group: str | None = None

    @property
    def api_version(self) -> str:
        """``v1`` for core, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """``PodList``, or the CRD's ``names.listKind``."""
        return self.list_kind_name or f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``pods`` or ``statefulsets.apps`` (plural[.group])."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def stored_group(self) -> str:
        """The group whose storage holds these objects (``storage_group``, else ``group``)."""
        return self.group if self.storage_group is None else self.storage_group

    @property
    def storage_version_hash(self) -> str:
        """The discovery ``storageVersionHash`` (of the storage version, as upstream)."""
        version = self.storage_version or self.version
        return storage_version_hash(self.stored_group, version, self.kind)

    @property
    def subresources(self) -> tuple[Subresource, ...]:
        """Served subresources, sorted by name (discovery order)."""
        subs = list(self.extra_subresources)
        if self.has_status:
            subs.append(Subresource("status", self.kind, STATUS_VERBS))
        return tuple(sorted(subs, key=lambda s: s.name))


def _rt(gv: str, plural: str, kind: str, *, ns: bool = True, **kw: Any) -> ResourceType:
    group, _, version = gv.rpartition("/")
    return ResourceType(group, version, plural, kw.pop("singular", kind.lower()), kind, ns, **kw)


_ALL = ("all",)
_AUTHZ = "authorization.k8s.io/v1"
#: The review resources (create only, see ``_reviews``).
_REVIEWS = tuple(
    _rt(gv, plural, kind, ns=ns, has_status=False, verbs=("create",))
    for gv, plural, kind, ns in (
        ("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", False),
        (_AUTHZ, "localsubjectaccessreviews", "LocalSubjectAccessReview", True),
        (_AUTHZ, "selfsubjectaccessreviews", "SelfSubjectAccessReview", False),
        (_AUTHZ, "selfsubjectrulesreviews", "SelfSubjectRulesReview", False),
        (_AUTHZ, "subjectaccessreviews", "SubjectAccessReview", False),
    )
)
BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _rt("v1", "configmaps", "ConfigMap", short_names=("cm",), has_status=False),
    _rt(
        "v1", "endpoints", "Endpoints", singular="endpoints", short_names=("ep",), has_status=False
    ),
    _rt("v1", "events", "Event", short_names=("ev",), has_status=False),
    _rt(
        "v1",
        "namespaces",
        "Namespace",
        ns=False,
        short_names=("ns",),
        extra_subresources=(Subresource("finalize", "Namespace", ("update",)),),
    ),
    _rt("v1", "nodes", "Node", ns=False, short_names=("no",)),
    _rt("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",)),
    _rt(
        "v1",
        "pods",
        "Pod",
        short_names=("po",),
        categories=_ALL,
        extra_subresources=(Subresource("binding", "Binding", ("create",)),),
    ),
    _rt("v1", "secrets", "Secret", has_status=False),
    _rt("v1", "serviceaccounts", "ServiceAccount", short_names=("sa",), has_status=False),
    _rt("v1", "services", "Service", short_names=("svc",), categories=_ALL),
    _rt("apps/v1", "controllerrevisions", "ControllerRevision", has_status=False),
    _rt("apps/v1", "daemonsets", "DaemonSet", short_names=("ds",), categories=_ALL),
    _rt(
        "apps/v1",
        "deployments",
        "Deployment",
        short_names=("deploy",),
        categories=_ALL,
        extra_subresources=(SCALE,),
    ),
    _rt(
        "apps/v1",
        "replicasets",
        "ReplicaSet",
        short_names=("rs",),
        categories=_ALL,
        extra_subresources=(SCALE,),
    ),
    _rt(
        "apps/v1",
        "statefulsets",
        "StatefulSet",
        short_names=("sts",),
        categories=_ALL,
        extra_subresources=(SCALE,),
    ),
    _rt("v1", "limitranges", "LimitRange", short_names=("limits",), has_status=False),
    _rt("v1", "persistentvolumes", "PersistentVolume", ns=False, short_names=("pv",)),
    _rt("v1", "podtemplates", "PodTemplate", has_status=False),
    _rt(
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        short_names=("rc",),
        categories=_ALL,
        extra_subresources=(SCALE,),
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
    _rt("batch/v1", "cronjobs", "CronJob", short_names=("cj",), categories=_ALL),
    _rt("batch/v1", "jobs", "Job", categories=_ALL),
    _rt("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", has_status=False),
    _rt("networking.k8s.io/v1", "ingressclasses", "IngressClass", ns=False, has_status=False),
    _rt("networking.k8s.io/v1", "ingresses", "Ingress", short_names=("ing",)),
    _rt(
        "networking.k8s.io/v1",
        "networkpolicies",
        "NetworkPolicy",
        short_names=("netpol",),
        has_status=False,
    ),
    _rt(
        "events.k8s.io/v1",
        "events",
        "Event",
        short_names=("ev",),
        has_status=False,
        storage_group="",
    ),
    _rt("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", ns=False, has_status=False),
    _rt("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",)),
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
    _rt("coordination.k8s.io/v1", "leases", "Lease", has_status=False),
    *(
        _rt(
            f"autoscaling/{version}",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            short_names=("hpa",),
            categories=_ALL,
            storage_version="v2",
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
    ),
    *(
        _rt(
            f"flowcontrol.apiserver.k8s.io/{version}",
            plural,
            kind,
            ns=False,
            storage_version="v1beta3",
        )
        for version in ("v1beta3", "v1beta2")
        for plural, kind in (
            ("flowschemas", "FlowSchema"),
            ("prioritylevelconfigurations", "PriorityLevelConfiguration"),
        )
    ),
    _rt(
        "apiregistration.k8s.io/v1",
        "apiservices",
        "APIService",
        ns=False,
        singular="apiservice",
        categories=("api-extensions",),
    ),
    _rt(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        ns=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
    ),
)

#: Built-in API groups in v1.28's ``/apis`` order (group priority), from 15c.
_GROUP_ORDER = (
    "apiregistration.k8s.io apps events.k8s.io authentication.k8s.io authorization.k8s.io "
    "autoscaling batch certificates.k8s.io networking.k8s.io policy rbac.authorization.k8s.io "
    "storage.k8s.io admissionregistration.k8s.io apiextensions.k8s.io scheduling.k8s.io "
    "coordination.k8s.io node.k8s.io discovery.k8s.io flowcontrol.apiserver.k8s.io"
).split()
_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_sort_key(version: str) -> tuple[int, int, int, int, str]:
    """Kube-aware version order (``CompareKubeAwareVersionStrings``): GA before beta before
    alpha, higher numbers first, then non-Kubernetes-like versions alphabetically."""
    m = _KUBE_VERSION.fullmatch(version)
    if not m:
        return (1, 0, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (0, stage, -int(m.group(1)), -int(m.group(3) or 0), "")


class ResourceRegistry:
    """The set of served resource types, keyed by (group, version, plural). Not thread-safe;
    KubeSim mutates it from its event loop only."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in types:
            self.add(rt)

    @classmethod
    def builtin(cls) -> ResourceRegistry:
        """A registry serving :data:`BUILTIN_RESOURCES`."""
        return cls(BUILTIN_RESOURCES)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/group/version/plural`` (core: group ``""``), or None."""
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type whose ``apiVersion``/``kind`` these are, or None."""
        return next(
            (
                rt
                for rt in self._types.values()
                if rt.api_version == api_version and rt.kind == kind
            ),
            None,
        )

    def add(self, rt: ResourceType) -> None:
        """Serve *rt* (replacing a type with the same group, version and plural)."""
        self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove(self, group: str, version: str, plural: str) -> None:
        """Stop serving that type (no error if it was not served)."""
        self._types.pop((group, version, plural), None)

    def all(self) -> list[ResourceType]:
        """Every served type, in insertion order."""
        return list(self._types.values())

    def groups(self) -> list[tuple[str, list[str]]]:
        """``(group, versions)`` in ``/apis`` order: core ``""`` first, built-in groups by
        upstream priority, then CRD groups as the aggregator sorts equal-priority APIServices
        (by name ``<version>.<group>``, i.e. effectively alphabetically), not by creation
        time. Versions are in kube-aware order, the preferred one first."""
        versions: dict[str, set[str]] = {}
        for rt in self._types.values():
            versions.setdefault(rt.group, set()).add(rt.version)

        def key(group: str) -> tuple[int, int, str]:
            if group == "":
                return (0, 0, "")
            if group in _GROUP_ORDER:
                return (1, _GROUP_ORDER.index(group), "")
            return (2, 0, min(f"{v}.{group}" for v in versions[group]))

        return [(g, sorted(versions[g], key=version_sort_key)) for g in sorted(versions, key=key)]

    def _in(self, group: str, version: str) -> list[ResourceType]:
        found = (rt for rt in self._types.values() if rt.group == group and rt.version == version)
        return sorted(found, key=lambda rt: rt.plural)

    # -- discovery documents -------------------------------------------------------------------

    def api_versions(self, server_address: str) -> dict[str, Any]:
        """``GET /api`` (APIVersions, 15a); *server_address* is ``host:port``."""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """``GET /api/v1`` (group ``""``) or ``/apis/<group>/<version>`` (APIResourceList,
        15b/13d), or None when that group/version is not served. Entries are sorted by name;
        subresources are entries of their own with an empty singularName."""
        types = self._in(group, version)
        if not types:
            return None
        entries: list[dict[str, Any]] = []
        for rt in types:
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            entry["storageVersionHash"] = rt.storage_version_hash
            entries.append(entry)
            entries += [
                {
                    "name": f"{rt.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    **({"group": sub.group, "version": sub.version} if sub.group else {}),
                    "kind": sub.kind,
                    "verbs": list(sub.verbs),
                }
                for sub in rt.subresources
            ]
        entries.sort(key=lambda e: str(e["name"]))
        head: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            head["apiVersion"] = "v1"
        return head | {
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": entries,
        }

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def api_group_list(self) -> dict[str, Any]:
        """``GET /apis`` (APIGroupList, 15c) for the groups served."""
        groups = [self._group_doc(g, vs) for g, vs in self.groups() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> dict[str, Any] | None:
        """``GET /apis/<group>`` (APIGroup, 13d), or None if the group is not served."""
        for g, versions in self.groups():
            if g == group and g:
                return {"kind": "APIGroup", "apiVersion": "v1"} | self._group_doc(g, versions)
        return None

    def aggregated_discovery(self, core: bool) -> dict[str, Any]:
        """Aggregated discovery (``Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;
        as=APIGroupDiscoveryList``, 15e): of ``/api`` when *core*, else of ``/apis``. Built-in
        types report ``responseKind`` group/version as ``""``; custom ones their own."""
        items: list[dict[str, Any]] = []
        groups = [(g, vs) for g, vs in self.groups() if (g == "") == core]
        if not core:  # the discovery manager breaks equal-priority ties by group name
            groups.sort(key=lambda gv: (gv[0] not in _GROUP_ORDER, _group_rank(gv[0])))
        for group, versions in groups:
            meta: dict[str, Any] = {"name": group} if group else {}
            vdocs = [
                {
                    "version": v,
                    "resources": [_aggregated(rt) for rt in self._in(group, v)],
                    "freshness": "Current",
                }
                for v in versions
            ]
            items.append({"metadata": meta | {"creationTimestamp": None}, "versions": vdocs})
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2beta1",
            "metadata": {},
            "items": items,
        }


def _group_rank(group: str) -> tuple[int, str]:
    return (_GROUP_ORDER.index(group), "") if group in _GROUP_ORDER else (0, group)


def _aggregated(rt: ResourceType) -> dict[str, Any]:
    gv = {"group": rt.group, "version": rt.version} if rt.custom else {"group": "", "version": ""}
    doc: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": gv | {"kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        doc["shortNames"] = list(rt.short_names)
    if rt.categories:
        doc["categories"] = list(rt.categories)
    if rt.subresources:
        doc["subresources"] = [
            {
                "subresource": s.name,
                "responseKind": ({"group": s.group, "version": s.version} if s.group else gv)
                | {"kind": s.kind},
                "verbs": list(s.verbs),
            }
            for s in rt.subresources
        ]
    return doc


def version_info() -> dict[str, str]:
    """``GET /version``, as recorded in 15d."""
    return {
        "major": "1",
        "minor": "28",
        "gitVersion": "v1.28.0",
        "gitCommit": "8bfc72d03e2130f1bee566d692596931b0ff57cf",
        "gitTreeState": "clean",
        "buildDate": "2026-11-29T18:59:42Z",
        "goVersion": "go1.27.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


# -- CustomResourceDefinitions ----------------------------------------------------------------


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def resource_types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """One :class:`ResourceType` per *served* version of an apiextensions.k8s.io/v1 CRD:
    custom, CRD verb order, ``has_status`` when that version's ``subresources.status`` is set,
    scope, names (singular defaults to lower-case kind, listKind to kind + "List"), and the
    storage version's hash. Empty for a CRD without group, names or versions."""
    spec = _d(crd.get("spec"))
    names = _d(spec.get("names"))
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)):
        return []
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("name")]
    storage = next((str(v["name"]) for v in versions if v.get("storage")), "")
    return [
        ResourceType(
            group=group,
            version=str(v["name"]),
            plural=plural,
            singular=str(names.get("singular") or kind.lower()),
            kind=kind,
            namespaced=spec.get("scope", "Namespaced") != "Cluster",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            has_status=_d(v.get("subresources")).get("status") is not None,
            extra_subresources=(SCALE,) if _d(v.get("subresources")).get("scale") else (),
            custom=True,
            verbs=CRD_VERBS,
            storage_version=storage,
            list_kind_name=str(names.get("listKind") or f"{kind}List"),
            crd_version=v,
        )
        for v in versions
        if v.get("served")
    ]


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """The CRD-specific 422 causes (``ValidateCustomResourceDefinition``, v1.28 messages):
    ``metadata.name`` must be ``<spec.names.plural>.<spec.group>``; ``spec.group`` required,
    a DNS subdomain with a dot; ``spec.names.plural``/``kind`` required and DNS-1035-like;
    ``spec.scope`` Cluster or Namespaced; at least one version, unique DNS-1035 version names,
    exactly one storage version, a schema per version. Generic ObjectMeta checks are
    ``validate_create``'s. Cause order approximates upstream's."""
    meta, spec = _d(crd.get("metadata")), _d(crd.get("spec"))
    names = _d(spec.get("names"))
    group, plural = str(spec.get("group") or ""), str(names.get("plural") or "")
    errs: list[Cause] = []
    name = str(meta.get("name") or "")
    if name and name != f"{plural}.{group}":
        errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(required("spec.group"))
    elif msgs := is_dns1123_subdomain(group):
        errs.append(invalid("spec.group", group, ",".join(msgs)))
    elif "." not in group:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = [_d(v) for v in spec.get("versions") or []]
    if not versions:
        errs.append(required("spec.versions", "must have at least one version"))
    seen: set[str] = set()
    for i, v in enumerate(versions):
        vname = str(v.get("name") or "")
        errs += [invalid(f"spec.versions[{i}].name", vname, m) for m in is_dns1035_label(vname)]
        if not _d(v.get("schema")).get("openAPIV3Schema"):
            errs.append(
                required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required")
            )
        if vname in seen:
            errs.append(
                invalid(
                    "spec.versions", _versions_repr(versions), "must contain unique version names"
                )
            )
        seen.add(vname)
    if versions and sum(bool(v.get("storage")) for v in versions) != 1:
        detail = "must have exactly one version marked as storage version"
        errs.append(invalid("spec.versions", _versions_repr(versions), detail))
    for key in ("plural", "singular", "kind", "listKind"):
        value = str(names.get(key) or "")
        if key in ("plural", "kind") and not value:
            errs.append(required(f"spec.names.{key}"))
        elif value and (msgs := is_dns1035_label(value.lower() if "ind" in key else value)):
            prefix = "may have mixed case, but should otherwise match: " if "ind" in key else ""
            errs.append(invalid(f"spec.names.{key}", value, prefix + ",".join(msgs)))
    for key in ("shortNames", "categories"):
        for i, item in enumerate(names.get(key) or []):
            if msgs := is_dns1035_label(str(item)):
                errs.append(invalid(f"spec.names.{key}[{i}]", item, ",".join(msgs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(
            invalid(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    return errs


def _versions_repr(versions: list[dict[str, Any]]) -> GoRepr:
    """spec.versions is a Go struct slice; this prints only the names (approximation)."""
    names = ", ".join(go_quote(str(v.get("name") or "")) for v in versions)
    return GoRepr("[]apiextensions.CustomResourceDefinitionVersion{" + names + "}")
