"""The aggregator's local APIServices: one per served group/version, as kube-apiserver has.

kube-apiserver v1.28 lists an APIService for every group/version it serves itself
(``v1.``, ``v1.apps``, ``v2.autoscaling``, ...): no ``spec.service`` (served locally), the
group's ``groupPriorityMinimum`` and the version's ``versionPriority`` (the upstream
priorities table; custom resources' 1000 and 100), the label
``kube-aggregator.kubernetes.io/automanaged`` (``onstart`` for built-in groups, ``true``
for CRD groups) and the condition ``Available`` True, reason ``Local``.
:func:`sync_apiservices` makes the stored APIServices match what the registry serves: it
creates the missing local ones (at start, and whenever a CRD is established) and deletes
the local ones whose group/version is no longer served (when a CRD goes); APIServices that
name a service are left alone. KubeSim calls it at start and on every change of the served
types (``Api.on_served_changed``).
"""

from __future__ import annotations

from typing import Any, Final

from kubesim.apis.apiregistration.apiservice import GROUP, available_condition
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.registry.store import Api

__all__ = ["local_apiservice", "sync_apiservices"]

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


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


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
    return {
        "metadata": meta,
        "spec": spec,
        "status": {"conditions": [available_condition(True, now)]},
    }


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
