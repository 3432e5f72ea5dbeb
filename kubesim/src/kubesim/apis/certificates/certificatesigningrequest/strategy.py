"""CertificateSigningRequests (certificates.k8s.io/v1): the registry strategy's rules.

As kube-apiserver v1.28's ``pkg/registry/certificates/certificates/strategy.go`` decides:

* create: ``status`` is ``{}``; ``spec.username``, ``spec.uid``, ``spec.groups`` and
  ``spec.extra`` are the requesting user's, whatever the body says (:func:`requester`:
  the authenticated user of the request; in-process writes are KubeSim's admin);
* an update of the object changes neither ``spec`` nor ``status`` (metadata only);
* ``/status`` changes the status but keeps ``spec`` and the stored ``Approved``/``Denied``
  conditions; ``/approval`` changes the conditions only (spec and ``status.certificate``
  kept), which is what ``kubectl certificate approve|deny`` writes;
* conditions get ``lastUpdateTime`` (now) and ``lastTransitionTime`` (the stored one for the
  same type and status, else now) when unset.

:func:`validate_csr` checks what ``ValidateCertificateSigningRequest*`` rejects most
often. No signer issues certificates: a CSR stays approved without ``status.certificate``
until someone writes one through ``/status``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.machinery.validation import (
    Cause,
    GoRepr,
    invalid,
    is_qualified_name,
    not_supported,
    required,
)

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType

__all__ = [
    "Requester",
    "as_requester",
    "is_csr",
    "prepare_csr_create",
    "prepare_csr_update",
    "requester",
    "validate_csr",
]

_ADMIN_GROUPS: Final = ("system:masters", "system:authenticated")
_EXCLUSIVE: Final = ("Approved", "Denied")
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
_SPEC_ORDER: Final = (
    "request signerName expirationSeconds usages username uid groups extra"
).split()
_CONDITION_ORDER: Final = ("type status reason message lastUpdateTime lastTransitionTime").split()


@dataclass(frozen=True, slots=True)
class Requester:
    """Who sent the request being served: the user name and groups (and uid, if any)."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""


_ADMIN: Final = Requester("admin", _ADMIN_GROUPS)
_REQUESTER: ContextVar[Requester | None] = ContextVar("kubesim_requester", default=None)


@contextmanager
def as_requester(who: Requester) -> Iterator[None]:
    """Serve the requests inside the block as ``who`` (the HTTP layer's authenticated user)."""
    token = _REQUESTER.set(who)
    try:
        yield
    finally:
        _REQUESTER.reset(token)


def requester() -> Requester:
    """The user the current request is served as (KubeSim's admin outside any request)."""
    return _REQUESTER.get() or _ADMIN


def is_csr(rt: ResourceType) -> bool:
    """Whether ``rt`` is CertificateSigningRequests."""
    return rt.group == "certificates.k8s.io" and rt.plural == "certificatesigningrequests"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _ordered(d: Mapping[str, Any], order: list[str]) -> dict[str, Any]:
    out = {k: d[k] for k in order if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def prepare_csr_create(obj: dict[str, Any]) -> None:
    """``PrepareForCreate``: the requester's identity into the spec, an empty status."""
    who = requester()
    spec = _d(obj.get("spec"))
    for key in ("username", "uid", "groups", "extra"):
        spec.pop(key, None)
    spec["username"] = who.name
    if who.uid:
        spec["uid"] = who.uid
    if who.groups:
        spec["groups"] = list(who.groups)
    obj["spec"] = _ordered(spec, _SPEC_ORDER)
    obj["status"] = {}


def _timestamps(new: list[Any], old: list[Any]) -> list[Any]:
    now = now_rfc3339()
    out = []
    for c in new:
        if not isinstance(c, dict):
            out.append(c)
            continue
        c = dict(c)
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            same = (
                o.get("lastTransitionTime")
                for o in map(_d, old)
                if o.get("type") == c.get("type") and o.get("status") == c.get("status")
            )
            c["lastTransitionTime"] = next((t for t in same if t), now)
        out.append(_ordered(c, _CONDITION_ORDER))
    return out


def prepare_csr_update(
    old: Mapping[str, Any], new: dict[str, Any], subresource: str | None
) -> None:
    """``PrepareForUpdate`` of the object (None), ``status`` or ``approval``, in place."""
    new["spec"] = old.get("spec")
    old_status = _d(old.get("status"))
    if subresource is None:
        new["status"] = old.get("status")
        return
    status = dict(_d(new.get("status")))
    conditions = _l(status.get("conditions"))
    old_conditions = _l(old_status.get("conditions"))
    if subresource == "approval":
        status.pop("certificate", None)
        if "certificate" in old_status:
            status["certificate"] = old_status["certificate"]
    else:  # the stored Approved/Denied conditions stay as they are
        kept = [c for c in map(_d, old_conditions) if c.get("type") in _EXCLUSIVE]
        conditions = kept + [c for c in conditions if _d(c).get("type") not in _EXCLUSIVE]
    if conditions:
        status["conditions"] = _timestamps(conditions, old_conditions)
    else:
        status.pop("conditions", None)
    new["status"] = _ordered(status, ["conditions", "certificate"])


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
        if kind in _EXCLUSIVE and c.get("status") != "True":
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
