"""Events: one strategy for both APIs serving them (core/v1 and events.k8s.io/v1).

kube-apiserver v1.28 stores Events once, as core Events, and serves them through both APIs
(26a): :mod:`kubesim.apis.core.event.conversion` maps the forms and the field selectors,
:mod:`kubesim.apis.core.event.validation` has the Event rules (which come before ObjectMeta's
and replace them when they find anything). Names are path segments (the Event strategy
checks none; events.k8s.io/v1 asks for a subdomain). The table is ``kubectl get events``'
(Last Seen, Type, Reason, Object, Message, ...), the same through both APIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.event.conversion import (
    V1_TO_CORE,
    is_events_v1,
    storage_selector,
    to_storage,
    to_view,
)
from kubesim.apis.core.event.validation import validate_event_create, validate_event_update
from kubesim.encoding.gotime import age
from kubesim.machinery.fields import FieldSelector, field_label_not_supported, str_field
from kubesim.machinery.printing import (
    CORE,
    Cells,
    Column,
    Obj,
    Printer,
    doc,
    int_of,
    mapping_of,
    name_of,
    str_of,
)
from kubesim.machinery.validation import Cause, NameRule
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["EventStrategy"]


def _event_columns() -> list[Column]:
    ev = CORE + "Event"
    return [
        Column("Last Seen", "string", doc(ev, "lastTimestamp")),
        Column("Type", "string", doc(ev, "type")),
        Column("Reason", "string", doc(ev, "reason")),
        Column("Object", "string", doc(ev, "involvedObject")),
        Column("Subobject", "string", doc(CORE + "ObjectReference", "fieldPath"), 1),
        Column("Source", "string", doc(ev, "source"), 1),
        Column("Message", "string", doc(ev, "message")),
        Column("First Seen", "string", doc(ev, "firstTimestamp"), 1),
        Column("Count", "string", doc(ev, "count"), 1),
        Column("Name", "string", doc("ObjectMeta", "name"), 1, "name"),
    ]


def _event_cells(obj: Obj, now: float) -> Cells:
    if "regarding" in obj or "note" in obj:
        obj = {V1_TO_CORE.get(k, k): v for k, v in obj.items()}  # one storage, printed alike
    first = str_of(obj.get("firstTimestamp"))
    first_seen = age(first or str_of(obj.get("eventTime")), now)
    last = str_of(obj.get("lastTimestamp"))
    last_seen = age(last, now) if last else first_seen
    count = int_of(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last_seen = age(str_of(series.get("lastObservedTime")), now)
        count = int_of(series.get("count"))
    elif not count:
        count = 1
    ref = mapping_of(obj.get("involvedObject"))
    kind = str_of(ref.get("kind")).lower()
    target = f"{kind}/{str_of(ref.get('name'))}" if ref.get("name") else kind
    source = mapping_of(obj.get("source"))
    component = str_of(source.get("component")) or str_of(obj.get("reportingComponent"))
    host = str_of(source.get("host")) or str_of(obj.get("reportingInstance"))
    return [
        last_seen,
        str_of(obj.get("type")),
        str_of(obj.get("reason")),
        target,
        str_of(ref.get("fieldPath")),
        f"{component}, {host}" if host else component,
        str_of(obj.get("message")).strip(),
        first_seen,
        count,
        name_of(obj),
    ]


class EventStrategy(Strategy):
    """Events, through either API (see the module docstring)."""

    name_rule: NameRule = "path-segment"
    table = Printer(_event_columns, _event_cells)

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return validate_event_create(rt, obj) or super().validate(rt, obj)

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        return super().validate_update(rt, old, new) + validate_event_update(rt, old, new)

    def converts(self, rt: ResourceType) -> bool:
        return is_events_v1(rt)

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_storage(rt, obj)

    def to_view(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_view(rt, obj)

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        """The stored (core/v1) form's fields, whichever API is asked."""
        ref = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        out = {f"involvedObject.{k}": str_field(obj, "involvedObject", k) for k in ref}
        out["reason"] = str_field(obj, "reason")
        out["reportingComponent"] = str_field(obj, "reportingComponent")
        out["source"] = str_field(obj, "source", "component") or out["reportingComponent"]
        out["type"] = str_field(obj, "type")
        return out

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

    def field_selector(self, rt: ResourceType, selector: FieldSelector) -> FieldSelector:
        if is_events_v1(rt):
            return storage_selector(selector)
        return super().field_selector(rt, selector)
