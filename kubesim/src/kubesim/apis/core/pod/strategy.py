"""The Pod strategy: what kube-apiserver v1.28's pod registry does besides the generic store.

* defaults (``SetDefaults_Pod`` and the create strategy): the pod spec's
  (:func:`~kubesim.apis.core.podspec.default_pod_spec`), requests defaulting to limits,
  the two NoExecute tolerations of ``DefaultTolerationSeconds``, priority 0 and its
  preemption policy, and on create ``status {phase: Pending, qosClass}`` as recorded; a
  status write gets its conditions' probe and transition times (``null`` when unset);
* validation: the pod spec on create, and on update ``ValidatePodUpdate``
  (:mod:`kubesim.apis.core.pod.validation`) besides the metadata;
* graceful deletion (``CheckGracefulDelete``): a DELETE gives a pod bound to a node and not
  finished the option's grace period, else its ``terminationGracePeriodSeconds``;
* the table printer (:mod:`kubesim.apis.core.pod.printer`), the selectable fields
  (``spec.nodeName``, ``status.phase``, ...), the zero value the field manager and
  BOOKMARKs use. The ``binding`` subresource is :mod:`kubesim.apis.core.pod.binding`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.pod.printer import POD_PRINTER
from kubesim.apis.core.pod.validation import validate_pod_update
from kubesim.apis.core.podspec import (
    POD_SPEC_ORDER,
    default_pod_spec,
    qos_class,
    validate_pod_spec,
)
from kubesim.fieldmanager.fieldpath import Path
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.fields import bool_field, field_label_not_supported, str_field
from kubesim.machinery.validation import Cause, validate_object_meta
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["PodStrategy"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _default_pod_conditions(status: dict[str, Any]) -> None:
    """A PodCondition's probe and transition times are non-pointer metav1.Time fields:
    unset, they are written as ``null`` (06: a status patch with ``{type, status}``)."""
    for cond in map(_d, _l(status.get("conditions"))):
        cond.setdefault("lastProbeTime", None)
        cond.setdefault("lastTransitionTime", None)
        order_keys(
            cond, ("type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")
        )


def _default_pod(obj: dict[str, Any], creating: bool) -> None:
    spec = sub(obj, "spec")
    default_pod_spec(spec, pod=True)
    for res in (
        _d(_d(c).get("resources"))
        for c in _l(spec.get("containers")) + _l(spec.get("initContainers"))
    ):
        if isinstance(res.get("limits"), dict):  # SetDefaults_Pod: requests default to limits
            res["requests"] = res["limits"] | _d(res.get("requests"))
            order_keys(res, ("limits", "requests", "claims"))
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
    order_keys(spec, POD_SPEC_ORDER)
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


class PodStrategy(Strategy):
    """Pods (see the module docstring)."""

    returns_deleted_object = True
    graceful_deletion = True
    zero_spec: Mapping[str, Any] = {"containers": None}
    untracked_on_create: tuple[Path, ...] = (
        ("f:spec", "f:tolerations"),
        ("f:spec", "f:priority"),
        ("f:spec", "f:preemptionPolicy"),
    )
    table = POD_PRINTER

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + validate_pod_spec(_d(obj.get("spec")))

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        meta = _d(new.get("metadata"))
        return (
            super().validate_update(rt, old, new)
            + validate_object_meta(meta, rule=self.name_rule, namespaced=rt.namespaced)
            + validate_pod_spec(_d(new.get("spec")))
            + validate_pod_update(old, new)
        )

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_pod(obj, creating)
        super().default(rt, obj, creating=creating)

    def default_status(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        _default_pod_conditions(_d(obj.get("status")))

    def bookmark_fields(self) -> dict[str, Any]:
        return {"spec": {"containers": None}, "status": {}}

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        ips = _d(obj.get("status")).get("podIPs")
        return {
            "spec.nodeName": str_field(obj, "spec", "nodeName"),
            "spec.restartPolicy": str_field(obj, "spec", "restartPolicy"),
            "spec.schedulerName": str_field(obj, "spec", "schedulerName"),
            "spec.serviceAccountName": str_field(obj, "spec", "serviceAccountName"),
            "spec.hostNetwork": bool_field(obj, "spec", "hostNetwork"),
            "status.phase": str_field(obj, "status", "phase"),
            "status.podIP": str_field(ips[0] if isinstance(ips, list) and ips else None, "ip"),
            # accepted by the v1 conversion func but missing from the registry's field set:
            # on the real server it always reads as "".
            "status.podIPs": "",
            "status.nominatedNodeName": str_field(obj, "status", "nominatedNodeName"),
        }

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

    def grace_period(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """``podStrategy.CheckGracefulDelete``: the grace period of a first pod DELETE."""
        spec = _d(obj.get("spec"))
        period = requested
        if period is None:
            default = spec.get("terminationGracePeriodSeconds")
            period = default if isinstance(default, int) else 0
        if not spec.get("nodeName") or _d(obj.get("status")).get("phase") in (
            "Failed",
            "Succeeded",
        ):
            return 0
        return 1 if period < 0 else period
