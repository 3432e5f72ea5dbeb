"""An object in its stored form: the bytes kept in storage and the :class:`Stored` record that
carries them with what lists and watches filter by.

Built-in kinds are stored as compact JSON without ``kind``/``apiVersion`` (which typed lists
omit), custom resources with sorted keys (as unstructured encodes); the record's labels and
selectable fields are interned and the empty fields left out (a missing field reads as ""),
about 1 KB less per pod. An object over the request size limit is refused
(:func:`~kubesim.storage.request_size.check_stored_size`).
"""

from __future__ import annotations

from sys import intern
from typing import Any

from kubesim.encoding import deepjson
from kubesim.registry.resource import ResourceType
from kubesim.storage.mvcc import Stored, exact_bytes
from kubesim.storage.request_size import check_stored_size

__all__ = ["encode", "etcd_key", "storage_key", "to_stored"]


def storage_key(rt: ResourceType, namespace: str | None, name: str) -> str:
    """The storage key of an object: ``namespace/name``, or ``name`` (cluster-scoped)."""
    return f"{namespace}/{name}" if rt.namespaced else name


#: The resources kube-apiserver v1.28 stores under a prefix other than their plural
#: (``SpecialDefaultResourcePrefixes``, pkg/kubeapiserver/default_storage_factory_builder.go).
_ETCD_PREFIXES = {
    ("", "replicationcontrollers"): "controllers",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("extensions", "ingresses"): "ingress",
    ("networking.k8s.io", "ingresses"): "ingress",
}
#: The groups whose servers (apiextensions, the aggregator) prefix keys with the group.
_GROUP_PREFIXED = ("apiextensions.k8s.io", "apiregistration.k8s.io")


def etcd_key(rt: ResourceType, namespace: str | None, name: str) -> str:
    """The etcd key kube-apiserver v1.28 keeps the object under (``/registry/pods/ns/x``,
    ``/registry/minions/n``, ``/registry/<group>/<plural>/ns/x`` for a custom resource):
    error texts that come from its storage name it."""
    group = rt.stored_group
    prefix = _ETCD_PREFIXES.get((group, rt.plural), rt.plural)
    if rt.custom or group in _GROUP_PREFIXED:
        prefix = f"{group}/{rt.plural}"
    return f"/registry/{prefix}/{storage_key(rt, namespace, name)}"


def encode(rt: ResourceType, obj: dict[str, Any]) -> bytes:
    """The stored bytes of ``obj``, already in the stored form (its ``kind`` and
    ``apiVersion`` are removed from it for a built-in kind)."""
    if rt.custom:
        raw = deepjson.dumps(obj, sort_keys=True)
    else:
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        raw = deepjson.dumps(obj)
    return exact_bytes(raw)


def to_stored(rt: ResourceType, obj: dict[str, Any], rv: int) -> Stored:
    """``obj`` (in ``rt``'s form or already in the stored form) encoded at revision ``rv``
    (0: without a resourceVersion, a dry-run create); nothing is committed."""
    obj = rt.strategy.to_storage(rt, obj)
    meta = obj["metadata"]
    if rv:
        meta["resourceVersion"] = str(rv)
    else:
        meta.pop("resourceVersion", None)
    ns = meta.get("namespace", "") if rt.namespaced else ""
    labels = {intern(k): intern(v) for k, v in (meta.get("labels") or {}).items()}
    fields = {k: intern(v) for k, v in rt.strategy.selectable_fields(rt, obj).items() if v}
    raw = encode(rt, obj)
    key = storage_key(rt, ns, meta["name"])
    check_stored_size(raw, key)
    return Stored(key, ns, rv, raw, meta.get("uid", ""), labels, fields)
