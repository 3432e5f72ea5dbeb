"""apiregistration.k8s.io/v1 APIServices: one per served group/version, as the aggregator has.

kube-apiserver v1.28 lists an APIService for every group/version it serves itself
(``v1.``, ``v1.apps``, ``v2.autoscaling``, ...): no ``spec.service`` (served locally), the
group's ``groupPriorityMinimum`` and the version's ``versionPriority`` (the upstream
priorities table; custom resources' 1000 and 100), the label
``kube-aggregator.kubernetes.io/automanaged`` (``onstart`` for built-in groups, ``true``
for CRD groups) and the condition ``Available`` True, reason ``Local``.
:func:`sync_apiservices` makes the stored APIServices match what the registry serves: it
creates the missing local ones (at start, when a CRD is established) and deletes the local
ones whose group/version is no longer served (when a CRD goes); APIServices that name a
service are left alone. Such an APIService may be created: with no aggregated server
behind it, its status is ``Available: False``, reason ``ServiceNotFound``
(:func:`default_apiservice`), and its group is not served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.machinery.validation import Cause, invalid, required

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType
    from kubesim.registry.store import Api

__all__ = ["default_apiservice", "is_apiservice", "sync_apiservices", "validate_apiservice"]

GROUP: Final = "apiregistration.k8s.io"
_AUTOMANAGED: Final = "kube-aggregator.kubernetes.io/automanaged"
#: group -> (groupPriorityMinimum, {version: versionPriority}) of kube-apiserver v1.28
_PRIORITIES: Final[dict[str, tuple[int, dict[str, int]]]] = {
    "": (18000, {"v1": 1}),
    "apiregistration.k8s.io": (18000, {"v1": 15}),
    "apps": (17800, {"v1": 15}),
    "events.k8s.io": (17750, {"v1": 15}),
    "authentication.k8s.io": (17700, {"v1": 15}),
    "authorization.k8s.io": (17600, {"v1": 15}),
    "autoscaling": (17500, {"v1": 15, "v2": 30}),
    "batch": (17400, {"v1": 15}),
    "certificates.k8s.io": (17300, {"v1": 15}),
    "networking.k8s.io": (17200, {"v1": 15}),
    "policy": (17100, {"v1": 15}),
    "rbac.authorization.k8s.io": (17000, {"v1": 15}),
    "storage.k8s.io": (16800, {"v1": 15}),
    "admissionregistration.k8s.io": (16700, {"v1": 15}),
    "apiextensions.k8s.io": (16700, {"v1": 15}),
    "scheduling.k8s.io": (16600, {"v1": 15}),
    "coordination.k8s.io": (16500, {"v1": 15}),
    "node.k8s.io": (16300, {"v1": 15}),
    "discovery.k8s.io": (16200, {"v1": 15}),
    "flowcontrol.apiserver.k8s.io": (16100, {"v1beta3": 18, "v1beta2": 15}),
}


def is_apiservice(rt: ResourceType) -> bool:
    """Whether ``rt`` is APIServices."""
    return rt.group == GROUP and rt.plural == "apiservices"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _condition(available: bool, now: str) -> dict[str, Any]:
    if available:
        reason, message = "Local", "Local APIServices are always available"
    else:
        reason, message = "ServiceNotFound", 'service/<name> in "<namespace>" is not present'
    return {
        "type": "Available",
        "status": "True" if available else "False",
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def local_apiservice(group: str, version: str, builtin: bool, now: str) -> dict[str, Any]:
    """The APIService the aggregator writes for a locally served group/version."""
    group_min, versions = _PRIORITIES.get(group, (1000, {}))
    spec: dict[str, Any] = {"group": group} if group else {}
    spec |= {
        "version": version,
        "groupPriorityMinimum": group_min,
        "versionPriority": versions.get(version, 100),
    }
    meta = {
        "name": f"{version}.{group}",
        "labels": {_AUTOMANAGED: "onstart" if builtin else "true"},
    }
    return {"metadata": meta, "spec": spec, "status": {"conditions": [_condition(True, now)]}}


def default_apiservice(obj: dict[str, Any]) -> None:
    """On create: an APIService's status as the aggregator's availability controller
    writes it (Available; ServiceNotFound for one that names a service), if not given."""
    service = _d(_d(obj.get("spec")).get("service"))
    status = _d(obj.get("status"))
    if not status.get("conditions"):
        available = not service
        cond = _condition(available, now_rfc3339())
        if not available:
            ns, name = service.get("namespace", ""), service.get("name", "")
            cond["message"] = f'service/{name} in "{ns}" is not present'
        obj["status"] = {"conditions": [cond]}


def sync_apiservices(api: Api) -> None:
    """Create the local APIServices the registry serves and lack one; delete the local ones
    whose group/version is gone (see the module docstring)."""
    rt = api.registry.lookup(GROUP, "v1", "apiservices")
    if rt is None:
        return
    store = api.store(rt)
    served = {
        f"{v}.{g}": (g, v, not any(t.custom for t in api.registry.all() if t.group == g))
        for g, versions in api.registry.groups()
        for v in versions
    }
    now = now_rfc3339()
    for name, (group, version, builtin) in served.items():
        if store.get(name) is None:
            api.create(rt, None, local_apiservice(group, version, builtin, now), keep_status=True)
    for key in list(store.keys):
        obj = store.objects[key].decode()
        if key not in served and not _d(obj.get("spec")).get("service"):
            api.delete(rt, None, key)


def validate_apiservice(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateAPIService``'s common causes: the name is ``<version>.<group>``, version
    required, positive priorities."""
    meta, spec = _d(obj.get("metadata")), _d(obj.get("spec"))
    errs: list[Cause] = []
    version, group = str(spec.get("version") or ""), str(spec.get("group") or "")
    if not version:
        errs.append(required("spec.version"))
    name = str(meta.get("name") or "")
    if name and name != f"{version}.{group}":
        errs.append(invalid("metadata.name", name, f'must be "{version}.{group}"'))
    for key in ("groupPriorityMinimum", "versionPriority"):
        value = spec.get(key)
        if not isinstance(value, int) or value <= 0:
            limit = 20000 if key == "groupPriorityMinimum" else 1000
            detail = f"must be positive and less than {limit}"
            errs.append(invalid(f"spec.{key}", value or 0, detail))
    return errs
