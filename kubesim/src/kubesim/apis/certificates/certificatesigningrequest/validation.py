"""CertificateSigningRequest validation: what ``ValidateCertificateSigningRequest*``
rejects most often (v1.28).

:func:`validate_csr`: ``spec.request`` a PEM ``CERTIFICATE REQUEST``, ``spec.signerName`` a
qualified name with a domain, ``spec.usages`` given and known (:data:`KEY_USAGES`),
``expirationSeconds`` >= 600; the conditions: a type, ``Approved``/``Denied`` only ``True``
and not both, no duplicates; ``status.certificate`` PEM certificates (checking PEM needs
``cryptography``, the ``https`` extra).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from kubesim.machinery.validation import (
    Cause,
    GoRepr,
    invalid,
    is_qualified_name,
    not_supported,
    required,
)

__all__ = ["EXCLUSIVE_CONDITIONS", "KEY_USAGES", "validate_csr"]

#: The conditions a CSR cannot have both of, and that only a True status may have.
EXCLUSIVE_CONDITIONS: Final = ("Approved", "Denied")
_CONDITION_TYPES: Final = ("Approved", "Denied", "Failed")
#: The key usages in ``KeyUsage``'s declaration order (multi-word names kept whole).
KEY_USAGES: Final = (
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
)


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _pem_errors(field: str, data: object, block_type: str) -> list[Cause]:
    """``ParseCSR``/certificate decoding of a base64 ``[]byte`` field."""
    try:
        raw = base64.b64decode(str(data), validate=True) if data else b""
    except (binascii.Error, ValueError):
        return []  # the decoder already rejected it
    from cryptography import x509

    value = GoRepr("[]byte{...}")
    if f"-----BEGIN {block_type}-----".encode() not in raw:
        return [invalid(field, value, f"PEM block type must be {block_type}")]
    try:
        if block_type == "CERTIFICATE REQUEST":
            x509.load_pem_x509_csr(raw)
        else:
            x509.load_pem_x509_certificates(raw)
    except ValueError as exc:
        return [invalid(field, value, f"x509: {exc}")]
    return []


def validate_csr(obj: Mapping[str, Any]) -> list[Cause]:
    """``spec.request`` a PEM ``CERTIFICATE REQUEST``, ``spec.signerName`` a qualified name
    with a domain, ``spec.usages`` given and known, ``expirationSeconds`` >= 600; the
    conditions: a type, ``Approved``/``Denied`` only ``True`` and not both, no duplicates;
    ``status.certificate`` PEM certificates."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    errs: list[Cause] = []
    if not spec.get("request"):
        errs.append(required("spec.request"))
    else:
        errs += _pem_errors("spec.request", spec["request"], "CERTIFICATE REQUEST")
    signer = str(spec.get("signerName") or "")
    if not signer:
        errs.append(required("spec.signerName"))
    elif "/" not in signer or "." not in signer.split("/", 1)[0]:
        detail = "must be a fully qualified domain and path of the form 'example.com/signer-name'"
        errs.append(invalid("spec.signerName", signer, detail))
    elif msgs := is_qualified_name(signer.split("/", 1)[1]):
        errs.append(invalid("spec.signerName", signer, ",".join(msgs)))
    usages = _l(spec.get("usages"))
    if not usages:
        errs.append(required("spec.usages"))
    for i, usage in enumerate(usages):
        if usage not in KEY_USAGES:
            errs.append(not_supported(f"spec.usages[{i}]", usage, KEY_USAGES))
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < 600:
        detail = "may not specify a duration less than 600 seconds (10 minutes)"
        errs.append(invalid("spec.expirationSeconds", seconds, detail))
    seen: set[str] = set()
    conditions = [_d(c) for c in _l(status.get("conditions"))]
    for i, c in enumerate(conditions):
        path, kind = f"status.conditions[{i}]", str(c.get("type") or "")
        if not kind:
            errs.append(required(f"{path}.type"))
        if kind in EXCLUSIVE_CONDITIONS and c.get("status") != "True":
            errs.append(not_supported(f"{path}.status", c.get("status") or "", ("True",)))
        elif c.get("status") not in ("True", "False", "Unknown"):
            errs.append(
                not_supported(f"{path}.status", c.get("status") or "", ("False", "True", "Unknown"))
            )
        if kind in _CONDITION_TYPES and kind in seen:
            errs.append(Cause("FieldValueDuplicate", f'Duplicate value: "{kind}"', f"{path}.type"))
        seen.add(kind)
    if {"Approved", "Denied"} <= seen:
        errs.append(
            invalid(
                "status.conditions",
                GoRepr("[]certificates.CertificateSigningRequestCondition{...}"),
                "Approved and Denied conditions are mutually exclusive",
            )
        )
    if status.get("certificate"):
        errs += _pem_errors("status.certificate", status["certificate"], "CERTIFICATE")
    return errs
