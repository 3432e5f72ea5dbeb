"""Events served through two APIs: core/v1 and events.k8s.io/v1, one storage.

kube-apiserver v1.28 stores Events once (as core Events) and serves them through both
``/api/v1/.../events`` and ``/apis/events.k8s.io/v1/.../events`` (tests/kubesim/conformance/26a):
an Event written through one API is read, listed and watched through the other with its
fields mapped. KubeSim stores the core/v1 form; this module converts between the forms and
maps the field selectors.

* :func:`to_storage` turns a body in a type's own form into the stored (core/v1) form;
  :func:`to_view` turns a stored object into the form of the type it is read through.
  Both give the JSON the Go types marshal to: fields in struct order, ``omitempty`` fields
  left out when zero, the others always present (core/v1: ``eventTime: null``,
  ``reportingComponent: ""``, ``reportingInstance: ""``, ``source: {}``, the two
  timestamps ``null``; events.k8s.io/v1: ``eventTime: null``, ``deprecatedSource: {}`` and
  the two deprecated timestamps ``null``). Fields the Go types do not have are dropped.
* :func:`storage_selector` checks an events.k8s.io/v1 field selector against the labels it
  accepts and rewrites it into the stored form's labels (``regarding.uid`` ->
  ``involvedObject.uid``, ``reportingController`` -> ``reportingComponent``);
  events.k8s.io/v1 rejects the core names with ``field label not supported``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.errors import SelectorError
from kubesim.machinery.fields import FieldSelector
from kubesim.registry.resource import ResourceType

__all__ = [
    "EVENTS_GROUP",
    "V1_TO_CORE",
    "is_events_v1",
    "storage_selector",
    "to_storage",
    "to_view",
]

EVENTS_GROUP: Final = "events.k8s.io"

#: events.k8s.io/v1 field -> core/v1 field (``Convert_v1_Event_To_core_Event``)
V1_TO_CORE: Final = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_CORE_TO_V1: Final = {core: v1 for v1, core in V1_TO_CORE.items()}

# (field, shape) in Go struct order. Shapes: "obj" a struct (always, {} when unset), "time"
# a Time/MicroTime (always, null when zero), "str" a string without omitempty (always),
# "str?"/"int?"/"ptr?" omitted when zero or nil.
_CORE_SHAPE: Final = (
    ("involvedObject", "obj"),
    ("reason", "str?"),
    ("message", "str?"),
    ("source", "obj"),
    ("firstTimestamp", "time"),
    ("lastTimestamp", "time"),
    ("count", "int?"),
    ("type", "str?"),
    ("eventTime", "time"),
    ("series", "ptr?"),
    ("action", "str?"),
    ("related", "ptr?"),
    ("reportingComponent", "str"),
    ("reportingInstance", "str"),
)
_V1_SHAPE: Final = (
    ("eventTime", "time"),
    ("series", "ptr?"),
    ("reportingController", "str?"),
    ("reportingInstance", "str?"),
    ("action", "str?"),
    ("reason", "str?"),
    ("regarding", "obj"),
    ("related", "ptr?"),
    ("note", "str?"),
    ("type", "str?"),
    ("deprecatedSource", "obj"),
    ("deprecatedFirstTimestamp", "time"),
    ("deprecatedLastTimestamp", "time"),
    ("deprecatedCount", "int?"),
)
_HEAD: Final = ("kind", "apiVersion", "metadata")

#: events.k8s.io/v1 field label -> the stored form's (``AddFieldLabelConversionsForEvent``)
_V1_FIELD_LABELS: Final = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    **{f"regarding.{k}": f"involvedObject.{k}" for k in (
        "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"
    )},
    "reason": "reason",
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
}  # fmt: skip


def is_events_v1(rt: ResourceType) -> bool:
    """Whether ``rt`` (a type serving Events) is events.k8s.io's (served from the core
    Events' storage)."""
    return rt.group == EVENTS_GROUP


def _series(value: Any, core: bool) -> Any:
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    if value.get("count") or not core:  # core/v1 EventSeries.count is omitempty
        out["count"] = value.get("count") or 0
    out["lastObservedTime"] = value.get("lastObservedTime")
    return out


def _shaped(obj: Mapping[str, Any], shape: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    core = shape is _CORE_SHAPE
    out = {k: obj[k] for k in _HEAD if k in obj}
    for name, kind in shape:
        v = obj.get(name)
        if kind == "obj":
            out[name] = dict(v) if isinstance(v, Mapping) else {}
        elif kind == "time":
            out[name] = v or None
        elif kind == "str":
            out[name] = v or ""
        elif v:
            out[name] = _series(v, core) if name == "series" else v
    return out


def _renamed(obj: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    return {names.get(k, k): v for k, v in obj.items()}


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """An Event (in ``rt``'s form) in the stored form: its core/v1 JSON. Idempotent: a
    stored form stays as it is."""
    if is_events_v1(rt):
        obj = _renamed(obj, V1_TO_CORE)
    out = _shaped(obj, _CORE_SHAPE)
    if "apiVersion" in out:
        out["apiVersion"] = "v1"
    return out


def to_view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored Event (decoded) as ``rt`` serves it: converted for events.k8s.io/v1, the
    same dict for core/v1."""
    if not is_events_v1(rt):
        return obj
    out = _shaped(_renamed(obj, _CORE_TO_V1), _V1_SHAPE)
    if "apiVersion" in out:
        out["apiVersion"] = rt.api_version
    return out


def storage_selector(selector: FieldSelector) -> FieldSelector:
    """An events.k8s.io/v1 field ``selector`` in the stored form's field labels;
    :class:`~kubesim.errors.SelectorError` for a label events.k8s.io/v1 does not take."""
    terms = []
    for label, op, value in selector.terms:
        mapped = _V1_FIELD_LABELS.get(label)
        if mapped is None:
            raise SelectorError(f"field label not supported: {label}")
        terms.append((mapped, op, value))
    return FieldSelector(terms)
