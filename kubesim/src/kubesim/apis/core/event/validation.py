"""Event validation as kube-apiserver v1.28 runs it (``ValidateEventCreate`` and
``ValidateEventUpdate`` in pkg/apis/core/validation/events.go), for both APIs.

Both check the stored (core) form, so field paths are core/v1's (``message``, ``source``,
``count``, ``involvedObject``, ``reportingController``) whichever API the request came
through; the request's API picks the rules:

* every Event passes the legacy rules: one without ``eventTime`` must have
  ``involvedObject.namespace`` equal to its namespace (or both empty / ``default``); one with
  ``eventTime`` needs ``reportingController`` (a qualified name), ``reportingInstance``,
  ``action`` and ``reason`` (at most 128 bytes each), a ``message`` of at most 1024 bytes,
  and an ``involvedObject.namespace`` unless it lives in ``default`` or ``kube-system``;
* events.k8s.io/v1 adds: a DNS-subdomain name, ``eventTime`` required, ``type`` Normal or
  Warning, the deprecated fields unset on create, a ``series`` with ``count`` >= 2 and a
  ``lastObservedTime``, and on update everything but the series and the metadata immutable.

The errors are the Event's own and come before the generic ObjectMeta checks, which run only
when these pass (``rest.BeforeCreate``): callers return them alone when there are any.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.event.conversion import is_events_v1, to_storage
from kubesim.encoding.gofmt import go_quote
from kubesim.encoding.gotime import parse_rfc3339
from kubesim.errors import GoTimeError
from kubesim.machinery.validation import (
    Cause,
    GoRepr,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    required,
    validate_name,
)
from kubesim.registry.resource import ResourceType

__all__ = ["validate_event_create", "validate_event_update"]

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024

_REF_FIELDS = (
    ("Kind", "kind"),
    ("Namespace", "namespace"),
    ("Name", "name"),
    ("UID", "uid"),
    ("APIVersion", "apiVersion"),
    ("ResourceVersion", "resourceVersion"),
    ("FieldPath", "fieldPath"),
)


def _d(v: object) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _s(v: object) -> str:
    return v if isinstance(v, str) else ""


def _nbytes(v: object) -> int:
    return len(_s(v).encode())


def _too_long(field: str, limit: int) -> Cause:
    return invalid(field, "", f"can have at most {limit} characters")


def _legacy(ev: Mapping[str, Any]) -> list[Cause]:
    """``legacyValidateEvent``."""
    errs: list[Cause] = []
    ns = _s(_d(ev.get("metadata")).get("namespace"))
    ref_ns = _s(_d(ev.get("involvedObject")).get("namespace"))
    mismatch = invalid("involvedObject.namespace", ref_ns, "does not match event.namespace")
    if not ev.get("eventTime"):
        if (not ref_ns and ns not in ("", "default")) or (ref_ns and ns != ref_ns):
            errs.append(mismatch)
    else:
        if not ref_ns and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = _s(ev.get("reportingComponent"))
        if not controller:
            errs.append(required("reportingController"))
        errs += [
            invalid("reportingController", controller, m) for m in is_qualified_name(controller)
        ]
        for field, key, limit in (
            ("reportingInstance", "reportingInstance", REPORTING_INSTANCE_LIMIT),
            ("action", "action", ACTION_LIMIT),
            ("reason", "reason", REASON_LIMIT),
        ):
            if not _s(ev.get(key)):
                errs.append(required(field))
            if _nbytes(ev.get(key)) > limit:
                errs.append(_too_long(field, limit))
        if _nbytes(ev.get("message")) > NOTE_LIMIT:
            errs.append(_too_long("message", NOTE_LIMIT))
    errs += [invalid("namespace", ns, m) for m in is_dns1123_subdomain(ns)]
    return errs


def _series(ev: Mapping[str, Any]) -> list[Cause]:
    """``validateV1EventSeries``."""
    series = ev.get("series")
    if not isinstance(series, Mapping):
        return []
    errs: list[Cause] = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        errs.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(required("series.lastObservedTime"))
    return errs


def _strict_create(ev: Mapping[str, Any]) -> list[Cause]:
    """The events.k8s.io/v1 rules of ``ValidateEventCreate``."""
    name = _s(_d(ev.get("metadata")).get("name"))
    errs = validate_name(name, "subdomain") if name else []
    errs += _series(ev)
    if not ev.get("eventTime"):
        errs.append(required("eventTime"))
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {_s(ev.get('type'))}"))
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if ev.get(field):
            errs.append(invalid(field, "", "needs to be unset"))
    source = _d(ev.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


def _go_time(value: object, micro: bool) -> str:
    """``metav1.Time.String()`` / ``MicroTime.String()`` (Go's ``Time.String``)."""
    t = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
    if isinstance(value, str) and value:
        try:
            t = parse_rfc3339(value).astimezone(datetime.UTC)
        except GoTimeError:
            pass
    frac = f".{t.microsecond:06d}".rstrip("0") if micro and t.microsecond else ""
    return t.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0") + frac + " +0000 UTC"


def _go_ref(value: object) -> str:
    ref = _d(value)
    inner = ", ".join(f"{go}:{go_quote(_s(ref.get(js)))}" for go, js in _REF_FIELDS)
    return "core.ObjectReference{" + inner + "}"


def _immutable(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """The ``ValidateImmutableField`` checks of ``ValidateEventUpdate``, in its order."""
    errs: list[Cause] = []

    def check(field: str, key: str, shown: object) -> None:
        if new.get(key) != old.get(key):
            errs.append(invalid(field, shown, "field is immutable"))

    src = _d(new.get("source"))
    related = new.get("related")
    check("involvedObject", "involvedObject", GoRepr(_go_ref(new.get("involvedObject"))))
    check("reason", "reason", _s(new.get("reason")))
    check("message", "message", _s(new.get("message")))
    source = f"core.EventSource{{Component:{go_quote(_s(src.get('component')))}, "
    source += f"Host:{go_quote(_s(src.get('host')))}}}"
    check("source", "source", GoRepr(source))
    check("firstTimestamp", "firstTimestamp", GoRepr(_go_time(new.get("firstTimestamp"), False)))
    check("lastTimestamp", "lastTimestamp", GoRepr(_go_time(new.get("lastTimestamp"), False)))
    check("count", "count", GoRepr(str(new.get("count") or 0)))
    check("reason", "reason", _s(new.get("reason")))
    check("type", "type", _s(new.get("type")))
    check("eventTime", "eventTime", GoRepr(_go_time(new.get("eventTime"), True)))
    check("action", "action", _s(new.get("action")))
    check("related", "related", GoRepr(_go_ref(related) if related else "null"))
    check("reportingController", "reportingComponent", _s(new.get("reportingComponent")))
    check("reportingInstance", "reportingInstance", _s(new.get("reportingInstance")))
    return errs


def validate_event_create(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """The Event causes of creating ``obj`` (in ``rt``'s form) through ``rt``; empty for a
    valid Event."""
    ev = to_storage(rt, dict(obj))
    errs = _legacy(ev)
    return errs + _strict_create(ev) if is_events_v1(rt) else errs


def validate_event_update(
    rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
) -> list[Cause]:
    """The Event causes of replacing ``old`` with ``new`` (both in ``rt``'s form)."""
    ev, before = to_storage(rt, dict(new)), to_storage(rt, dict(old))
    errs = _legacy(ev)
    if not is_events_v1(rt):
        return errs
    if ev.get("series") != before.get("series"):
        errs += _series(ev)
    return errs + _immutable(ev, before)
