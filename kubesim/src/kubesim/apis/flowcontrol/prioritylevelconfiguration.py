"""PriorityLevelConfigurations: stored as v1beta3, served as v1beta3 and v1beta2.

The two versions differ in one field, a Limited priority level's
``nominalConcurrencyShares`` (v1beta3) that v1beta2 calls ``assuredConcurrencyShares`` (and
its table's column with it). Validation is what upstream rejects most often: the type and
its ``limited``/``exempt`` part, the limit response type and queuing; a create starts with
an empty status; the server keeps ``metadata.generation``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.flowcontrol.bootstrap import GROUP
from kubesim.apis.flowcontrol.printers import priority_level_printer
from kubesim.machinery.printing import Printer
from kubesim.machinery.validation import Cause, invalid, not_supported, required
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["PriorityLevelConfigurationStrategy"]

_STORED = "nominalConcurrencyShares"
_V1BETA2 = "assuredConcurrencyShares"
_PRINTERS = {
    "v1beta3": priority_level_printer("NominalConcurrencyShares"),
    "v1beta2": priority_level_printer("AssuredConcurrencyShares"),
}


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _v1beta2(rt: ResourceType) -> bool:
    return rt.version == "v1beta2"


def _renamed_shares(obj: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    limited = _d(_d(obj.get("spec")).get("limited"))
    if old not in limited:
        return obj
    out = dict(obj)
    spec = dict(_d(out["spec"]))
    spec["limited"] = {new if k == old else k: v for k, v in limited.items()}
    out["spec"] = spec
    return out


def _converted(
    rt: ResourceType, obj: dict[str, Any], old: str, new: str, api_version: str
) -> dict[str, Any]:
    if not _v1beta2(rt):
        return obj
    out = _renamed_shares(obj, old, new)
    if "apiVersion" in out:
        out["apiVersion"] = api_version
    return out


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A priority level (in ``rt``'s form) in the stored (v1beta3) form."""
    return _converted(rt, obj, _V1BETA2, _STORED, f"{GROUP}/v1beta3")


def to_view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored priority level as ``rt`` serves it (v1beta3: the same dict)."""
    return _converted(rt, obj, _STORED, _V1BETA2, rt.api_version)


def _validate_priority_level(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    kind = spec.get("type")
    if kind not in ("Exempt", "Limited"):
        return [not_supported("spec.type", kind or "", ("Exempt", "Limited"))]
    if kind == "Exempt":
        if name != "exempt":
            return [invalid("spec.type", kind, "type must be 'Limited' if name is not 'exempt'")]
        return []
    limited = spec.get("limited")
    if not isinstance(limited, dict):
        return [required("spec.limited", "must not be empty when type is Limited")]
    errs: list[Cause] = []
    response = _d(limited.get("limitResponse"))
    rtype = response.get("type")
    if rtype not in ("Queue", "Reject"):
        path = "spec.limited.limitResponse"
        errs.append(not_supported(f"{path}.type", rtype or "", ("Queue", "Reject")))
    elif rtype == "Queue" and not isinstance(response.get("queuing"), dict):
        detail = "must not be empty if type is Queue"
        errs.append(required("spec.limited.limitResponse.queuing", detail))
    return errs


def _validate(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    spec = _d(to_storage(rt, dict(obj)).get("spec"))
    return _validate_priority_level(str(_d(obj.get("metadata")).get("name") or ""), spec)


class PriorityLevelConfigurationStrategy(Strategy):
    """PriorityLevelConfigurations, through either version (see the module docstring)."""

    uses_generation = True

    def converts(self, rt: ResourceType) -> bool:
        return _v1beta2(rt)

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_storage(rt, obj)

    def to_view(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_view(rt, obj)

    def printer(self, rt: ResourceType) -> Printer | None:
        return _PRINTERS.get(rt.version)

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        obj["status"] = {}
        return _validate(rt, obj)

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        return _validate(rt, new)
