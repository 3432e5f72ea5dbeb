"""CertificateSigningRequests (certificates.k8s.io/v1): the registry strategy's rules.

As kube-apiserver v1.28's ``pkg/registry/certificates/certificates/strategy.go`` decides:

* create: ``status`` is ``{}``; ``spec.username``, ``spec.uid``, ``spec.groups`` and
  ``spec.extra`` are the requesting user's, whatever the body says
  (:func:`~kubesim.registry.context.requester`: the authenticated user of the request;
  in-process writes are KubeSim's admin);
* an update of the object changes neither ``spec`` nor ``status`` (metadata only);
* ``/status`` changes the status but keeps ``spec`` and the stored ``Approved``/``Denied``
  conditions; ``/approval`` changes the conditions only (spec and ``status.certificate``
  kept), which is what ``kubectl certificate approve|deny`` writes;
* conditions get ``lastUpdateTime`` (now) and ``lastTransitionTime`` (the stored one for the
  same type and status, else now) when unset.

Each write is then validated as ``ValidateCertificateSigningRequest*`` does (the
``validation`` module of this package); the table is its ``printer``. No signer issues
certificates: a CSR stays approved without ``status.certificate`` until someone writes one
through ``/status``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubesim.apis.certificates.certificatesigningrequest.printer import CSR_PRINTER
from kubesim.apis.certificates.certificatesigningrequest.validation import (
    EXCLUSIVE_CONDITIONS,
    validate_csr,
)
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.machinery.documents import ordered
from kubesim.machinery.validation import Cause
from kubesim.registry.context import requester
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["CertificateSigningRequestStrategy", "prepare_csr_create", "prepare_csr_update"]

_SPEC_ORDER: Final = (
    "request signerName expirationSeconds usages username uid groups extra"
).split()
_CONDITION_ORDER: Final = ("type status reason message lastUpdateTime lastTransitionTime").split()


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


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
    obj["spec"] = ordered(spec, _SPEC_ORDER)
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
        out.append(ordered(c, _CONDITION_ORDER))
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
        kept = [c for c in map(_d, old_conditions) if c.get("type") in EXCLUSIVE_CONDITIONS]
        conditions = kept + [c for c in conditions if _d(c).get("type") not in EXCLUSIVE_CONDITIONS]
    if conditions:
        status["conditions"] = _timestamps(conditions, old_conditions)
    else:
        status.pop("conditions", None)
    new["status"] = ordered(status, ["conditions", "certificate"])


class CertificateSigningRequestStrategy(Strategy):
    """CertificateSigningRequests (see the module docstring)."""

    table = CSR_PRINTER

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        prepare_csr_create(obj)
        return validate_csr(obj)

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        prepare_csr_update(old, new, None)
        return validate_csr(new)

    def prepare_for_status_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        prepare_csr_update(old, new, subresource)
        return validate_csr(new)
