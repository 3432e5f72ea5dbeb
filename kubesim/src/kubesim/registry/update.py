"""An update as the generic store makes one (``BeforeUpdate``): what the client may not
change is kept, the kind's strategy prepares, defaults and validates, the generation moves
with the spec; and when an update deletes the object.

A write of the status subresource takes only the status from the client (and the kind's
status rules); any other write keeps the stored status (for kinds with one) and the
metadata an update cannot change (name, namespace, creationTimestamp, deletionTimestamp,
deletionGracePeriodSeconds, generation, managedFields: the field manager starts from the
ones the client sent). The uid is kept only where the client sent none: a patch that
changes it is 422 ``metadata.uid: ... field is immutable``. ObjectMeta's update rules are
checked twice, by the generic store (``validateCommonFields``) and by the kind, so each of
their causes is listed twice, as kube-apiserver lists them. (A PUT naming another uid is
refused before, by the store's uid precondition: :meth:`~kubesim.registry.store.Api.update`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.machinery.validation import Cause, invalid, validate_object_meta_update
from kubesim.registry.objects import STATUS_SUBRESOURCES, invalid_object, reorder, spec_changed
from kubesim.registry.resource import ResourceType

__all__ = ["deleted_by_update", "updated_object"]


def updated_object(
    rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
) -> tuple[dict[str, Any], Any]:
    """``new`` written over ``old`` (both in ``rt``'s form; ``old`` gets its ``kind`` and
    ``apiVersion`` set, nothing else) through ``subresource``: the object to store, in the
    order its Go type marshals it, without managedFields tracking yet, and the managedFields
    the client sent (None for a status write). The kind's refusals raise the 422."""
    strategy = rt.strategy
    old_meta = old["metadata"]
    name = old_meta["name"]
    requested: Any = None
    if subresource in STATUS_SUBRESOURCES:
        new_meta_sent = new.get("metadata")
        # everything but the status from the stored state: only the top level and the
        # metadata are changed below (``reorder`` makes both anew), so they are shared
        merged = dict(old)
        merged["metadata"] = dict(old_meta)
        if "status" in new:
            merged["status"] = new["status"]
        else:
            merged.pop("status", None)
        new = merged
        strategy.default_status(rt, new)
        causes = _status_uid_causes(rt, old_meta, new_meta_sent)
        if causes := causes + strategy.prepare_for_status_update(rt, old, new, subresource):
            raise invalid_object(rt, name, causes)
    else:
        new_meta = new["metadata"]
        if rt.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        # metadata the client cannot change through an update (managedFields it may
        # replace: the field manager starts from them)
        requested = new_meta.get("managedFields")
        new_meta["name"] = name
        if rt.namespaced:
            new_meta["namespace"] = old_meta.get("namespace")
        if not new_meta.get("uid"):
            new_meta["uid"] = old_meta.get("uid")
        for k in (
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
        ):
            if k in old_meta:
                new_meta[k] = old_meta[k]
            else:
                new_meta.pop(k, None)
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        causes = strategy.prepare_for_update(rt, old, new, subresource)
        strategy.default(rt, new, creating=False)
        # the generic store's own check of ObjectMeta, then the kind's (which checks it too)
        causes += validate_object_meta_update(old_meta, new_meta)
        causes += strategy.validate_update(rt, old, new)
        if causes:
            raise invalid_object(rt, name, causes)
    if causes := strategy.schema_causes(rt, new):
        raise invalid_object(rt, name, causes)
    old.setdefault("apiVersion", rt.api_version)
    old.setdefault("kind", rt.kind)
    new_meta = new["metadata"]
    new_meta["resourceVersion"] = old_meta.get("resourceVersion")
    if (
        subresource not in STATUS_SUBRESOURCES
        and strategy.uses_generation
        and spec_changed(rt, old, new)
    ):
        new_meta["generation"] = int(old_meta.get("generation", 1)) + 1
    # as the Go types marshal it
    new = reorder(strategy.to_view(rt, strategy.to_storage(rt, new)), rt)
    return new, requested


def _status_uid_causes(rt: ResourceType, old_meta: Mapping[str, Any], sent: Any) -> list[Cause]:
    """A status write keeps the stored metadata, but a built-in kind's refuses another uid
    first (the generic store's check and the kind's status validation: the cause twice); a
    custom resource's status strategy takes the stored metadata without a word."""
    uid = sent.get("uid") if isinstance(sent, dict) else None
    if rt.custom or not uid or uid == old_meta.get("uid"):
        return []
    cause = invalid("metadata.uid", uid, "field is immutable")
    return [cause, cause]


def deleted_by_update(rt: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The generic store's ``ShouldDeleteDuringUpdate``: writing ``new`` over ``old``
    deletes the object when it is being deleted (a deletionTimestamp with no grace
    period running) and ``new`` has no finalizer left (the kind's own included). So
    releasing the last finalizer deletes the object, while a pod in its grace period, or
    a Terminating namespace the controller has not finalized, stays."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if new_meta.get("finalizers") or not old_meta.get("deletionTimestamp"):
        return False
    if old_meta.get("deletionGracePeriodSeconds"):
        return False
    return not rt.strategy.pending_finalizers(new)
