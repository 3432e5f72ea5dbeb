"""What the apps/v1 workloads (Deployments, StatefulSets, DaemonSets, ReplicaSets) share:
their defaults, their validation, ``metadata.generation``.

:class:`WorkloadStrategy` is configured by each kind's strategy: the spec defaults
(``SetDefaults_Deployment`` & co.), the spec's key order, the status a create starts with,
and the update strategy's key and what a ``RollingUpdate`` of it gets. The template's pod
spec is defaulted as a pod's (without ``enableServiceLinks``); validation is non-negative
replicas, a selector matching the template labels, and the template's pod spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.podspec import default_template, validate_pod_spec
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.validation import Cause, go_string_map, invalid, required
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["WorkloadStrategy", "validate_workload"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def validate_workload(spec: Mapping[str, Any]) -> list[Cause]:
    """apps/v1 workloads: non-negative replicas, a selector matching the template labels."""
    errs: list[Cause] = []
    if isinstance(spec.get("replicas"), int) and spec["replicas"] < 0:
        errs.append(
            invalid("spec.replicas", spec["replicas"], "must be greater than or equal to 0")
        )
    sel = spec.get("selector")
    labels = _d(_d(_d(spec.get("template")).get("metadata")).get("labels"))
    if not isinstance(sel, dict):
        errs.append(required("spec.selector"))
    elif any(labels.get(k) != v for k, v in _d(sel.get("matchLabels")).items()):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", go_string_map(labels), detail))
    return errs + validate_pod_spec(_d(_d(spec.get("template")).get("spec")), "spec.template.spec")


class WorkloadStrategy(Strategy):
    """An apps/v1 workload (see the module docstring); a kind sets the class attributes."""

    uses_generation = True
    #: the spec's defaults (set when missing)
    spec_defaults: Mapping[str, Any] = {}
    #: the spec's keys in Go struct order
    spec_order: tuple[str, ...] = ()
    #: the status a create starts with
    status_on_create: Mapping[str, Any] = {}
    #: the update strategy's key and the ``rollingUpdate`` a RollingUpdate gets (None: none)
    update_strategy: tuple[str, Mapping[str, Any]] | None = None

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + validate_workload(_d(obj.get("spec")))

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        spec = sub(obj, "spec")
        for k, v in self.spec_defaults.items():
            spec.setdefault(k, v)
        if self.update_strategy is not None:
            key, rolling = self.update_strategy
            strategy = sub(spec, key)
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                sub(strategy, "rollingUpdate")
                strategy["rollingUpdate"] = dict(rolling) | strategy["rollingUpdate"]
            order_keys(strategy, ("type", "rollingUpdate"))
        self.default_spec(spec)
        default_template(spec, ordered=False)
        order_keys(spec, self.spec_order)
        if creating:
            obj["status"] = dict(self.status_on_create)
        super().default(rt, obj, creating=creating)

    def default_spec(self, spec: dict[str, Any]) -> None:
        """What the kind defaults in its spec beyond the table (before the template)."""
