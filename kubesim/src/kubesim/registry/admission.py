"""The NamespaceLifecycle admission: content is created only in a namespace that is there.

What the apiserver does by itself while a namespace is deleted (18c, 19a):
:func:`check_creatable` lets content be created only in a namespace that exists (else 404
``namespaces "x" not found``) and is not being deleted (else the recorded 403
``<plural> "<name>" is forbidden: unable to create new content in namespace <ns> because it
is being terminated`` with cause ``NamespaceTerminating``). Updates and deletes of existing
content are not checked, so they keep working in a Terminating namespace. The rest of a
namespace's deletion is the Namespace strategy's and the namespace controller's.
"""

from __future__ import annotations

from typing import Any

from kubesim.errors import KubeSimApiError, status_body
from kubesim.registry.resource import ResourceType
from kubesim.storage.mvcc import Mvcc

__all__ = ["NAMESPACES", "check_creatable"]

#: The storage of the Namespaces.
NAMESPACES = "namespaces"


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def check_creatable(mvcc: Mvcc, rt: ResourceType, namespace: str | None, name: str) -> None:
    """The NamespaceLifecycle admission for a create of ``rt`` in ``namespace`` (see the
    module docstring); nothing to check for cluster-scoped kinds."""
    if not rt.namespaced:
        return
    ns = mvcc.type_store(NAMESPACES).get(namespace or "")
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
