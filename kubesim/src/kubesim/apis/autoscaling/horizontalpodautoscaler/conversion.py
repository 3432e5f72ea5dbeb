"""HorizontalPodAutoscalers: one storage (autoscaling/v2), served as autoscaling/v2 and v1.

kube-apiserver v1.28 stores HPAs once and serves them through both versions, converting as
``pkg/apis/autoscaling/v1/conversion.go`` does:

* ``spec.targetCPUUtilizationPercentage`` (v1) is the v2 ``Resource`` metric ``cpu`` with a
  ``Utilization`` target, ``status.currentCPUUtilizationPercentage`` its current value;
* what v1 cannot say travels in annotations: the other metrics
  (``autoscaling.alpha.kubernetes.io/metrics``, ``.../current-metrics``, in the v1 metric
  shapes: ``targetAverageUtilization``, ``metricName``, ...), the status conditions
  (``.../conditions``) and ``spec.behavior`` (``.../behavior``); converting to v2 takes
  them out of the annotations again.

:func:`to_storage` and :func:`to_view` convert a whole object; the stored form always has
v2's defaults (``SetDefaults_HorizontalPodAutoscaler``: ``minReplicas`` 1, a ``cpu``
utilization metric of 80 when there is no metric, and, when ``behavior`` is set, its
missing rules and policies filled in), as the real server's storage decoding gives them.
:func:`default_hpa` defaults a request in either version;
:func:`~kubesim.apis.autoscaling.horizontalpodautoscaler.validation.validate_hpa` checks
what ``ValidateHorizontalPodAutoscaler`` rejects most often (on the v2 form). No controller
computes metrics or scales anything.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

import orjson

from kubesim.registry.resource import ResourceType

__all__ = ["as_v2", "default_hpa", "is_hpa_v1", "metric_key", "to_storage", "to_view"]

GROUP: Final = "autoscaling"
_ANN: Final = "autoscaling.alpha.kubernetes.io/"
_METRICS, _CURRENT, _CONDITIONS, _BEHAVIOR = (
    _ANN + k for k in ("metrics", "current-metrics", "conditions", "behavior")
)
_V2_SPEC_ORDER: Final = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")
_V1_SPEC_ORDER: Final = (
    "scaleTargetRef",
    "minReplicas",
    "maxReplicas",
    "targetCPUUtilizationPercentage",
)
_V2_STATUS_ORDER: Final = (
    "observedGeneration lastScaleTime currentReplicas desiredReplicas currentMetrics conditions"
).split()
_V1_STATUS_ORDER: Final = (
    "observedGeneration lastScaleTime currentReplicas desiredReplicas "
    "currentCPUUtilizationPercentage"
).split()
_UP: Final = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_DOWN: Final = {
    "stabilizationWindowSeconds": 300,
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def is_hpa_v1(rt: ResourceType) -> bool:
    """Whether ``rt`` (a type serving HPAs) is autoscaling/v1's (served converted from the
    v2 storage)."""
    return rt.version == "v1"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _ordered(d: Mapping[str, Any], order: tuple[str, ...] | list[str]) -> dict[str, Any]:
    out = {k: d[k] for k in order if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def _compact(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# -- metrics: v2 <-> the v1 annotation shapes ------------------------------------------------


def metric_key(metric_type: str) -> str:
    """The MetricSpec field of a metric type (``Resource`` -> ``resource``)."""
    return metric_type[0].lower() + metric_type[1:]


def _metric_to_v1(m: Mapping[str, Any], status: bool) -> dict[str, Any]:
    kind = str(m.get("type") or "")
    src = _d(m.get(metric_key(kind)))
    val = _d(src.get("current" if status else "target"))
    ident = _d(src.get("metric"))
    pre = "current" if status else "target"
    out: dict[str, Any]
    if kind in ("Resource", "ContainerResource"):
        out = {
            "name": src.get("name"),
            f"{pre}AverageUtilization": val.get("averageUtilization"),
            f"{pre}AverageValue": val.get("averageValue"),
            "container": src.get("container"),
        }
    elif kind == "Pods":
        out = {
            "metricName": ident.get("name"),
            f"{pre}AverageValue": val.get("averageValue"),
            "selector": ident.get("selector"),
        }
    elif kind == "Object":
        out = {
            "target": src.get("describedObject"),
            "metricName": ident.get("name"),
            f"{pre}Value": val.get("value"),
            "selector": ident.get("selector"),
            "averageValue": val.get("averageValue"),
        }
    else:  # External
        out = {
            "metricName": ident.get("name"),
            "metricSelector": ident.get("selector"),
            f"{pre}Value": val.get("value"),
            f"{pre}AverageValue": val.get("averageValue"),
        }
    return {"type": kind, metric_key(kind): _compact(out)}


def _metric_to_v2(m: Mapping[str, Any], status: bool) -> dict[str, Any]:
    kind = str(m.get("type") or "")
    src = _d(m.get(metric_key(kind)))
    pre = "current" if status else "target"
    ident = _compact({"name": src.get("metricName"), "selector": src.get("selector")})
    util, avg = src.get(f"{pre}AverageUtilization"), src.get(f"{pre}AverageValue")
    value = src.get(f"{pre}Value")
    out: dict[str, Any]
    if kind in ("Resource", "ContainerResource"):
        target = {"averageUtilization": util, "averageValue": avg}
        if not status:
            target = {"type": "Utilization" if util is not None else "AverageValue", **target}
        out = {"name": src.get("name"), ("current" if status else "target"): _compact(target)}
        if kind == "ContainerResource":
            out["container"] = src.get("container")
    elif kind == "Pods":
        target = {"type": "AverageValue", "averageValue": avg} if not status else {}
        target = target or {"averageValue": avg}
        out = {"metric": ident, ("current" if status else "target"): _compact(target)}
    elif kind == "Object":
        average = src.get("averageValue")
        target = {"value": value, "averageValue": average}
        if not status:
            target = {"type": "AverageValue" if average is not None else "Value", **target}
        out = {
            "describedObject": src.get("target"),
            "metric": ident,
            ("current" if status else "target"): _compact(target),
        }
    else:
        ident = _compact({"name": src.get("metricName"), "selector": src.get("metricSelector")})
        target = {"value": value, "averageValue": avg}
        if not status:
            target = {"type": "AverageValue" if avg is not None else "Value", **target}
        out = {"metric": ident, ("current" if status else "target"): _compact(target)}
    return {"type": kind, metric_key(kind): _compact(out)}


def _is_cpu_utilization(m: Mapping[str, Any], status: bool) -> bool:
    res = _d(m.get("resource"))
    val = _d(res.get("current" if status else "target"))
    if m.get("type") != "Resource" or res.get("name") != "cpu":
        return False
    return val.get("averageUtilization") is not None and (
        status or val.get("type") == "Utilization"
    )


def _annotation(meta: dict[str, Any], key: str) -> Any:
    anns = _d(meta.get("annotations"))
    raw = anns.pop(key, None)
    if not anns:
        meta.pop("annotations", None)
    if not isinstance(raw, str):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _v2_metrics(
    part: dict[str, Any], cpu_key: str, meta: dict[str, Any], annotation: str, status: bool
) -> list[Any]:
    """The v2 metrics (or current metrics) of a v1 spec (status) part: its cpu field (taken
    out of ``part``), then those of the annotation (taken out of ``meta``)."""
    metrics: list[Any] = []
    cpu = part.pop(cpu_key, None)
    if cpu is not None:
        value: dict[str, Any] = {"averageUtilization": cpu}
        if not status:
            value = {"type": "Utilization", **value}
        resource = {"name": "cpu", ("current" if status else "target"): value}
        metrics.append({"type": "Resource", "resource": resource})
    return metrics + [_metric_to_v2(m, status) for m in map(_d, _l(_annotation(meta, annotation)))]


def _v1_to_v2(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = _d(out.get("metadata"))
    spec, status = _d(out.get("spec")), _d(out.get("status"))
    if metrics := _v2_metrics(spec, "targetCPUUtilizationPercentage", meta, _METRICS, False):
        spec["metrics"] = metrics
    behavior = _annotation(meta, _BEHAVIOR)
    if isinstance(behavior, dict):
        spec["behavior"] = behavior
    if current := _v2_metrics(status, "currentCPUUtilizationPercentage", meta, _CURRENT, True):
        status["currentMetrics"] = current
    conditions = _annotation(meta, _CONDITIONS)
    if isinstance(conditions, list):
        status["conditions"] = conditions
    if "spec" in out:
        out["spec"] = _ordered(spec, _V2_SPEC_ORDER)
    if "status" in out:
        out["status"] = _ordered(status, _V2_STATUS_ORDER)
    return out


def _v2_to_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = _d(out.get("metadata"))
    spec, status = _d(out.get("spec")), _d(out.get("status"))
    anns: dict[str, str] = {}
    others = []
    for m in map(_d, _l(spec.pop("metrics", None))):
        if _is_cpu_utilization(m, False) and "targetCPUUtilizationPercentage" not in spec:
            spec["targetCPUUtilizationPercentage"] = m["resource"]["target"]["averageUtilization"]
        else:
            others.append(_metric_to_v1(m, False))
    if others:
        anns[_METRICS] = orjson.dumps(others).decode()
    if (behavior := spec.pop("behavior", None)) is not None:
        anns[_BEHAVIOR] = orjson.dumps(behavior).decode()
    current = []
    for m in map(_d, _l(status.pop("currentMetrics", None))):
        if _is_cpu_utilization(m, True) and "currentCPUUtilizationPercentage" not in status:
            utilization = m["resource"]["current"]["averageUtilization"]
            status["currentCPUUtilizationPercentage"] = utilization
        else:
            current.append(_metric_to_v1(m, True))
    if current:
        anns[_CURRENT] = orjson.dumps(current).decode()
    if conditions := status.pop("conditions", None):
        anns[_CONDITIONS] = orjson.dumps(conditions).decode()
    if anns:
        meta["annotations"] = _d(meta.get("annotations")) | anns
    if "spec" in out:
        out["spec"] = _ordered(spec, _V1_SPEC_ORDER)
    if "status" in out:
        status.setdefault("currentReplicas", 0)  # not omitempty in v1
        status.setdefault("desiredReplicas", 0)
        out["status"] = _ordered(status, _V1_STATUS_ORDER)
    return out


# -- defaults --------------------------------------------------------------------------------


def _rules(given: object, defaults: Mapping[str, Any]) -> dict[str, Any]:
    rules = dict(given) if isinstance(given, dict) else {}
    for k, v in defaults.items():
        if rules.get(k) is None:
            rules[k] = copy.deepcopy(v)
    return _ordered(rules, ("stabilizationWindowSeconds", "selectPolicy", "policies"))


def _default_v2(spec: dict[str, Any]) -> None:
    if not _l(spec.get("metrics")):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    if isinstance(spec.get("behavior"), dict):
        behavior = spec["behavior"]
        spec["behavior"] = {
            "scaleUp": _rules(behavior.get("scaleUp"), _UP),
            "scaleDown": _rules(behavior.get("scaleDown"), _DOWN),
        }


def default_hpa(rt: ResourceType, obj: dict[str, Any], creating: bool) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` of ``rt``'s version, in place (v1:
    ``minReplicas`` 1; v2 also the cpu metric and the behavior rules), and on create the
    empty status each version writes (v1 ``currentReplicas``/``desiredReplicas`` 0, v2
    ``currentMetrics: null`` and ``desiredReplicas`` 0)."""
    spec = _d(obj.get("spec"))
    obj["spec"] = spec
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not is_hpa_v1(rt):
        _default_v2(spec)
    obj["spec"] = _ordered(spec, _V1_SPEC_ORDER if is_hpa_v1(rt) else _V2_SPEC_ORDER)
    if creating:
        obj["status"] = (
            {"currentReplicas": 0, "desiredReplicas": 0}
            if is_hpa_v1(rt)
            else {"currentMetrics": None, "desiredReplicas": 0}
        )


# -- conversion ------------------------------------------------------------------------------


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (in ``rt``'s version) as stored: the v2 form with v2's defaults."""
    out = _v1_to_v2(obj) if is_hpa_v1(rt) else obj
    if isinstance(out.get("spec"), dict):
        _default_v2(out["spec"])
        out["spec"] = _ordered(out["spec"], _V2_SPEC_ORDER)
    if "apiVersion" in out:
        out["apiVersion"] = f"{GROUP}/v2"
    return out


def as_v2(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An HPA read through either version in its v2 form (a v1 object has no
    ``spec.metrics``: the stored form always has one)."""
    if "metrics" in _d(obj.get("spec")):
        return dict(obj)
    return _v1_to_v2(obj)


def to_view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored HPA as ``rt`` serves it (the same dict for v2)."""
    if not is_hpa_v1(rt):
        return obj
    out = _v2_to_v1(obj)
    if "apiVersion" in out:
        out["apiVersion"] = rt.api_version
    return out
