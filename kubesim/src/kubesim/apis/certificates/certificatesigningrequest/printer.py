"""The CertificateSigningRequests' table, as v1.28's ``printers.go``: Name, Age, SignerName,
Requestor, RequestedDuration, Condition (``Pending``/``Approved``/``Denied``, ``,Failed``,
``,Issued``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

__all__ = ["CSR_PRINTER"]

_CSR = "io.k8s.api.certificates.v1.CertificateSigningRequest"


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


CSR_PRINTER = Printer(_csr_columns, _csr_cells)
