"""Owner references built from the owner object, as the garbage collector needs them.

:func:`owner_reference` makes the ``metadata.ownerReferences`` entry for an owner from the
owner itself (its apiVersion, kind, name and uid), never from a hand-written kind string;
:func:`set_owner` puts it on an object body, replacing any other controller reference
(an object has at most one controller, as controller-runtime's ``SetControllerReference``
enforces) and, with it, the owner's shard bucket label (``shard.aioinformer.dev/bucket``:
children live in their owner's replica when caches are sharded; see
:mod:`aioinformer._core.shardbuckets`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject
from aioinformer._core.shardbuckets import SHARD_LABEL, bucket_label, owner_bucket

__all__ = ["owner_reference", "set_owner"]


def owner_reference(
    owner: KubeObject | Mapping[str, Any],
    *,
    controller: bool = True,
    block_owner_deletion: bool = True,
) -> dict[str, Any]:
    """The ownerReference to ``owner``, as a ``metadata.ownerReferences`` entry.

    Args:
        owner: a cached object or an object body as the server answered it: it must carry
            apiVersion, kind, name and uid.
        controller: the owner is the object's managing controller (events on the object
            reconcile the owner).
        block_owner_deletion: a foreground deletion of the owner waits for this object to
            be gone first.

    Returns:
        ``{"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}``.

    Raises:
        ConfigError: ``owner`` lacks one of apiVersion, kind, name or uid (e.g. a body
            that was never sent to the server).
    """
    if isinstance(owner, KubeObject):
        api_version, kind, name, uid = owner.api_version, owner.kind, owner.name, owner.uid
    else:
        meta = owner.get("metadata") or {}
        api_version, kind = owner.get("apiVersion") or "", owner.get("kind") or ""
        name, uid = meta.get("name") or "", meta.get("uid") or ""
    missing = [f for f, v in (("apiVersion", api_version), ("kind", kind), ("name", name),
                              ("uid", uid)) if not v]  # fmt: skip
    if missing:
        raise ConfigError(
            f"an owner needs {', '.join(missing)} (use the object as the server returned it)"
        )
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def set_owner(
    body: MutableMapping[str, Any],
    owner: KubeObject | Mapping[str, Any],
    *,
    controller: bool = True,
    block_owner_deletion: bool = True,
) -> MutableMapping[str, Any]:
    """Add ``owner``'s reference to ``body`` (in place; returned too).

    The same owner (by uid) is replaced; with ``controller`` any other controller reference
    is dropped (an object has one controller at most) and ``body`` gets the owner's bucket
    label ``shard.aioinformer.dev/bucket`` (:func:`~aioinformer.owner_bucket`: the owner's
    own label, else its uid's bucket if it is a root); an owner that is an unlabeled child
    gives none, and a label ``body`` had is removed then (the
    :class:`~aioinformer.ShardLabeler` places such children).

    Args:
        body: the dependent's body, changed in place.
        owner: the owner, as for :func:`owner_reference`.
        controller: as for :func:`owner_reference`.
        block_owner_deletion: as for :func:`owner_reference`.

    Returns:
        ``body``.

    Raises:
        ConfigError: ``owner`` lacks an identity field, or it is namespaced and ``body``
            is in another namespace (an owner is in the dependent's namespace or
            cluster-scoped).
    """
    ref = owner_reference(owner, controller=controller, block_owner_deletion=block_owner_deletion)
    meta = body.setdefault("metadata", {})
    owner_ns = owner.namespace if isinstance(owner, KubeObject) else (
        (owner.get("metadata") or {}).get("namespace") or ""
    )  # fmt: skip
    if owner_ns and meta.get("namespace") and meta["namespace"] != owner_ns:
        raise ConfigError(
            f"{ref['kind']} {owner_ns}/{ref['name']} cannot own an object in namespace "
            f"{meta['namespace']!r}: owner and dependent share a namespace"
        )
    refs = [
        r
        for r in meta.get("ownerReferences") or ()
        if r.get("uid") != ref["uid"] and not (controller and r.get("controller"))
    ]
    meta["ownerReferences"] = [*refs, ref]
    if controller:
        bucket = owner_bucket(owner)
        labels = meta.get("labels") or {}
        if bucket is not None:
            meta["labels"] = {**labels, SHARD_LABEL: bucket_label(bucket)}
        elif SHARD_LABEL in labels:
            meta["labels"] = {k: v for k, v in labels.items() if k != SHARD_LABEL}
    return body
