"""Namespaces: their strategy and the ``finalize`` subresource.

What the apiserver does to a namespace by itself (18c, 19a); creating content in one is
the NamespaceLifecycle admission's (:mod:`kubesim.registry.admission`), emptying a deleted
one the namespace controller's (:mod:`kubesim.controllers.namespace`):

* defaults: the ``kubernetes.io/metadata.name`` label, and on create the ``kubernetes``
  finalizer in ``spec.finalizers`` and phase ``Active``; names are RFC 1123 labels;
* a plain update keeps the stored ``spec.finalizers``: only ``/finalize`` (:func:`finalize`)
  changes them;
* the first DELETE only marks the namespace (phase ``Terminating``); while
  ``spec.finalizers`` remain, neither a DELETE nor the release of its last
  ``metadata.finalizers`` deletes it;
* the table (Name, Status, Age), the ``status.phase`` field selector (no
  ``metadata.namespace``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.fieldpath import Path
from kubesim.machinery.documents import sub
from kubesim.machinery.fields import field_label_not_supported, str_field
from kubesim.machinery.printing import Column, simple_printer, status_of, str_of
from kubesim.machinery.validation import Cause, NameRule, invalid, is_qualified_name
from kubesim.registry.objects import invalid_object
from kubesim.registry.resource import ResourceType, Strategy
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Stored

__all__ = ["KUBERNETES_FINALIZER", "NamespaceStrategy", "finalize"]

#: The namespace controller's entry in ``spec.finalizers``.
KUBERNETES_FINALIZER = "kubernetes"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


class NamespaceStrategy(Strategy):
    """Namespaces (see the module docstring)."""

    name_rule: NameRule = "label"
    returns_deleted_object = True
    deleted_by_controller = True
    namespace_field_label = False
    untracked_on_create: tuple[Path, ...] = (("f:spec", "f:finalizers"),)
    table = simple_printer(
        [Column("Status", "string", "The status of the namespace")],
        lambda o: [str_of(status_of(o).get("phase"))],
    )

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        meta = sub(obj, "metadata")
        if meta.get("name"):
            sub(meta, "labels")["kubernetes.io/metadata.name"] = meta["name"]
        if creating:
            fins = _l(sub(obj, "spec").get("finalizers"))
            fins = fins if KUBERNETES_FINALIZER in fins else [*fins, KUBERNETES_FINALIZER]
            obj["spec"]["finalizers"] = fins
            obj["status"] = {"phase": "Active"}
        elif isinstance(obj.get("status"), dict):
            obj["status"].setdefault("phase", "Active")
        super().default(rt, obj, creating=creating)

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        """A write other than ``/finalize`` keeps ``old``'s ``spec.finalizers``."""
        if subresource != "finalize":
            old_spec = _dict(old.get("spec"))
            spec = dict(_dict(new.get("spec")))
            if "finalizers" in old_spec:
                spec["finalizers"] = old_spec["finalizers"]
            else:
                spec.pop("finalizers", None)
            new["spec"] = spec
        return []

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"status.phase": str_field(obj, "status", "phase")}

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

    def mark_terminating(self, obj: dict[str, Any]) -> None:
        status = obj.get("status")
        obj["status"] = {**(status if isinstance(status, dict) else {}), "phase": "Terminating"}

    def pending_finalizers(self, obj: Mapping[str, Any]) -> bool:
        return bool(_dict(obj.get("spec")).get("finalizers"))


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
    """``PUT /api/v1/namespaces/<name>/finalize``: replaces metadata and ``spec.finalizers``
    from ``body`` (the status is kept); when that leaves a namespace with a
    deletionTimestamp without any finalizer (``spec`` or ``metadata``), the namespace is
    deleted at once and the answer carries the resourceVersion it had."""
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
        raise invalid_object(rt, name, errs)
    new = dict(body)
    new["spec"] = {k: v for k, v in _dict(spec).items() if k != "finalizers" or v}
    old = cur.decode()
    if "status" in old:
        new["status"] = old["status"]
    return api.update(rt, None, name, new, subresource="finalize", manager=manager)
