"""What the generic store does to any object: copy, compare, order, encode, type.

* :func:`clone` is a deep copy of a JSON document; :func:`same` says whether an update
  changes nothing that matters (the resourceVersion and managedFields aside);
* :func:`reorder` puts a built-in object's keys in the order its Go type marshals them
  (custom resources are sorted when encoded);
* :func:`spec_changed` is the rule that bumps ``metadata.generation``;
* :func:`view_json` is a stored object as a type serves it, as JSON (the stored bytes
  themselves when the kind's strategy converts nothing);
* :func:`type_for` is the structural type of a type's objects, for the field manager;
* :func:`invalid_object` is the 422 of an object's validation causes;
* :func:`parse_rv` reads a resourceVersion parameter as the apiserver does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubesim.encoding import deepjson
from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.schemas import Type, builtin_type, crd_type
from kubesim.machinery.validation import Cause, invalid_message
from kubesim.registry.resource import ResourceType
from kubesim.storage.mvcc import Mvcc, Stored

__all__ = [
    "STATUS_SUBRESOURCES",
    "clone",
    "invalid_object",
    "managed_fields_subresource",
    "parse_rv",
    "put_managed",
    "reorder",
    "same",
    "spec_changed",
    "type_for",
    "view_json",
]

#: Subresources that write the status and keep everything else as stored.
STATUS_SUBRESOURCES = frozenset({"status", "approval"})


def managed_fields_subresource(subresource: str | None) -> str | None:
    """The ``subresource`` a managedFields entry of this write names (None: the object;
    ``/finalize`` writes count as writes of the object)."""
    return None if subresource == "finalize" else subresource


def parse_rv(value: str) -> int:
    """A ``resourceVersion`` parameter, or the 500 the apiserver answers for one that is
    not an unsigned integer."""
    try:
        rv = int(value)
        if rv < 0 or not value.isdigit():
            raise ValueError
    except ValueError:
        raise KubeSimApiError.internal(
            f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing '
            f'"{value}": invalid syntax'
        ) from None
    return rv


def clone(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON document (an order of magnitude faster than copy.deepcopy)."""
    out: dict[str, Any] = deepjson.loads(deepjson.dumps(value))
    return out


_IGNORED_IN_COMPARE = ("resourceVersion", "managedFields")


def put_managed(meta: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Set ``metadata.managedFields`` to ``entries`` (none: the field goes)."""
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether an update changes nothing that matters (metadata RV and managedFields aside)."""
    if old.keys() != new.keys():
        return False
    for k, v in old.items():
        if k == "metadata":
            om = {a: b for a, b in v.items() if a not in _IGNORED_IN_COMPARE}
            nm = {a: b for a, b in new[k].items() if a not in _IGNORED_IN_COMPARE}
            if om != nm:
                return False
        elif new[k] != v:
            return False
    return True


_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def reorder(obj: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """Key order as the apiserver encodes typed objects: kind, apiVersion, metadata (fields
    in Go struct order), spec, status, the rest. Custom resources are sorted on encoding."""
    if rt.custom:
        return obj
    meta = obj.get("metadata", {})
    ordered_meta = {k: meta[k] for k in _META_ORDER if k in meta}
    ordered_meta.update({k: v for k, v in meta.items() if k not in ordered_meta})
    out: dict[str, Any] = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": ordered_meta}
    for k, v in obj.items():
        if k not in out:
            out[k] = v
    return out


def spec_changed(rt: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when anything but metadata (and status, when ``rt`` has a status subresource)
    differs: the rule that bumps ``metadata.generation`` (for a kind whose strategy keeps
    it). kind/apiVersion are ignored."""
    skip = {"metadata", "kind", "apiVersion"} | ({"status"} if rt.has_status else set())
    return {k: v for k, v in old.items() if k not in skip} != {
        k: v for k, v in new.items() if k not in skip
    }


def view_json(rt: ResourceType, stored: Stored, *, typed: bool) -> bytes:
    """``stored`` as ``rt`` serves it, as JSON; ``typed`` puts kind and apiVersion first (a
    single object or a watch event; list items have neither). Custom resources are stored
    with theirs."""
    if rt.strategy.converts(rt):
        head = {"kind": rt.kind, "apiVersion": rt.api_version} if typed else {}
        return orjson.dumps(head | rt.strategy.to_view(rt, stored.decode()))
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


_CRD_STORE = "customresourcedefinitions.apiextensions.k8s.io"
#: Types by (CRD stored bytes, version): by content, as two servers in one process may
#: hold a CRD of the same name at the same revision with different schemas.
_crd_types: dict[tuple[bytes, str], Type] = {}


def type_for(rt: ResourceType, mvcc: Mvcc) -> Type:
    """The structural type of ``rt``'s objects: a built-in kind's from the recorded OpenAPI
    v2 document, a custom resource's from its CRD as stored now (cached per CRD content)."""
    if not rt.custom:
        return builtin_type(rt.group, rt.version, rt.kind)
    ts = mvcc.types.get(_CRD_STORE)
    crd = ts.get(f"{rt.plural}.{rt.group}") if ts is not None else None
    if crd is None:
        return crd_type(None)
    key = (crd.raw, rt.version)
    t = _crd_types.get(key)
    if t is None:
        schema: Mapping[str, Any] | None = None
        for v in (crd.decode().get("spec") or {}).get("versions") or ():
            if isinstance(v, dict) and v.get("name") == rt.version:
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if len(_crd_types) > 256:
            _crd_types.clear()
        t = _crd_types[key] = crd_type(schema if isinstance(schema, Mapping) else None)
    return t


def invalid_object(rt: ResourceType, name: str, causes: list[Cause]) -> KubeSimApiError:
    """The 422 of ``causes`` for the object ``name`` of ``rt``."""
    return KubeSimApiError.invalid(
        rt.kind,
        rt.stored_group,  # qualified by the storage's resource, as the registry does
        name,
        invalid_message(rt.kind, name, causes, rt.stored_group),
        [c.to_dict() for c in causes],
    )
