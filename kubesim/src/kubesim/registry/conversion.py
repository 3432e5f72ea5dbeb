"""Types served from a storage in another form: which, and the conversion each way.

Three built-in types are stored in a form other than the one they are served in, as
kube-apiserver v1.28 stores them: events.k8s.io/v1 Events (stored as core/v1 Events,
:mod:`._events`) and autoscaling/v1 HorizontalPodAutoscalers (stored as autoscaling/v2,
:mod:`._hpa`), and flowcontrol's v1beta2 PriorityLevelConfigurations (stored as v1beta3,
:mod:`._flowcontrol`). Every other type is stored as served and passes through unchanged.

* :func:`to_storage` turns a body in a type's own form into the stored form, :func:`to_view`
  a stored object (decoded) into the form of the type it is read through; both return the
  same dict when there is nothing to convert.
* :func:`view_json` is a stored object as a type serves it, as JSON (the stored bytes
  themselves when nothing converts).
* :func:`converts` says whether a type's reads need :func:`to_view` at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from kubesim.apis.autoscaling.horizontalpodautoscaler import conversion as hpa
from kubesim.apis.core.event import conversion as events
from kubesim.apis.flowcontrol import bootstrap as flowcontrol

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType
    from kubesim.storage.mvcc import Stored

__all__ = ["converts", "to_storage", "to_view", "view_json"]


def converts(rt: ResourceType) -> bool:
    """Whether ``rt`` is served in a form other than its stored one."""
    return events.is_events_v1(rt) or hpa.is_hpa_v1(rt) or flowcontrol.is_v1beta2_plc(rt)


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (in ``rt``'s form) in the stored form; idempotent on a stored form."""
    if hpa.is_hpa(rt):
        return hpa.to_storage(rt, obj)
    if flowcontrol.is_flowcontrol(rt):
        return flowcontrol.to_storage(rt, obj)
    return events.to_storage(rt, obj)


def to_view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object (decoded) as ``rt`` serves it."""
    if hpa.is_hpa(rt):
        return hpa.to_view(rt, obj)
    if flowcontrol.is_flowcontrol(rt):
        return flowcontrol.to_view(rt, obj)
    return events.to_view(rt, obj)


def view_json(rt: ResourceType, stored: Stored, *, typed: bool) -> bytes:
    """``stored`` as ``rt`` serves it, as JSON; ``typed`` puts kind and apiVersion first (a
    single object or a watch event; list items have neither). Custom resources are stored
    with theirs."""
    if converts(rt):
        head = {"kind": rt.kind, "apiVersion": rt.api_version} if typed else {}
        return orjson.dumps(head | to_view(rt, stored.decode()))
    if not typed or rt.custom:
        return stored.raw
    return (
        b'{"kind":"'
        + rt.kind.encode()
        + b'","apiVersion":"'
        + rt.api_version.encode()
        + b'",'
        + stored.raw[1:]
    )
