"""The HorizontalPodAutoscalers' table, as v1.28's ``printers.go``: Name, Reference
(``Kind/name``), Targets (each metric ``current/target``, ``<unknown>`` before any status,
at most two then ``+ N more...``), MinPods (``<unset>``), MaxPods, Replicas, Age; through
either version (a v1 object is printed from its v2 form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import as_v2
from kubesim.machinery.printing import (
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)

__all__ = ["HPA_PRINTER"]

_HPA = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"


def _hpa_columns() -> list[Column]:
    return [
        name_column(),
        Column("Reference", "string", doc(_HPA + "Spec", "scaleTargetRef")),
        Column("Targets", "string", doc(_HPA + "Spec", "metrics")),
        Column("MinPods", "string", doc(_HPA + "Spec", "minReplicas")),
        Column("MaxPods", "string", doc(_HPA + "Spec", "maxReplicas")),
        Column("Replicas", "string", doc(_HPA + "Status", "currentReplicas")),
        age_column(),
    ]


def _metric(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> str:
    kind = str_of(spec.get("type"))
    key = kind[:1].lower() + kind[1:]
    target = mapping_of(mapping_of(spec.get(key)).get("target"))
    current = mapping_of(mapping_of(mapping_of(status).get(key)).get("current"))
    if kind in ("Resource", "ContainerResource") and target.get("averageValue") is None:
        now = current.get("averageUtilization")
        want = target.get("averageUtilization")
        return (
            f"{'<unknown>' if now is None else f'{now}%'}/"
            f"{'<auto>' if want is None else f'{want}%'}"
        )
    avg = target.get("averageValue") is not None
    field = "averageValue" if avg else "value"
    now = current.get(field)
    text = f"{'<unknown>' if now is None else now}/{target.get(field)}"
    return text + " (avg)" if avg and kind in ("External", "Object") else text


def _targets(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    metrics = [mapping_of(m) for m in list_of(spec.get("metrics"))]
    if not metrics:
        return "<none>"
    current = [mapping_of(m) for m in list_of(status.get("currentMetrics"))]
    shown = [_metric(m, current[i] if i < len(current) else None) for i, m in enumerate(metrics)]
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _hpa_cells(obj: Obj, now: float) -> Cells:
    v2 = as_v2(obj)
    spec, status = spec_of(v2), status_of(v2)
    ref = mapping_of(spec.get("scaleTargetRef"))
    low = spec.get("minReplicas")
    return [
        name_of(obj),
        f"{str_of(ref.get('kind'))}/{str_of(ref.get('name'))}",
        _targets(spec, status),
        "<unset>" if low is None else low,
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        created_age(obj, now),
    ]


HPA_PRINTER = Printer(_hpa_columns, _hpa_cells)
