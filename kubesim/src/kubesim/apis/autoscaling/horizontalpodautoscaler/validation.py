"""Validation of HorizontalPodAutoscalers (``ValidateHorizontalPodAutoscaler``, v1.28),
on the v2 form whichever version a request came through
(:mod:`kubesim.apis.autoscaling.horizontalpodautoscaler.conversion`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import metric_key, to_storage
from kubesim.machinery.validation import Cause, invalid, not_supported, required
from kubesim.registry.resource import ResourceType

__all__ = ["validate_hpa"]

_METRIC_TYPES: Final = ("Object", "Pods", "Resource", "ContainerResource", "External")
_TARGET_TYPES: Final = ("Utilization", "Value", "AverageValue")


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def validate_hpa(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    """The common ``ValidateHorizontalPodAutoscaler`` causes, on the v2 form of ``obj``:
    ``scaleTargetRef`` kind and name required, ``minReplicas`` >= 1 (0 is only allowed
    with the HPAScaleToZero gate, off in v1.28), ``maxReplicas`` >= 1 and >= ``minReplicas``,
    each metric's type known and its source set, target types known, utilization > 0."""
    v2 = to_storage(rt, copy.deepcopy(dict(obj)))
    spec = _d(v2.get("spec"))
    errs: list[Cause] = []
    ref = _d(spec.get("scaleTargetRef"))
    for key in ("kind", "name"):
        if not ref.get(key):
            errs.append(required(f"spec.scaleTargetRef.{key}"))
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and low < 1:
        errs.append(invalid("spec.minReplicas", low, "must be greater than or equal to 1"))
    if not isinstance(high, int) or high < 1:
        errs.append(invalid("spec.maxReplicas", high or 0, "must be greater than 0"))
    elif isinstance(low, int) and high < low:
        errs.append(
            invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`")
        )
    for i, m in enumerate(map(_d, _l(spec.get("metrics")))):
        path, kind = f"spec.metrics[{i}]", m.get("type")
        if kind not in _METRIC_TYPES:
            errs.append(not_supported(f"{path}.type", kind or "", _METRIC_TYPES))
            continue
        src = m.get(metric_key(str(kind)))
        if not isinstance(src, dict):
            errs.append(required(f"{path}.{metric_key(str(kind))}", "must populate information"))
            continue
        target = _d(src.get("target"))
        tpath = f"{path}.{metric_key(str(kind))}.target"
        if target.get("type") not in _TARGET_TYPES:
            errs.append(required(f"{tpath}.type", "must specify a metric target type"))
        util = target.get("averageUtilization")
        if isinstance(util, int) and util < 1:
            errs.append(invalid(f"{tpath}.averageUtilization", util, "must be greater than 0"))
    return errs
