"""APIServices: their strategy.

* names are ``<version>.<group>`` path segments (``v1.`` for core);
* on create an APIService gets the status the aggregator's availability controller writes,
  if it has none: Available, reason ``Local`` for a local one (no ``spec.service``),
  ``ServiceNotFound`` for one that names a service (no aggregated server is ever there);
* validation (``ValidateAPIService``'s common causes): the name is ``<version>.<group>``,
  version required, positive priorities;
* the table (Service: ``Local`` or ``namespace/name``, Available, Age).

The aggregator's local APIServices, one per served group/version, are
:mod:`kubesim.controllers.apiservices`'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.machinery.printing import (
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)
from kubesim.machinery.validation import Cause, NameRule, invalid, required
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["GROUP", "APIServiceStrategy", "available_condition"]

#: The API group of APIServices.
GROUP: Final = "apiregistration.k8s.io"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def available_condition(available: bool, now: str) -> dict[str, Any]:
    """The ``Available`` condition the availability controller writes at ``now``: True,
    ``Local`` for a local APIService; False, ``ServiceNotFound`` for one that names a
    service."""
    if available:
        reason, message = "Local", "Local APIServices are always available"
    else:
        reason, message = "ServiceNotFound", 'service/<name> in "<namespace>" is not present'
    return {
        "type": "Available",
        "status": "True" if available else "False",
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def default_apiservice(obj: dict[str, Any]) -> None:
    """On create: an APIService's status as the aggregator's availability controller
    writes it (Available; ServiceNotFound for one that names a service), if not given."""
    service = _d(_d(obj.get("spec")).get("service"))
    status = _d(obj.get("status"))
    if not status.get("conditions"):
        available = not service
        cond = available_condition(available, now_rfc3339())
        if not available:
            ns, name = service.get("namespace", ""), service.get("name", "")
            cond["message"] = f'service/{name} in "{ns}" is not present'
        obj["status"] = {"conditions": [cond]}


def validate_apiservice(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateAPIService``'s common causes: the name is ``<version>.<group>``, version
    required, positive priorities."""
    meta, spec = _d(obj.get("metadata")), _d(obj.get("spec"))
    errs: list[Cause] = []
    version, group = str(spec.get("version") or ""), str(spec.get("group") or "")
    if not version:
        errs.append(required("spec.version"))
    name = str(meta.get("name") or "")
    if name and name != f"{version}.{group}":
        errs.append(invalid("metadata.name", name, f'must be "{version}.{group}"'))
    for key in ("groupPriorityMinimum", "versionPriority"):
        value = spec.get(key)
        if not isinstance(value, int) or value <= 0:
            limit = 20000 if key == "groupPriorityMinimum" else 1000
            detail = f"must be positive and less than {limit}"
            errs.append(invalid(f"spec.{key}", value or 0, detail))
    return errs


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


class APIServiceStrategy(Strategy):
    """APIServices (see the module docstring)."""

    name_rule: NameRule = "path-segment"  # ``<version>.<group>``: "v1." for core
    table = Printer(_apiservice_columns, _apiservice_cells)

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        default_apiservice(obj)
        return validate_apiservice(obj)

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        return validate_apiservice(new)
