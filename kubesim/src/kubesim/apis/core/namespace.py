"""Namespaces on the apiserver side: the NamespaceLifecycle admission and ``/finalize``.

What the apiserver does by itself while a namespace is deleted (18c, 19a); emptying it is
the namespace controller's part (:mod:`._namespace_controller`):

* :func:`check_creatable`: content may only be created in a namespace that exists (else
  404 ``namespaces "x" not found``) and is not being deleted (else the recorded 403
  ``<plural> "<name>" is forbidden: unable to create new content in namespace <ns> because
  it is being terminated`` with cause ``NamespaceTerminating``). Updates and deletes of
  existing content are not checked, so they keep working in a Terminating namespace.
* :func:`finalize`: ``PUT /api/v1/namespaces/<name>/finalize`` replaces metadata and
  ``spec.finalizers`` from the body (the status is kept); when that leaves a namespace
  with a deletionTimestamp without any finalizer (``spec`` or ``metadata``), the
  namespace is deleted at once and the answer carries the resourceVersion it had.
* :func:`spec_finalizers`: a plain update keeps the stored ``spec.finalizers``: only
  ``/finalize`` changes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubesim.errors import KubeSimApiError, status_body
from kubesim.machinery.validation import Cause, invalid, is_qualified_name

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType
    from kubesim.registry.store import Api
    from kubesim.storage.mvcc import Stored

__all__ = ["KUBERNETES_FINALIZER", "check_creatable", "finalize", "spec_finalizers"]

#: The namespace controller's entry in ``spec.finalizers``.
KUBERNETES_FINALIZER = "kubernetes"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def check_creatable(api: Api, rt: ResourceType, namespace: str | None, name: str) -> None:
    """The NamespaceLifecycle admission for a create of ``rt`` in ``namespace`` (see the
    module docstring); nothing to check for cluster-scoped kinds."""
    if not rt.namespaced:
        return
    ns_rt = api.registry.lookup("", "v1", "namespaces")
    assert ns_rt is not None
    ns = api.store(ns_rt).get(namespace or "")
    if ns is None:
        raise KubeSimApiError.not_found("namespaces", "", namespace or "")
    if b'"deletionTimestamp"' not in ns.raw:
        return
    message = (
        f'{_qualified(rt.plural, rt.group)} "{name}" is forbidden: unable to create new content '
        f"in namespace {namespace} because it is being terminated"
    )
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["causes"] = [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    raise KubeSimApiError(403, status_body(403, message, "Forbidden", details))


def spec_finalizers(old: Mapping[str, Any], new: dict[str, Any]) -> None:
    """The namespace update strategy: ``new`` keeps ``old``'s ``spec.finalizers``."""
    old_spec = _dict(old.get("spec"))
    spec = dict(_dict(new.get("spec")))
    if "finalizers" in old_spec:
        spec["finalizers"] = old_spec["finalizers"]
    else:
        spec.pop("finalizers", None)
    new["spec"] = spec


def _undecodable(value: object, field: str, go_type: str) -> KubeSimApiError:
    json_type = {str: "string", list: "array", dict: "object", bool: "bool"}.get(
        type(value), "number"
    )
    return KubeSimApiError.bad_request(
        'Namespace in version "v1" cannot be handled as a Namespace: json: cannot unmarshal '
        f"{json_type} into Go struct field {field} of type {go_type}"
    )


def _validate_finalizers(finalizers: object) -> list[Cause]:
    if not isinstance(finalizers, list):
        return []
    errs: list[Cause] = []
    for i, f in enumerate(finalizers):
        errs += [invalid(f"spec.finalizers[{i}]", f, m) for m in is_qualified_name(str(f))]
    return errs


def finalize(
    api: Api, rt: ResourceType, name: str, body: Mapping[str, Any], *, manager: str
) -> Stored:
    """``PUT namespaces/<name>/finalize`` (see the module docstring)."""
    cur = api.get(rt, None, name)
    spec = body.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise _undecodable(spec, "Namespace.spec", "v1.NamespaceSpec")
    finalizers = (spec or {}).get("finalizers")
    if finalizers is not None and not isinstance(finalizers, list):
        raise _undecodable(finalizers, "NamespaceSpec.spec.finalizers", "[]v1.FinalizerName")
    for f in finalizers or []:
        if not isinstance(f, str):
            raise _undecodable(f, "NamespaceSpec.spec.finalizers", "v1.FinalizerName")
    errs = _validate_finalizers(finalizers)
    if errs:
        raise api._invalid(rt, name, errs)
    new = dict(body)
    new["spec"] = {k: v for k, v in _dict(spec).items() if k != "finalizers" or v}
    old = cur.decode()
    if "status" in old:
        new["status"] = old["status"]
    return api.update(rt, None, name, new, subresource="finalize", manager=manager)
