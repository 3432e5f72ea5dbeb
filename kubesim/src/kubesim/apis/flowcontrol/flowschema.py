"""FlowSchemas: validation (what upstream rejects most often: the priority level's name,
``matchingPrecedence`` 1..10000, the distinguisher and subject kinds), an empty status on
create, ``metadata.generation``, the table. Served as v1beta3 and v1beta2, which do not
differ for this kind."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.flowcontrol.printers import FLOW_SCHEMA_PRINTER
from kubesim.machinery.validation import Cause, invalid, not_supported, required
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["FlowSchemaStrategy"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _validate_flow_schema(spec: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    if not _d(spec.get("priorityLevelConfiguration")).get("name"):
        detail = "must reference a priority level"
        errs.append(required("spec.priorityLevelConfiguration.name", detail))
    precedence = spec.get("matchingPrecedence")
    if isinstance(precedence, int) and not 1 <= precedence <= 10000:
        errs.append(
            invalid("spec.matchingPrecedence", precedence, "must be between 1 and 10000, inclusive")
        )
    method = _d(spec.get("distinguisherMethod")).get("type")
    if "distinguisherMethod" in spec and method not in ("ByUser", "ByNamespace"):
        methods = ("ByUser", "ByNamespace")
        errs.append(not_supported("spec.distinguisherMethod.type", method or "", methods))
    for i, rule in enumerate(map(_d, _l(spec.get("rules")))):
        for j, subject in enumerate(map(_d, _l(rule.get("subjects")))):
            kind = subject.get("kind")
            if kind not in ("Group", "ServiceAccount", "User"):
                path = f"spec.rules[{i}].subjects[{j}].kind"
                errs.append(not_supported(path, kind or "", ("Group", "ServiceAccount", "User")))
    return errs


class FlowSchemaStrategy(Strategy):
    """FlowSchemas (see the module docstring)."""

    uses_generation = True
    table = FLOW_SCHEMA_PRINTER

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        obj["status"] = {}
        return _validate_flow_schema(_d(obj.get("spec")))

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        return _validate_flow_schema(_d(new.get("spec")))
