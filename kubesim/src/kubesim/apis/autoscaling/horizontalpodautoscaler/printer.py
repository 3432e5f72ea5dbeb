"""The table printers of autoscaling, certificates.k8s.io, flowcontrol.apiserver.k8s.io and
apiregistration.k8s.io, as v1.28's ``printers.go`` (and the aggregator's) define them.

* HorizontalPodAutoscalers: Name, Reference (``Kind/name``), Targets (each metric
  ``current/target``, ``<unknown>`` before any status, at most two then ``+ N more...``),
  MinPods (``<unset>``), MaxPods, Replicas, Age; through either version (a v1 object is
  printed from its v2 form).
* CertificateSigningRequests: Name, Age, SignerName, Requestor, RequestedDuration,
  Condition (``Pending``/``Approved``/``Denied``, ``,Failed``, ``,Issued``).
* FlowSchemas: Name, PriorityLevel, MatchingPrecedence, DistinguisherMethod, Age,
  MissingPL; PriorityLevelConfigurations: Name, Type, NominalConcurrencyShares (v1beta2:
  AssuredConcurrencyShares), Queues, HandSize, QueueLengthLimit, Age.
* APIServices: Name, Service (``Local`` or ``namespace/name``), Available, Age.

Column descriptions are the served versions' field documentation (upstream quotes older
versions' in places; the text may differ slightly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import as_v2
from kubesim.encoding.gotime import human_duration
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

__all__ = ["GROUP_PRINTERS"]

_HPA = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"
_CSR = "io.k8s.api.certificates.v1.CertificateSigningRequest"
_FC = "io.k8s.api.flowcontrol.v1beta3."


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


def _csr_columns() -> list[Column]:
    return [
        name_column(),
        age_column(),
        Column("SignerName", "string", doc(_CSR + "Spec", "signerName")),
        Column("Requestor", "string", doc(_CSR + "Spec", "request")),
        Column("RequestedDuration", "string", doc(_CSR + "Spec", "expirationSeconds")),
        Column("Condition", "string", doc(_CSR + "Status", "conditions")),
    ]


def _csr_condition(status: Mapping[str, Any]) -> str:
    kinds = {str_of(mapping_of(c).get("type")) for c in list_of(status.get("conditions"))}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    return text + (",Issued" if status.get("certificate") else "")


def _csr_cells(obj: Obj, now: float) -> Cells:
    spec = spec_of(obj)
    seconds = spec.get("expirationSeconds")
    return [
        name_of(obj),
        created_age(obj, now),
        str_of(spec.get("signerName")) or "<none>",
        str_of(spec.get("username")),
        "<none>" if seconds is None else human_duration(float(seconds)),
        _csr_condition(status_of(obj)),
    ]


def _fs_columns() -> list[Column]:
    return [
        name_column(),
        Column("PriorityLevel", "string", doc(_FC + "PriorityLevelConfigurationReference", "name")),
        Column("MatchingPrecedence", "string", doc(_FC + "FlowSchemaSpec", "matchingPrecedence")),
        Column("DistinguisherMethod", "string", doc(_FC + "FlowSchemaSpec", "distinguisherMethod")),
        age_column(),
        Column(
            "MissingPL",
            "string",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ]


def _fs_cells(obj: Obj, now: float) -> Cells:
    spec = spec_of(obj)
    method = mapping_of(spec.get("distinguisherMethod")).get("type")
    dangling = next(
        (
            mapping_of(c).get("status")
            for c in list_of(status_of(obj).get("conditions"))
            if mapping_of(c).get("type") == "Dangling"
        ),
        None,
    )
    return [
        name_of(obj),
        str_of(mapping_of(spec.get("priorityLevelConfiguration")).get("name")),
        spec.get("matchingPrecedence", 0),
        str_of(method) or "*",
        created_age(obj, now),
        dangling if dangling in ("True", "False") else "?",
    ]


def _plc_printer(shares: str) -> Printer:
    def columns() -> list[Column]:
        queuing = _FC + "QueuingConfiguration"
        return [
            name_column(),
            Column("Type", "string", doc(_FC + "PriorityLevelConfigurationSpec", "type")),
            Column(
                shares,
                "string",
                doc(_FC + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"),
            ),
            Column("Queues", "string", doc(queuing, "queues")),
            Column("HandSize", "string", doc(queuing, "handSize")),
            Column("QueueLengthLimit", "string", doc(queuing, "queueLengthLimit")),
            age_column(),
        ]

    def cells(obj: Obj, now: float) -> Cells:
        spec = spec_of(obj)
        limited = mapping_of(spec.get("limited"))
        queuing = mapping_of(mapping_of(limited.get("limitResponse")).get("queuing"))
        key = shares[0].lower() + shares[1:]
        share = limited.get(key, 0) if spec.get("type") == "Limited" else "<none>"
        queued = [queuing.get(k, 0) for k in ("queues", "handSize", "queueLengthLimit")]
        return [
            name_of(obj),
            str_of(spec.get("type")),
            share,
            *(queued if queuing else ["<none>"] * 3),
            created_age(obj, now),
        ]

    return Printer(columns, cells)


def _apiservice_columns() -> list[Column]:
    return [
        name_column(),
        Column("Service", "string", "The reference to the service that hosts this API endpoint."),
        Column("Available", "string", "Whether this service is available."),
        age_column(),
    ]


def _apiservice_cells(obj: Obj, now: float) -> Cells:
    service = mapping_of(spec_of(obj).get("service"))
    where = f"{str_of(service.get('namespace'))}/{str_of(service.get('name'))}"
    available = next(
        (
            mapping_of(c)
            for c in list_of(status_of(obj).get("conditions"))
            if mapping_of(c).get("type") == "Available"
        ),
        {},
    )
    state = str_of(available.get("status")) or "Unknown"
    if state != "True" and available.get("reason"):
        state = f"{state} ({available['reason']})"
    return [name_of(obj), where if service else "Local", state, created_age(obj, now)]


#: (group, plural, version or "" for every version) -> printer
GROUP_PRINTERS: dict[tuple[str, str, str], Printer] = {
    ("autoscaling", "horizontalpodautoscalers", ""): Printer(_hpa_columns, _hpa_cells),
    ("certificates.k8s.io", "certificatesigningrequests", ""): Printer(_csr_columns, _csr_cells),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", ""): Printer(_fs_columns, _fs_cells),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "v1beta3"): _plc_printer(
        "NominalConcurrencyShares"
    ),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "v1beta2"): _plc_printer(
        "AssuredConcurrencyShares"
    ),
    ("apiregistration.k8s.io", "apiservices", ""): Printer(_apiservice_columns, _apiservice_cells),
}
