"""flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations, stored only.

kube-apiserver v1.28 serves v1beta3 (stored) and v1beta2 of both kinds; the two versions
differ in one field, a Limited priority level's ``nominalConcurrencyShares`` (v1beta3) that
v1beta2 calls ``assuredConcurrencyShares`` (:func:`to_storage`/:func:`to_view`). At start
the server's APF configuration controller writes the mandatory and suggested objects
(:func:`bootstrap_objects`: ``exempt``, ``probes``, ``catch-all``, ``system-nodes``,
``global-default``, ...; priority levels ``exempt``, ``catch-all``, ``system``,
``workload-high``, ...) with the ``apf.kubernetes.io/autoupdate-spec`` annotation and, on
FlowSchemas, the ``Dangling`` condition; their rules follow upstream's bootstrap
configuration in shape, not in every subject. Nothing enforces them: no request is ever
queued or rejected.

:func:`validate_flowcontrol` checks what upstream rejects most often: a FlowSchema's
priority level name, ``matchingPrecedence`` 1..10000, distinguisher and subject kinds; a
priority level's type and its ``limited``/``exempt`` part, limit response type and queuing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.machinery.validation import Cause, invalid, not_supported, required

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType

__all__ = [
    "GROUP",
    "bootstrap_objects",
    "is_flowcontrol",
    "is_v1beta2_plc",
    "to_storage",
    "to_view",
    "validate_flowcontrol",
]

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


def is_flowcontrol(rt: ResourceType) -> bool:
    """Whether ``rt`` is one of the group's two kinds (either version)."""
    return rt.group == GROUP and not rt.custom


def is_v1beta2_plc(rt: ResourceType) -> bool:
    """Whether ``rt`` is v1beta2 PriorityLevelConfigurations (converted on every read)."""
    return rt.group == GROUP and rt.plural == _PLC and rt.version == "v1beta2"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _renamed_shares(obj: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    limited = _d(_d(obj.get("spec")).get("limited"))
    if old not in limited:
        return obj
    out = dict(obj)
    spec = dict(_d(out["spec"]))
    spec["limited"] = {new if k == old else k: v for k, v in limited.items()}
    out["spec"] = spec
    return out


def _converted(
    rt: ResourceType, obj: dict[str, Any], old: str, new: str, api_version: str
) -> dict[str, Any]:
    if not is_v1beta2_plc(rt):
        return obj
    out = _renamed_shares(obj, old, new)
    if "apiVersion" in out:
        out["apiVersion"] = api_version
    return out


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A v1beta2 priority level in the stored (v1beta3) form; anything else unchanged."""
    shares = ("assuredConcurrencyShares", "nominalConcurrencyShares")
    return _converted(rt, obj, *shares, f"{GROUP}/v1beta3")


def to_view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored priority level as v1beta2 serves it; anything else unchanged."""
    shares = ("nominalConcurrencyShares", "assuredConcurrencyShares")
    return _converted(rt, obj, *shares, rt.api_version)


# -- the bootstrap configuration ------------------------------------------------------------


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


# -- validation ------------------------------------------------------------------------------


def _validate_flow_schema(spec: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    if not _d(spec.get("priorityLevelConfiguration")).get("name"):
        detail = "must reference a priority level"
        errs.append(required("spec.priorityLevelConfiguration.name", detail))
    precedence = spec.get("matchingPrecedence")
    if isinstance(precedence, int) and not 1 <= precedence <= 10000:
        errs.append(
            invalid("spec.matchingPrecedence", precedence, "must be between 1 and 10000, inclusive")
        )
    method = _d(spec.get("distinguisherMethod")).get("type")
    if "distinguisherMethod" in spec and method not in ("ByUser", "ByNamespace"):
        methods = ("ByUser", "ByNamespace")
        errs.append(not_supported("spec.distinguisherMethod.type", method or "", methods))
    for i, rule in enumerate(map(_d, _l(spec.get("rules")))):
        for j, subject in enumerate(map(_d, _l(rule.get("subjects")))):
            kind = subject.get("kind")
            if kind not in ("Group", "ServiceAccount", "User"):
                path = f"spec.rules[{i}].subjects[{j}].kind"
                errs.append(not_supported(path, kind or "", ("Group", "ServiceAccount", "User")))
    return errs


def _validate_priority_level(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    kind = spec.get("type")
    if kind not in ("Exempt", "Limited"):
        return [not_supported("spec.type", kind or "", ("Exempt", "Limited"))]
    if kind == "Exempt":
        if name != "exempt":
            return [invalid("spec.type", kind, "type must be 'Limited' if name is not 'exempt'")]
        return []
    limited = spec.get("limited")
    if not isinstance(limited, dict):
        return [required("spec.limited", "must not be empty when type is Limited")]
    errs: list[Cause] = []
    response = _d(limited.get("limitResponse"))
    rtype = response.get("type")
    if rtype not in ("Queue", "Reject"):
        path = "spec.limited.limitResponse"
        errs.append(not_supported(f"{path}.type", rtype or "", ("Queue", "Reject")))
    elif rtype == "Queue" and not isinstance(response.get("queuing"), dict):
        detail = "must not be empty if type is Queue"
        errs.append(required("spec.limited.limitResponse.queuing", detail))
    return errs


def validate_flowcontrol(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    """The common causes for a FlowSchema or a PriorityLevelConfiguration (stored form)."""
    spec = _d(to_storage(rt, dict(obj)).get("spec"))
    if rt.plural == "flowschemas":
        return _validate_flow_schema(spec)
    return _validate_priority_level(str(_d(obj.get("metadata")).get("name") or ""), spec)
