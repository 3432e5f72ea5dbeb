"""Per-kind rules of the write path: what the registry strategies' ``PrepareForCreate``/
``PrepareForUpdate`` and the generic store's ``ShouldDeleteDuringUpdate`` decide.

* :func:`prepare_create` allocates what the registry allocates on create: a Service's
  addresses and node ports (:mod:`._service_ips`), a Job's selector from its uid, a CSR's
  requester identity (:mod:`._csr`), the empty status of flowcontrol objects, an
  APIService's availability (:mod:`._apiservices`).
* :func:`prepare_update` keeps, on a write of the main resource, what only another path may
  change or what was allocated: a Namespace's ``spec.finalizers`` (only ``/finalize``
  changes them), a Service's addresses and node ports, a CSR's spec and status.
* :func:`prepare_status` does the same for a write of a status-like subresource
  (:data:`STATUS_SUBRESOURCES`: ``status``, a CSR's ``approval``).
* The causes of a 422 these return include the kind's own validation where
  :mod:`._validation` has none (HPAs, CSRs, flowcontrol objects, APIServices).
* :func:`should_delete_during_update`: an update removes the object when the stored object
  is being deleted (a deletionTimestamp with no grace period running) and the new state
  has no finalizer left; a Namespace also needs an empty ``spec.finalizers``. So releasing
  the last finalizer deletes the object, while a pod in its grace period, or a Terminating
  namespace the controller has not finalized, stays whatever is written to it.
* :func:`managed_fields_subresource`: the subresource a write is recorded under in
  managedFields (``/finalize`` writes count as writes of the namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import is_hpa
from kubesim.apis.autoscaling.horizontalpodautoscaler.validation import validate_hpa
from kubesim.apis.batch.job import generate_job_selector
from kubesim.apis.certificates.certificatesigningrequest.strategy import (
    is_csr,
    prepare_csr_create,
    prepare_csr_update,
    validate_csr,
)
from kubesim.apis.core.namespace import spec_finalizers
from kubesim.apis.core.service.ips import allocate, keep_allocated
from kubesim.apis.flowcontrol.bootstrap import is_flowcontrol, validate_flowcontrol
from kubesim.controllers.apiservices import (
    default_apiservice,
    is_apiservice,
    validate_apiservice,
)
from kubesim.machinery.validation import Cause

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType

__all__ = [
    "STATUS_SUBRESOURCES",
    "managed_fields_subresource",
    "prepare_create",
    "prepare_status",
    "prepare_update",
    "should_delete_during_update",
]

#: Subresources that write the status and keep everything else as stored.
STATUS_SUBRESOURCES = frozenset({"status", "approval"})


def _is_namespace(rt: ResourceType) -> bool:
    return rt.group == "" and rt.plural == "namespaces"


def _is_service(rt: ResourceType) -> bool:
    return rt.group == "" and rt.plural == "services"


def prepare_create(
    rt: ResourceType, obj: dict[str, Any], stored: Callable[[], Iterable[Mapping[str, Any]]]
) -> list[Cause]:
    """Allocate for the new ``obj`` in place; ``stored`` gives the type's stored objects.
    Returns the causes of a 422 (nothing is allocated then)."""
    if _is_service(rt):
        return allocate(obj, stored())
    if rt.group == "batch" and rt.plural == "jobs":
        generate_job_selector(obj)
    if is_csr(rt):
        prepare_csr_create(obj)
    if is_flowcontrol(rt):
        obj["status"] = {}
    if is_apiservice(rt):
        default_apiservice(obj)
    return _kind_causes(rt, obj)


def _kind_causes(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    if is_hpa(rt):
        return validate_hpa(rt, obj)
    if is_csr(rt):
        return validate_csr(obj)
    if is_flowcontrol(rt):
        return validate_flowcontrol(rt, obj)
    if is_apiservice(rt):
        return validate_apiservice(obj)
    return []


def prepare_update(
    rt: ResourceType, old: Mapping[str, Any], new: dict[str, Any], subresource: str | None
) -> list[Cause]:
    """Adjust ``new`` (a write of the main resource or a non-status subresource) in place;
    returns the causes of a 422."""
    if _is_namespace(rt) and subresource != "finalize":
        spec_finalizers(old, new)
    if _is_service(rt):
        return keep_allocated(old, new)
    if is_csr(rt):
        prepare_csr_update(old, new, None)
    return _kind_causes(rt, new)


def prepare_status(
    rt: ResourceType, old: Mapping[str, Any], new: dict[str, Any], subresource: str | None
) -> list[Cause]:
    """Adjust ``new`` (a write of ``subresource``, one of :data:`STATUS_SUBRESOURCES`, whose
    status is already merged into the stored object) in place; returns the causes of a 422."""
    if is_csr(rt):
        prepare_csr_update(old, new, subresource)
        return validate_csr(new)
    return []


def should_delete_during_update(
    rt: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]
) -> bool:
    """Whether writing ``new`` over ``old`` deletes the object (see the module docstring)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if new_meta.get("finalizers") or not old_meta.get("deletionTimestamp"):
        return False
    if old_meta.get("deletionGracePeriodSeconds"):
        return False
    return not (_is_namespace(rt) and (new.get("spec") or {}).get("finalizers"))


def managed_fields_subresource(subresource: str | None) -> str | None:
    """The ``subresource`` a managedFields entry of this write names (None: the object)."""
    return None if subresource == "finalize" else subresource
